package kwok

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// A component that died ends the wait at once, so that Up can retry
// instead of waiting out its timeout for a ServiceAccount that never comes.
func TestWaitReadyStopsWhenAComponentDied(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	died := errors.New("component kube-controller-manager (pid 42) exited during up")
	start := time.Now()
	err := waitReady(ctx, fake.NewClientset(), func() error { return died })
	if !errors.Is(err, died) {
		t.Fatalf("waitReady = %v, want the component's error", err)
	}
	if ctx.Err() != nil || time.Since(start) > 10*time.Second {
		t.Errorf("waitReady took %v; it should return at the first poll", time.Since(start))
	}
}

func TestSaveLogsKeepsTheEvidenceOfAFailedUp(t *testing.T) {
	c, err := Open(ClusterConfig{Name: "failing", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.saveLogs(); got != "" {
		t.Errorf("saveLogs without logs = %q, want \"\"", got)
	}
	if err := os.MkdirAll(c.LogDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	want := "E1123 leaderelection: failed to acquire lease\n"
	if err := os.WriteFile(filepath.Join(c.LogDir(), "kube-controller-manager.log"), []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := c.saveLogs()
	if !strings.HasSuffix(saved, "failing.failed-logs") {
		t.Fatalf("saved to %q", saved)
	}
	// Down removes the cluster's folder; the copy must not be in it.
	if err := os.RemoveAll(c.Dir()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(saved, "kube-controller-manager.log"))
	if err != nil || string(got) != want {
		t.Errorf("saved log = %q, %v; want %q", got, err, want)
	}
}
