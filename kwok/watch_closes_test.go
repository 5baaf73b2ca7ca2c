package kwok

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKwokPodWatchCloses(t *testing.T) {
	// Lines as kube-apiserver v1.36 logs them at -v=1: kwok's pod watch
	// twice, the scheduler's and a selector-less one (a controller's or
	// the harness's), kwok's node watch, and a line longer than the
	// reader's buffer that holds the marker past its first fragment.
	const kwok = `I1129 00:40:06.343080    4220 cache_watcher.go:203] Forcing pods watcher close due to unresponsiveness: key: "/pods/", labels: "", fields: "spec.nodeName!=". len(c.input) = 10, len(c.result) = 0, graceful = false`
	lines := []string{
		`W1129 00:38:26.122937    4220 options.go:369] No CIDR for service cluster IPs specified.`,
		kwok,
		`I1129 00:40:06.343088    4220 cache_watcher.go:203] Forcing pods watcher close due to unresponsiveness: key: "/pods/", labels: "", fields: "status.phase!=Failed,status.phase!=Succeeded". len(c.input) = 10, len(c.result) = 0, graceful = false`,
		`I1129 00:40:07.100000    4220 cache_watcher.go:203] Forcing pods watcher close due to unresponsiveness: key: "/pods/", labels: "", fields: "". len(c.input) = 100, len(c.result) = 100, graceful = false`,
		`I1129 00:38:51.039058    4220 cache_watcher.go:203] Forcing nodes watcher close due to unresponsiveness: key: "/minions/", labels: "", fields: "". len(c.input) = 100, len(c.result) = 100, graceful = false`,
		strings.Repeat("x", 70<<10) + kwok,
		kwok,
	}
	dir := t.TempDir()
	c := &Cluster{conf: ClusterConfig{Name: "c", Workdir: dir}}
	if n, err := c.KwokPodWatchCloses(); n != 0 || err != nil {
		t.Errorf("no log yet: got %d, %v; want 0, nil", n, err)
	}
	if err := os.MkdirAll(c.LogDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.LogDir(), "kube-apiserver.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := c.KwokPodWatchCloses(); n != 2 || err != nil {
		t.Errorf("got %d, %v; want 2 (kwok's pod watch only, the last line without its newline), nil", n, err)
	}
	// A kube-apiserver started again writes a new log; the old one's
	// closes still count.
	if err := os.Rename(path, filepath.Join(c.LogDir(), "kube-apiserver.4220.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(kwok+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := c.KwokPodWatchCloses(); n != 3 || err != nil {
		t.Errorf("after a restart: got %d, %v; want 3, nil", n, err)
	}
	if err := os.Chmod(path, 0); err == nil && os.Geteuid() != 0 {
		if _, err := c.KwokPodWatchCloses(); err == nil {
			t.Error("an unreadable log: got no error")
		}
	}
}

func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kube-apiserver.log")
	long := strings.Repeat("y", 70<<10)
	if err := os.WriteFile(path, []byte(long+"\nI1 start\nE1 listen tcp :6443: bind: address already in use\nF1 exiting\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := logTail(path, 2)
	if want := "E1 listen tcp :6443: bind: address already in use | F1 exiting"; got != want || err != nil {
		t.Errorf("got %q, %v; want %q, nil", got, err, want)
	}
	if _, err := logTail(filepath.Join(t.TempDir(), "none.log"), 2); err == nil {
		t.Error("a missing log: got no error")
	}
}
