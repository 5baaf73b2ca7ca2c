package controller

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
)

// windowed never has more calls in flight than its window, which starts at
// first and grows by one per success up to maxWindow.
func TestWindowedBoundsCallsInFlight(t *testing.T) {
	for _, tt := range []struct {
		n, first, maxWindow int
		wantWindow          int
	}{
		{n: 10, first: 1, maxWindow: 250, wantWindow: 11},
		{n: 40, first: 1, maxWindow: 4, wantWindow: 4},
		{n: 5, first: 64, maxWindow: 16, wantWindow: 16},
		{n: 3, first: 0, maxWindow: 8, wantWindow: 4},
		{n: 0, first: 1, maxWindow: 8, wantWindow: 1},
	} {
		t.Run(fmt.Sprintf("n=%d,first=%d,max=%d", tt.n, tt.first, tt.maxWindow), func(t *testing.T) {
			var inFlight, peak atomic.Int64
			made := make([]atomic.Bool, tt.n)
			sent, window, failed := windowed(tt.n, tt.first, tt.maxWindow, func(i int) error {
				now := inFlight.Add(1)
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
				time.Sleep(time.Millisecond)
				made[i].Store(true)
				inFlight.Add(-1)
				return nil
			})
			if sent != tt.n || failed || window != tt.wantWindow {
				t.Errorf("sent %d, window %d, failed %v; want %d, %d, false", sent, window, failed, tt.n, tt.wantWindow)
			}
			for i := range made {
				if !made[i].Load() {
					t.Errorf("call %d was not made", i)
				}
			}
			if limit := int64(min(max(tt.first, 1)+tt.n, tt.maxWindow)); peak.Load() > limit {
				t.Errorf("%d calls in flight at once, more than the window could reach (%d)", peak.Load(), limit)
			}
		})
	}
}

// A slow call holds back no other: with a window of 2, the calls after it
// go on while it waits, where a batch of 2 would wait for it.
func TestWindowedDoesNotWaitForTheSlowest(t *testing.T) {
	const n = 8
	othersDone := make(chan struct{})
	var done atomic.Int64
	var timedOut atomic.Bool
	_, _, failed := windowed(n, 2, 250, func(i int) error {
		if i == 0 {
			select {
			case <-othersDone:
			case <-time.After(10 * time.Second):
				timedOut.Store(true)
			}
			return nil
		}
		if done.Add(1) == n-1 {
			close(othersDone)
		}
		return nil
	})
	if failed || timedOut.Load() {
		t.Errorf("the first call waited for the others to be made and they were not (failed %v, timed out %v)", failed, timedOut.Load())
	}
}

// After a failure no more calls are made: every call before the failing
// one, and at most the window beyond it. The calls after the failing one
// hold until 250 ms after it returned, so that none of them frees a slot
// before windowed has recorded the failure (calls of a few nanoseconds
// would otherwise let dozens start while the failing call's goroutine waits
// to be scheduled; API calls take milliseconds).
func TestWindowedStopsAtAFailure(t *testing.T) {
	for _, failAt := range []int{0, 1, 5, 20} {
		t.Run(fmt.Sprintf("call %d fails", failAt), func(t *testing.T) {
			const n, maxWindow = 100, 8
			var mu sync.Mutex
			var made []int
			release := make(chan struct{})
			sent, _, failed := windowed(n, 1, maxWindow, func(i int) error {
				mu.Lock()
				made = append(made, i)
				mu.Unlock()
				switch {
				case i == failAt:
					time.AfterFunc(250*time.Millisecond, func() { close(release) })
					return errors.New("exceeded quota")
				case i > failAt:
					<-release
				}
				return nil
			})
			if !failed {
				t.Fatal("no failure reported")
			}
			if sent != len(made) {
				t.Errorf("sent %d, but %d calls were made", sent, len(made))
			}
			if sent < failAt+1 || sent > failAt+maxWindow {
				t.Errorf("%d calls made with call %d failing, want %d to %d", sent, failAt, failAt+1, failAt+maxWindow)
			}
		})
	}
}

