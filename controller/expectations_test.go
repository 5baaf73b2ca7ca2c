package controller

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	const k = "default/agent"
	tests := []struct {
		name string
		// steps run in order against a fresh store on a fake clock.
		steps         func(e *Expectations, clk *clocktesting.FakeClock)
		wantSatisfied bool
		wantExpiresIn time.Duration
	}{
		{
			name:          "nothing expected",
			steps:         func(*Expectations, *clocktesting.FakeClock) {},
			wantSatisfied: true,
		},
		{
			name:          "creates outstanding",
			steps:         func(e *Expectations, _ *clocktesting.FakeClock) { e.Expect(k, 2, nil); e.CreationObserved(k, 1) },
			wantExpiresIn: time.Minute + 1,
		},
		{
			name:          "all creates observed",
			steps:         func(e *Expectations, _ *clocktesting.FakeClock) { e.Expect(k, 2, nil); e.CreationObserved(k, 2) },
			wantSatisfied: true,
		},
		{
			name: "extra observations do not go negative",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.Expect(k, 1, nil)
				e.CreationObserved(k, 5)
				e.Expect(k, 1, nil) // a later expectation is not pre-satisfied
			},
			wantExpiresIn: time.Minute + 1,
		},
		{
			name: "a deletion observed twice counts once",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.Expect(k, 0, []string{"default/a", "default/b"})
				e.DeletionObserved(k, "default/a")
				e.DeletionObserved(k, "default/a")
			},
			wantExpiresIn: time.Minute + 1,
		},
		{
			name: "all deletions observed",
			steps: func(e *Expectations, _ *clocktesting.FakeClock) {
				e.Expect(k, 0, []string{"default/a", "default/b"})
				e.DeletionObserved(k, "default/b")
				e.DeletionObserved(k, "default/a")
			},
			wantSatisfied: true,
		},
		{
			name: "not yet expired at exactly the TTL",
			steps: func(e *Expectations, clk *clocktesting.FakeClock) {
				e.Expect(k, 1, nil)
				clk.Step(time.Minute)
			},
			wantExpiresIn: 1,
		},
		{
			name: "expired after the TTL",
			steps: func(e *Expectations, clk *clocktesting.FakeClock) {
				e.Expect(k, 1, nil)
				clk.Step(time.Minute + time.Nanosecond)
			},
			wantSatisfied: true,
		},
		{
			name:          "deleted",
			steps:         func(e *Expectations, _ *clocktesting.FakeClock) { e.Expect(k, 1, nil); e.Delete(k) },
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
		})
	}
}
