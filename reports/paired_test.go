package reports

import (
	"math"
	"testing"
)

func TestSignedRank(t *testing.T) {
	tests := []struct {
		name string
		d    []float64
		p    float64
		ok   bool
	}{
		{"five pairs, all one way: the smallest p five pairs allow", []float64{1, 2, 3, 4, 5}, 2.0 / 32, true},
		{"mixed signs (table value 26/32)", []float64{1, -2, 3, -4, 5}, 26.0 / 32, true},
		{"six pairs one way", []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, 2.0 / 64, true},
		{"zeros are dropped", []float64{0, 0, 1, 2, 3, 4, 5}, 2.0 / 32, true},
		{"ties share their rank", []float64{1, 1, -1}, 1, true},
		{"all ties at zero: no test", []float64{0, 0}, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := SignedRank(tc.d)
			if ok != tc.ok || math.Abs(p-tc.p) > 1e-12 {
				t.Errorf("SignedRank(%v) = %v, %v; want %v, %v", tc.d, p, ok, tc.p, tc.ok)
			}
		})
	}
	// Above 20 pairs the normal approximation must agree with the exact
	// test closely; 20 one-way pairs give exactly 2/2^20.
	many := make([]float64, 21)
	for i := range many {
		many[i] = float64(i + 1)
	}
	if p, _ := SignedRank(many); p > 1e-4 {
		t.Errorf("21 one-way pairs: p = %v, want tiny", p)
	}
}

func TestPairSamples(t *testing.T) {
	a := &Series{Values: []float64{10, 20, 30, 5}, Repetitions: []int{0, 1, 2, 3}}
	b := &Series{Values: []float64{40, 60, 0}, Repetitions: []int{1, 2, 3}}
	p := PairSamples(a, b, 0.95)
	if p.N != 2 || p.Skipped != 1 {
		t.Fatalf("N=%d skipped=%d, want 2 pairs (reps 1 and 2) and rep 3 skipped (zero)", p.N, p.Skipped)
	}
	if math.Abs(p.Ratio-2) > 1e-12 || !p.OK || math.Abs(p.Lo-2) > 1e-12 || math.Abs(p.Hi-2) > 1e-12 {
		t.Errorf("ratio %v [%v, %v] ok=%v; want exactly 2 with a zero-width interval", p.Ratio, p.Lo, p.Hi, p.OK)
	}
	// Spread ratios: the interval holds the geometric mean and widens.
	a = &Series{Values: []float64{10, 10, 10, 10, 10}, Repetitions: []int{0, 1, 2, 3, 4}}
	b = &Series{Values: []float64{8, 9, 11, 12, 10}, Repetitions: []int{0, 1, 2, 3, 4}}
	p = PairSamples(a, b, 0.95)
	if !p.OK || !(p.Lo < p.Ratio && p.Ratio < p.Hi) || p.Lo > 0.95 || p.Hi < 1.05 {
		t.Errorf("ratio %v [%v, %v]; want an interval around 1 of about ±10%%", p.Ratio, p.Lo, p.Hi)
	}
	if p := PairSamples(nil, b, 0.95); p.N != 0 {
		t.Errorf("no reference side: N=%d, want 0", p.N)
	}
}
