package pacing

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestNextLimit(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name             string
		limit            float64
		baseline, sample time.Duration
		want             float64
	}{
		// limit + sqrt(limit)/5
		{name: "fast call grows the limit", limit: 100, baseline: 10 * ms, sample: 10 * ms, want: 102},
		{name: "within tolerance still grows", limit: 100, baseline: 10 * ms, sample: 20 * ms, want: 102},
		// gradient 0.5: 100 + (50+10-100)/5
		{name: "slow call shrinks it", limit: 100, baseline: 10 * ms, sample: 80 * ms, want: 92},
		{name: "gradient floors at one half", limit: 100, baseline: 10 * ms, sample: 10 * time.Second, want: 92},
		{name: "never below min", limit: 8, baseline: 10 * ms, sample: time.Second, want: 8},
		{name: "never above max", limit: 250, baseline: 10 * ms, sample: 10 * ms, want: 250},
		{name: "no baseline yet", limit: 40, baseline: 0, sample: 10 * ms, want: 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextLimit(tc.limit, tc.baseline, tc.sample, 8, 250); got != tc.want {
				t.Errorf("NextLimit(%v, %v, %v) = %v, want %v", tc.limit, tc.baseline, tc.sample, got, tc.want)
			}
		})
	}
}

// Under a steady overload the limit settles low, and comes back up when the
// server is fast again.
func TestLimiterFollowsLatency(t *testing.T) {
	now := time.Unix(0, 0)
	l := New(8, 32, 250, func() time.Time { return now })
	ctx := context.Background()
	// Ten calls a second.
	run := func(n int, latency time.Duration) {
		for range n {
			now = now.Add(100 * time.Millisecond)
			if err := l.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			l.Release(latency, true)
		}
	}
	run(10, 5*time.Millisecond) // baseline 5 ms
	if got := l.Limit(); got <= 32 {
		t.Fatalf("limit after fast calls = %d, want above 32", got)
	}
	run(50, 200*time.Millisecond) // 40 × baseline, for 5 s: queueing
	if got := l.Limit(); got != 8 {
		t.Fatalf("limit after slow calls = %d, want the minimum 8", got)
	}
	// A server slow for good becomes the baseline within two windows.
	run(int(2*BaselineWindow/(100*time.Millisecond))+50, 200*time.Millisecond)
	if got := l.Limit(); got <= 8 {
		t.Fatalf("limit after %v of slow calls = %d, want it growing again", 2*BaselineWindow, got)
	}
	run(2000, 5*time.Millisecond)
	if got := l.Limit(); got != 250 {
		t.Fatalf("limit after the server recovered = %d, want the maximum 250", got)
	}
	// Failures say nothing about the queue.
	before := l.Limit()
	for range 100 {
		if err := l.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		l.Release(time.Minute, false)
	}
	if got := l.Limit(); got != before {
		t.Errorf("limit after failed calls = %d, want %d unchanged", got, before)
	}
}

func TestLimiterBoundsCallsInFlight(t *testing.T) {
	l := New(4, 4, 4, time.Now)
	ctx := context.Background()
	var mu sync.Mutex
	inFlight, peak := 0, 0
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			if err := l.Acquire(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inFlight++
			peak = max(peak, inFlight)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			inFlight--
			mu.Unlock()
			l.Release(time.Millisecond, true)
		})
	}
	wg.Wait()
	if peak != 4 {
		t.Errorf("peak calls in flight = %d, want the limit 4", peak)
	}
}

func TestAcquireGivesUpWithItsContext(t *testing.T) {
	l := New(1, 1, 1, time.Now)
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on a full limiter = %v, want the context's deadline", err)
	}
	l.Release(time.Millisecond, true)
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatalf("Acquire after a release: %v", err)
	}
}
