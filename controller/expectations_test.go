package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dsbench/dsbench/controller/plan"
)

func TestExpectations(t *testing.T) {
	const k = "default/agent"
	tests := []struct {
		name string
		// steps run in order against a fresh store on a fake clock.
		steps         func(e *Expectations, clk *clocktesting.FakeClock)
		wantSatisfied bool
		wantExpiresIn time.Duration
		wantInFlight  plan.InFlight
	}{
		{
			name:          "nothing expected",
			steps:         func(*Expectations, *clocktesting.FakeClock) {},
			wantSatisfied: true,
		},
		{
			name: "creates outstanding",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1", "n2"})
				e.CreationObserved(k, "n1")
			},
			wantExpiresIn: time.Minute + 1,
			wantInFlight:  plan.InFlight{Creates: map[string]string{"n2": "h1"}},
		},
		{
			name: "all creates observed",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1", "n2"})
				e.CreationObserved(k, "n2")
				e.CreationObserved(k, "n1")
			},
			wantSatisfied: true,
		},
		{
			name: "an observation on another node settles nothing",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1"})
				e.CreationObserved(k, "n9")
				e.CreationObserved(k+"-other", "n1")
			},
			wantExpiresIn: time.Minute + 1,
			wantInFlight:  plan.InFlight{Creates: map[string]string{"n1": "h1"}},
		},
		{
			name: "a deletion observed twice counts once",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectDeletions(k, []string{"default/a", "default/b"})
				e.DeletionObserved(k, "default/a")
				e.DeletionObserved(k, "default/a")
			},
			wantExpiresIn: time.Minute + 1,
			wantInFlight:  plan.InFlight{Deletes: map[string]struct{}{"b": {}}},
		},
		{
			name: "all deletions observed",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectDeletions(k, []string{"default/a", "default/b"})
				e.DeletionObserved(k, "default/b")
				e.DeletionObserved(k, "default/a")
			},
			wantSatisfied: true,
		},
		{
			name: "not yet expired at exactly the TTL",
			steps: func(e *Expectations, clk *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1"})
				clk.Step(time.Minute)
			},
			wantExpiresIn: 1,
			wantInFlight:  plan.InFlight{Creates: map[string]string{"n1": "h1"}},
		},
		{
			name: "each write expires on its own",
			steps: func(e *Expectations, clk *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1"})
				clk.Step(30 * time.Second)
				e.ExpectDeletions(k, []string{"default/a"})
				clk.Step(30*time.Second + time.Nanosecond)
			},
			wantExpiresIn: 30 * time.Second,
			wantInFlight:  plan.InFlight{Deletes: map[string]struct{}{"a": {}}},
		},
		{
			name: "expired after the TTL",
			steps: func(e *Expectations, clk *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1"})
				clk.Step(time.Minute + time.Nanosecond)
			},
			wantSatisfied: true,
		},
		{
			name: "a create again on a node replaces the first",
			steps: func(e *Expectations, clk *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1"})
				clk.Step(time.Minute + time.Nanosecond)
				e.ExpectCreates(k, "h2", []string{"n1"})
			},
			wantExpiresIn: time.Minute + 1,
			wantInFlight:  plan.InFlight{Creates: map[string]string{"n1": "h2"}},
		},
		{
			// A create that may have landed: waited for from its failure
			// on, for UncertainWriteHold, not until the TTL of its issue.
			name: "an uncertain create is held from its failure",
			steps: func(e *Expectations, clk *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1", "n2"})
				clk.Step(50 * time.Second)
				e.CreationUncertain(k, "n1")
				clk.Step(20 * time.Second) // past n1's TTL, within its hold
			},
			wantExpiresIn: 10*time.Second + 1,
			wantInFlight:  plan.InFlight{Creates: map[string]string{"n1": "h1"}},
		},
		{
			name: "an uncertain create expires at the end of its hold",
			steps: func(e *Expectations, clk *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1"})
				e.CreationUncertain(k, "n1")
				clk.Step(UncertainWriteHold + time.Nanosecond)
			},
			wantSatisfied: true,
		},
		{
			name: "an uncertain create seen by the informer is settled",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1"})
				e.CreationUncertain(k, "n1")
				e.CreationObserved(k, "n1")
			},
			wantSatisfied: true,
		},
		{
			// The pod's event came before the failed call returned: not
			// waited for again.
			name: "an uncertain create already seen is not waited for",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1"})
				e.CreationObserved(k, "n1")
				e.CreationUncertain(k, "n1")
				e.DeletionUncertain(k, "default/a")
			},
			wantSatisfied: true,
		},
		{
			name: "an uncertain deletion is held from its failure",
			steps: func(e *Expectations, clk *clocktesting.FakeClock) {
				e.ExpectDeletions(k, []string{"default/a"})
				clk.Step(50 * time.Second)
				e.DeletionUncertain(k, "default/a")
				clk.Step(UncertainWriteHold)
			},
			wantExpiresIn: 1,
			wantInFlight:  plan.InFlight{Deletes: map[string]struct{}{"a": {}}},
		},
		{
			name: "deleted",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.ExpectCreates(k, "h1", []string{"n1"})
				e.ExpectDeletions(k, []string{"default/a"})
				e.Delete(k)
			},
			wantSatisfied: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			e := NewExpectations(clk, time.Minute)
			tt.steps(e, clk)
			if got := e.Satisfied(k); got != tt.wantSatisfied {
				t.Errorf("Satisfied = %v, want %v", got, tt.wantSatisfied)
			}
			if got := e.ExpiresIn(k); got != tt.wantExpiresIn {
				t.Errorf("ExpiresIn = %v, want %v", got, tt.wantExpiresIn)
			}
			got, _ := e.InFlight(k)
			if diff := cmp.Diff(tt.wantInFlight, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("InFlight (-want +got):\n%s", diff)
			}
			adds, dels := e.Pending(k)
			if adds != len(tt.wantInFlight.Creates) || dels != len(tt.wantInFlight.Deletes) {
				t.Errorf("Pending = %d, %d; want %d, %d", adds, dels, len(tt.wantInFlight.Creates), len(tt.wantInFlight.Deletes))
			}
		})
	}
}

