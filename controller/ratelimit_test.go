package controller

import (
	"testing"
	"time"
)

// TestRetryBackoffIsCapped: a DaemonSet whose syncs keep failing is retried at
// least every retryBackoffCap, where client-go's default limiter grows to
// 1000 s; other DaemonSets still start at 5 ms.
func TestRetryBackoffIsCapped(t *testing.T) {
	rl := newRateLimiter()
	var last time.Duration
	for range 30 {
		last = rl.When("ns/failing")
		if last > retryBackoffCap {
			t.Fatalf("retry delay %v exceeds the cap %v", last, retryBackoffCap)
		}
	}
	if last != retryBackoffCap {
		t.Errorf("after 30 failures the delay is %v, want the cap %v", last, retryBackoffCap)
	}
	if d := rl.When("ns/other"); d != 5*time.Millisecond {
		t.Errorf("first retry of another DaemonSet: %v, want 5ms", d)
	}
	rl.Forget("ns/failing")
	if d := rl.When("ns/failing"); d != 5*time.Millisecond {
		t.Errorf("after Forget: %v, want 5ms", d)
	}
}
