package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	if _, err := z.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// windowedTarget serves heap profiles at once and CPU windows only when the
// test releases them, so that the test decides when a window ends.
type windowedTarget struct {
	t       *testing.T
	release chan struct{}
	mu      sync.Mutex
	asked   []string
}

func (w *windowedTarget) windowsAsked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, p := range w.asked {
		if p == "profile" {
			n++
		}
	}
	return n
}

func (w *windowedTarget) target(name string) ProfileTarget {
	return ProfileTarget{Name: name, Fetch: func(ctx context.Context, profile string, seconds int, out io.Writer) error {
		w.mu.Lock()
		w.asked = append(w.asked, profile)
		w.mu.Unlock()
		if profile == "profile" {
			if seconds != 10 {
				w.t.Errorf("a window of %d s, want 10", seconds)
			}
			select {
			case <-w.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		_, err := out.Write(gzipped(w.t, name+" "+profile))
		return err
	}}
}

func TestProfilerTakesWindowsUntilFinishAndRecordsFailures(t *testing.T) {
	// The harness's own CPU profile is the process's: `go test -cpuprofile`
	// holds it already.
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Skipf("a CPU profile runs already: %v", err)
	}
	pprof.StopCPUProfile()
	dir := t.TempDir()
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	good := &windowedTarget{t: t, release: make(chan struct{})}
	var refusedCalls sync.WaitGroup
	refusedCalls.Add(2) // heap-start and the first window; the next waits for the clock
	var refusedMu sync.Mutex
	refused := 0
	targets := []ProfileTarget{
		good.target("good"),
		{Name: "refusing", Fetch: func(context.Context, string, int, io.Writer) error {
			refusedMu.Lock()
			defer refusedMu.Unlock()
			if refused++; refused <= 2 {
				refusedCalls.Done()
			}
			return errors.New("connection refused")
		}},
		{Name: "disabled", Fetch: func(_ context.Context, _ string, _ int, w io.Writer) error {
			_, err := io.WriteString(w, "profiling endpoint is disabled.")
			return err
		}},
	}
	p := startProfiler(t.Context(), dir, "sc-ours-0", targets, ProfileWindow, clk)
	// heap-start, the first window and heap-end fail for the two
	// others: a failed window is tried again a window later, on the clock
	// that never moves here.
	// Two windows of the good target end; the third is in flight.
	good.release <- struct{}{}
	good.release <- struct{}{}
	refusedCalls.Wait()
	for good.windowsAsked() < 3 {
		time.Sleep(time.Millisecond)
	}
	// finish waits for the window in flight: release it after finish began.
	go func() {
		time.Sleep(50 * time.Millisecond)
		good.release <- struct{}{}
	}()
	got := p.finish(t.Context())
	if again := p.finish(t.Context()); again != got {
		t.Errorf("finish called again returned %p, want the first result %p", again, got)
	}

	wantFiles := []string{
		"sc-ours-0-good-cpu-001.pb.gz", "sc-ours-0-good-cpu-002.pb.gz", "sc-ours-0-good-cpu-003.pb.gz",
		"sc-ours-0-good-heap-end.pb.gz", "sc-ours-0-good-heap-start.pb.gz",
		"sc-ours-0-harness-cpu.pb.gz", "sc-ours-0-harness-heap-end.pb.gz", "sc-ours-0-harness-heap-start.pb.gz",
	}
	if !slices.Equal(got.Files, wantFiles) {
		t.Errorf("files %q,\nwant %q", got.Files, wantFiles)
	}
	if got.Dir != dir {
		t.Errorf("dir %q, want %q", got.Dir, dir)
	}
	for _, f := range wantFiles {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || checkProfile(data) != nil {
			t.Errorf("%s: %v, %v", f, err, checkProfile(data))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != len(wantFiles) {
		t.Errorf("%d files in the folder (%v), want only the %d recorded", len(entries), err, len(wantFiles))
	}
	if len(got.Errors) != 2 ||
		!strings.HasPrefix(got.Errors[0], "disabled: ") || !strings.Contains(got.Errors[0], "not a profile") ||
		!strings.HasPrefix(got.Errors[1], "refusing: 3 failed, the first: heap heap-start: connection refused") {
		t.Errorf("errors %q; want the disabled target's (not a profile) and the refusing target's, counted", got.Errors)
	}
}

func TestProfilerWithAnUnwritableFolderFailsOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	called := false
	target := ProfileTarget{Name: "x", Fetch: func(context.Context, string, int, io.Writer) error { called = true; return nil }}
	p := startProfiler(t.Context(), filepath.Join(file, "profiles"), "run", []ProfileTarget{target}, ProfileWindow, clocktesting.NewFakeClock(time.Unix(0, 0)))
	got := p.finish(t.Context())
	if called || len(got.Files) != 0 || len(got.Errors) != 1 || !strings.HasPrefix(got.Errors[0], "profiles: 1 failed") {
		t.Errorf("called %v, profiles %+v; want no fetch, no file and one error for the folder", called, got)
	}
}