// InFlight reports how many writes it dropped for being older than the TTL,
// once: they are forgotten.
func TestExpectationsInFlightReportsExpired(t *testing.T) {
	const k = "default/agent"
	clk := clocktesting.NewFakeClock(t0)
	e := NewExpectations(clk, time.Minute)
	e.ExpectCreates(k, "h1", []string{"n1", "n2"})
	e.ExpectDeletions(k, []string{"default/a"})
	clk.Step(2 * time.Minute)
	if _, expired := e.InFlight(k); expired != 3 {
		t.Errorf("expired = %d, want 3", expired)
	}
	if _, expired := e.InFlight(k); expired != 0 {
		t.Errorf("expired again = %d, want 0", expired)
	}
}

// Test-only views of the expectations; the controller reads them through InFlight.

// Satisfied reports whether nothing is in flight for key: every write was
// observed, failed, or is older than the TTL.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire(key)
	_, ok := e.m[key]
	return !ok
}

// Pending returns the creates and deletes in flight for key.
func (e *Expectations) Pending(key string) (adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		return len(exp.creates), len(exp.dels)
	}
	return 0, 0
}

// The hold never outlasts a TTL shorter than it.
func TestExpectationsUncertainHoldCappedByTTL(t *testing.T) {
	const k = "default/agent"
	clk := clocktesting.NewFakeClock(t0)
	e := NewExpectations(clk, 10*time.Second)
	e.ExpectCreates(k, "h1", []string{"n1"})
	e.CreationUncertain(k, "n1")
	if got := e.ExpiresIn(k); got != 10*time.Second+1 {
		t.Errorf("ExpiresIn = %v, want the TTL (10s) + 1ns", got)
	}
}
