// Package pacing limits how many pod creates the controller has in flight,
// adapting the limit to how fast the API server acknowledges them.
//
// A fixed burst is wrong both ways: on a large cluster, thousands of creates
// at once queue in the API server and starve what must follow them (the
// scheduler's bindings, the kubelets' status writes), so pods exist sooner
// but run later; on a small or idle one, a low cap wastes time. The limiter
// follows the gradient of create latency, as TCP Vegas and Netflix's
// concurrency-limits do: while a create takes about as long as the fastest
// seen, the limit grows; as the server queues and latency rises, it shrinks
// in proportion, leaving the server its headroom.
package pacing

import (
	"context"
	"math"
	"sync"
	"time"
)

// Bounds of the limit. Min keeps progress when the server is slow for
// reasons of its own; the controller's batch size caps the top.
const (
	DefaultMinLimit     = 8
	DefaultInitialLimit = 32
)

// Limiter is an adaptive limit on calls in flight. The zero value is not
// usable; use New. Safe for concurrent use.
type Limiter struct {
	min, max float64

	now func() time.Time

	mu       sync.Mutex
	limit    float64
	inFlight int
	baseline windowedMin
	wake     chan struct{} // closed and replaced when a slot frees
}

// BaselineWindow is how long a latency sample may serve as the no-load
// baseline: the baseline is the lowest sample of the current and the
// previous window, so it follows a server that became slower for good
// within two windows, but not a queue that builds up within a create wave.
const BaselineWindow = 10 * time.Second

// windowedMin is the lowest sample of the current and the previous window.
type windowedMin struct {
	start     time.Time
	cur, prev time.Duration // 0: no sample
}

func (w *windowedMin) add(now time.Time, sample time.Duration) {
	switch {
	case w.start.IsZero():
		w.start = now
	case now.Sub(w.start) >= 2*BaselineWindow:
		w.start, w.cur, w.prev = now, 0, 0
	case now.Sub(w.start) >= BaselineWindow:
		w.start, w.prev, w.cur = w.start.Add(BaselineWindow), w.cur, 0
	}
	if w.cur == 0 || sample < w.cur {
		w.cur = sample
	}
}

func (w *windowedMin) get() time.Duration {
	if w.prev != 0 && w.prev < w.cur {
		return w.prev
	}
	return w.cur
}

// New returns a limiter between min and max calls in flight, starting at
// initial (each clamped to sensible values); now is the clock.
func New(min, initial, max int, now func() time.Time) *Limiter {
	lo := float64(max1(min))
	hi := math.Max(lo, float64(max))
	return &Limiter{min: lo, max: hi, now: now, limit: math.Min(hi, math.Max(lo, float64(initial))), wake: make(chan struct{})}
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// Acquire waits for a slot; it fails only when ctx ends first.
func (l *Limiter) Acquire(ctx context.Context) error {
	for {
		l.mu.Lock()
		if l.inFlight < int(l.limit) {
			l.inFlight++
			l.mu.Unlock()
			return nil
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release frees a slot. latency is how long the call took; ok is false for
// a call that failed or was cancelled, whose latency says nothing about the
// server's queue and is not used.
func (l *Limiter) Release(latency time.Duration, ok bool) {
	l.mu.Lock()
	l.inFlight--
	if ok && latency > 0 {
		l.baseline.add(l.now(), latency)
		l.limit = NextLimit(l.limit, l.baseline.get(), latency, l.min, l.max)
	}
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

// Limit is the current limit, for metrics.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.limit)
}

// Tolerance is how many times the baseline a call may take before the
// limit shrinks: some queueing is the price of keeping the server busy.
const Tolerance = 2

// NextLimit is one step of the gradient rule. The gradient
// Tolerance×baseline/sample (at most 1, at least 0.5) scales the limit down
// as latency rises past Tolerance times the baseline; the square root of
// the limit is the queue allowed on top, so that the limit grows while
// latency stays below. The step is smoothed (a fifth of the way to the new
// value) so that one slow call does not halve it.
func NextLimit(limit float64, baseline, sample time.Duration, min, max float64) float64 {
	if baseline <= 0 || sample <= 0 {
		return limit
	}
	gradient := math.Max(0.5, math.Min(1, Tolerance*float64(baseline)/float64(sample)))
	target := limit*gradient + math.Sqrt(limit)
	next := limit + (target-limit)/5
	return math.Max(min, math.Min(max, next))
}
