package cputime

import "testing"

func TestProcessGrowsWithWork(t *testing.T) {
	before, err := Process()
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 50_000_000 {
		x ^= i * i
	}
	after, err := Process()
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("CPU time %v then %v after a busy loop (%d)", before, after, x)
	}
}
