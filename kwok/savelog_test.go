package kwok

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clusterWithLogs is a cluster that was never brought up, in dir, whose log
// folder holds logs (file name to content).
func clusterWithLogs(t *testing.T, dir string, logs map[string]string) *Cluster {
	t.Helper()
	c, err := Open(ClusterConfig{Name: "x", Workdir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.LogDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range logs {
		if err := os.WriteFile(filepath.Join(c.LogDir(), name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestSaveLogGzipsTheComponentLog(t *testing.T) {
	dir := t.TempDir()
	want := strings.Repeat(`{"msg":"Patch pod","pod":"bench/agent-x"}`+"\n", 1000)
	c := clusterWithLogs(t, dir, map[string]string{"kwok-controller.log": want})
	dst := filepath.Join(dir, "out", "logs", "kwok-controller.log.gz")
	if err := c.SaveLog("kwok-controller", dst); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("the saved log differs: %d bytes, want %d", len(got), len(want))
	}
	if err := c.SaveLog("kube-scheduler", filepath.Join(dir, "none.gz")); err == nil {
		t.Error("saving a log that does not exist: no error")
	}
}