// Config.SlowStartWindow sends a sync's creates through the window: all of
// them when they succeed, the next creates resuming at the window reached;
// after a failure the creates not sent are not awaited and the next start
// at one.
func TestSyncWindowedCreates(t *testing.T) {
	const nodes = 30
	var objs []runtime.Object
	for i := range nodes {
		objs = append(objs, newNode(fmt.Sprintf("n%02d", i), nil))
	}
	for _, tt := range []struct {
		name       string
		failNode   string
		wantResume int
	}{
		{name: "all succeed", wantResume: 8}, // MaxCreateBatch
		{name: "n03 fails", failNode: "n03", wantResume: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDaemonSet("agent")
			f := newFixture(t, append([]runtime.Object{ds, currentRevision(t, ds)}, objs...), func(c *Config) { c.SlowStartWindow, c.MaxCreateBatch = true, 8 })
			f.client.PrependReactor("create", "pods", func(a core.Action) (bool, runtime.Object, error) {
				if targetNodeName(a.(core.CreateAction).GetObject().(*corev1.Pod)) == tt.failNode {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
				}
				return false, nil, nil
			})
			err := f.sync(dsKey(ds))
			if (err != nil) != (tt.failNode != "") {
				t.Fatalf("sync error = %v, want an error: %v", err, tt.failNode != "")
			}
			creates := len(filterActions(f.actions(), "create pods"))
			succeeded := creates
			if tt.failNode != "" {
				succeeded--
				if creates < 4 || creates >= nodes {
					t.Errorf("create calls = %d, want the 4 up to n03 and not all %d", creates, nodes)
				}
			} else if creates != nodes {
				t.Errorf("create calls = %d, want %d", creates, nodes)
			}
			if adds, _ := f.c.expectations.Pending(dsKey(ds)); adds != succeeded {
				t.Errorf("pending creates = %d, want %d (the successful creates)", adds, succeeded)
			}
			if got := f.c.slowStartFirst(dsKey(ds)); got != tt.wantResume {
				t.Errorf("the next creates start at %d, want %d", got, tt.wantResume)
			}
		})
	}
}

// streamCalls makes every call, never more than limit at once, and does
// reach the limit: the calls are held until the limit is in flight, and a
// while longer, so that a stream with no bound lets more start and a stream
// that sends one at a time never gets there.
func TestStreamCallsBoundsCallsInFlight(t *testing.T) {
	for _, tt := range []struct{ n, limit int }{
		{n: 0, limit: 4},
		{n: 1, limit: 4},
		{n: 10, limit: 4},
		{n: 10, limit: 1},
		{n: 3, limit: 0}, // treated as 1
		{n: 300, limit: 250},
	} {
		t.Run(fmt.Sprintf("n=%d,limit=%d", tt.n, tt.limit), func(t *testing.T) {
			want := int64(min(tt.n, max(tt.limit, 1)))
			var inFlight, peak atomic.Int64
			made := make([]atomic.Int32, tt.n)
			gate, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				streamCalls(tt.n, tt.limit, nil, func(i int) {
					now := inFlight.Add(1)
					for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
					}
					<-gate
					made[i].Add(1)
					inFlight.Add(-1)
				})
			}()
			for deadline := time.Now().Add(2 * time.Second); inFlight.Load() < want && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // room for calls past the limit to start, were they let
			close(gate)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("streamCalls did not return within 10 s of its calls being let go")
			}
			for i := range made {
				if got := made[i].Load(); got != 1 {
					t.Errorf("call %d made %d times, want once", i, got)
				}
			}
			if peak.Load() != want {
				t.Errorf("at most %d calls in flight at once, want %d", peak.Load(), want)
			}
		})
	}
}

// streamCalls starts no call once stopped says so, and says how many it
// started: with one call in flight, stopping after the third is exact.
func TestStreamCallsStops(t *testing.T) {
	var made atomic.Int64
	started := streamCalls(10, 1, func() bool { return made.Load() >= 3 }, func(int) { made.Add(1) })
	if started != 3 || made.Load() != 3 {
		t.Errorf("started %d, made %d calls; want 3 and 3", started, made.Load())
	}
	if started := streamCalls(4, 2, func() bool { return false }, func(int) {}); started != 4 {
		t.Errorf("never stopped: started %d calls, want 4", started)
	}
}
