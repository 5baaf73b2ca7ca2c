package reports

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Expected values in this file were computed independently with python3
// (statistics module, math.comb, itertools, statistics.NormalDist; scipy is not
// installed), see the comment on each table. The script enumerated every
// assignment of ranks for exact p-values instead of using a recurrence.

var approx = cmpopts.EquateApprox(0, 1e-12)

func TestSummarizeKnownAnswers(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		xs   []float64
		want Stats
	}{
		{
			// python3: statistics.median, statistics.mean, statistics.stdev;
			// nearest rank = sorted(xs)[math.ceil(p*n)-1];
			// CI: largest l with sum(comb(10,k) for k in l..10-l)/2**10 >= 0.95 -> l=2, 1002/1024.
			name: "n=10",
			xs:   []float64{3.1, 1.2, 5.5, 2.4, 9.9, 4.0, 7.3, 6.6, 8.8, 0.5},
			want: Stats{
				N: 10, Min: 0.5, Median: 4.75, P90: 8.8, P99: 9.9, Max: 9.9,
				Mean: 4.93, StdDev: 3.2069542490586853,
				CI: MedianCI{OK: true, Lo: 1.2, Hi: 8.8, LoOrder: 2, HiOrder: 9, Confidence: 0.978515625},
			},
		},
		{
			// python3 as above; CI for n=7: l=1, coverage 126/128 = 0.984375.
			name: "n=7",
			xs:   []float64{14.0, 11.0, 19.0, 12.5, 13.0, 17.5, 16.0},
			want: Stats{
				N: 7, Min: 11, Median: 14, P90: 19, P99: 19, Max: 19,
				Mean: 14.714285714285714, StdDev: 2.884688643758382,
				CI: MedianCI{OK: true, Lo: 11, Hi: 19, LoOrder: 1, HiOrder: 7, Confidence: 0.984375},
			},
		},
		{
			// n=5: the widest interval [x(1), x(5)] covers only 30/32 = 0.9375 < 0.95.
			name: "n=5 too small for CI",
			xs:   []float64{5, 1, 4, 2, 3},
			want: Stats{
				N: 5, Min: 1, Median: 3, P90: 5, P99: 5, Max: 5, Mean: 3, StdDev: 1.5811388300841898,
				CI: MedianCI{Note: "n too small: a 95% CI of the median needs n >= 6 (have 5)"},
			},
		},
		{
			name: "n=1",
			xs:   []float64{7},
			want: Stats{
				N: 1, Min: 7, Median: 7, P90: 7, P99: 7, Max: 7, Mean: 7, StdDev: nan,
				CI: MedianCI{Note: "n too small: a 95% CI of the median needs n >= 6 (have 1)"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.xs, DefaultConfidence)
			if diff := cmp.Diff(tc.want, got, approx, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("Summarize(%v) mismatch (-want +got):\n%s", tc.xs, diff)
			}
		})
	}
}

func TestMedianCIOrders(t *testing.T) {
	// python3: for each n, the largest l with
	// sum(math.comb(n, k) for k in range(l, n-l+1)) / 2**n >= 0.95.
	tests := []struct {
		n        int
		lo, hi   int
		coverage float64
		ok       bool
	}{
		{n: 5},
		{n: 6, lo: 1, hi: 6, coverage: 0.96875, ok: true},
		{n: 7, lo: 1, hi: 7, coverage: 0.984375, ok: true},
		{n: 10, lo: 2, hi: 9, coverage: 0.978515625, ok: true},
		{n: 20, lo: 6, hi: 15, coverage: 0.9586105346679688, ok: true},
		{n: 30, lo: 10, hi: 21, coverage: 0.9572260547429323, ok: true},
	}
	for _, tc := range tests {
		xs := make([]float64, tc.n)
		for i := range xs {
			xs[i] = float64(tc.n - i) // reversed, so sorting matters
		}
		ci := MedianConfidenceInterval(xs, 0.95)
		if ci.OK != tc.ok {
			t.Fatalf("n=%d: OK = %v, want %v (%s)", tc.n, ci.OK, tc.ok, ci.Note)
		}
		if !ci.OK {
			continue
		}
		if ci.LoOrder != tc.lo || ci.HiOrder != tc.hi || math.Abs(ci.Confidence-tc.coverage) > 1e-9 {
			t.Errorf("n=%d: got orders [%d, %d] coverage %v, want [%d, %d] %v", tc.n, ci.LoOrder, ci.HiOrder, ci.Confidence, tc.lo, tc.hi, tc.coverage)
		}
		if ci.Lo != float64(tc.lo) || ci.Hi != float64(tc.hi) {
			t.Errorf("n=%d: got values [%v, %v], want [%d, %d]", tc.n, ci.Lo, ci.Hi, tc.lo, tc.hi)
		}
	}
	if got := MinCISamples(0.95); got != 6 {
		t.Errorf("MinCISamples(0.95) = %d, want 6", got)
	}
	// python3: 2/math.comb(6,3) = 0.1 > 0.05, 2/math.comb(8,4) = 0.0286 < 0.05.
	if got := MinTestSamples(0.05); got != 4 {
		t.Errorf("MinTestSamples(0.05) = %d, want 4", got)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	xs := []float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	tests := []struct {
		p    float64
		want float64
	}{
		{0, 10}, {0.1, 10}, {0.11, 20}, {0.5, 50}, {0.7, 70}, {0.9, 90}, {0.91, 100}, {0.99, 100}, {1, 100},
	}
	for _, tc := range tests {
		if got := Percentile(xs, tc.p); got != tc.want {
			t.Errorf("Percentile(p=%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 0.5)) {
		t.Errorf("Percentile(nil) is not NaN")
	}
}

func TestMannWhitneyKnownAnswers(t *testing.T) {
	tests := []struct {
		name string
		a, b []float64
		want UTest
	}{
		{
			// Complete separation, n=4 per side: python3 enumeration of all
			// C(8,4)=70 rank assignments: 1 has U <= 0, p = 2/70.
			name: "separated exact",
			a:    []float64{1.1, 2.3, 3.5, 4.2},
			b:    []float64{5.0, 6.1, 7.3, 8.4},
			want: UTest{N1: 4, N2: 4, U: 0, P: 0.02857142857142857, Exact: true},
		},
		{
			name: "separated exact reversed",
			a:    []float64{5.0, 6.1, 7.3, 8.4},
			b:    []float64{1.1, 2.3, 3.5, 4.2},
			want: UTest{N1: 4, N2: 4, U: 16, P: 0.02857142857142857, Exact: true},
		},
		{
			// python3 enumeration of all C(13,6)=1716 assignments: 19 have U <= 5, p = 38/1716.
			name: "overlapping exact",
			a:    []float64{12.1, 13.4, 11.8, 14.2, 12.9, 13.1},
			b:    []float64{13.0, 14.8, 15.1, 13.9, 14.4, 15.6, 14.1},
			want: UTest{N1: 6, N2: 7, U: 5, P: 0.022144522144522144, Exact: true},
		},
		{
			// Ties: normal approximation with tie and continuity correction,
			// python3: sigma = sqrt(n1*n2/12*((N+1) - sum(t^3-t)/(N*(N-1)))),
			// z = (|U - n1*n2/2| - 0.5)/sigma, p = 2*(1 - NormalDist().cdf(z)).
			name: "ties normal",
			a:    []float64{1, 2, 2, 3, 4, 4, 5},
			b:    []float64{3, 4, 5, 5, 6, 7, 7, 8},
			want: UTest{N1: 7, N2: 8, U: 6.5, P: 0.014107907274540699, Ties: true},
		},
		{
			// n=60 > ExactULimit: normal approximation (no ties), same python3 formula.
			name: "large normal",
			a:    seq(60, 0),
			b:    seq(60, 10.5),
			want: UTest{N1: 60, N2: 60, U: 1225, P: 0.002566887943524332},
		},
		{
			name: "all equal",
			a:    []float64{2, 2, 2, 2},
			b:    []float64{2, 2, 2, 2},
			want: UTest{N1: 4, N2: 4, U: 8, P: 1, Ties: true, Note: "all values are equal"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MannWhitney(tc.a, tc.b)
			if err != nil {
				t.Fatalf("MannWhitney: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("MannWhitney mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := MannWhitney(nil, []float64{1}); err == nil {
		t.Errorf("MannWhitney(empty) returned no error")
	}
}

// TestExactUAgainstEnumeration checks the recurrence against brute force over
// all rank assignments for small sizes (a deliberately simple second implementation).
func TestExactUAgainstEnumeration(t *testing.T) {
	for m := 1; m <= 5; m++ {
		for n := 1; n <= 5; n++ {
			counts := make([]float64, m*n+1)
			var total float64
			forEachSubset(m+n, m, func(in []bool) {
				u := 0
				for i := range in {
					for j := range i {
						if in[i] && !in[j] {
							u++
						}
					}
				}
				counts[u]++
				total++
			})
			var cum float64
			for u := range counts {
				cum += counts[u]
				if got, want := exactUCDF(m, n, u), cum/total; math.Abs(got-want) > 1e-12 {
					t.Errorf("exactUCDF(%d, %d, %d) = %v, want %v", m, n, u, got, want)
				}
			}
		}
	}
}

func forEachSubset(n, k int, f func(in []bool)) {
	in := make([]bool, n)
	var rec func(i, left int)
	rec = func(i, left int) {
		if left == 0 {
			f(in)
			return
		}
		if n-i < left {
			return
		}
		in[i] = true
		rec(i+1, left-1)
		in[i] = false
		rec(i+1, left)
	}
	rec(0, k)
}

func TestBootstrapMedianRatio(t *testing.T) {
	a := []float64{10, 11, 9.5, 10.5, 10.2, 9.8, 10.1, 9.9}
	b := []float64{20, 21, 19.5, 20.5, 20.2, 19.8, 20.1, 19.9}
	got1 := BootstrapMedianRatio(a, b, rand.New(rand.NewPCG(1, 2)), 2000, 0.95)
	got2 := BootstrapMedianRatio(a, b, rand.New(rand.NewPCG(1, 2)), 2000, 0.95)
	if diff := cmp.Diff(got1, got2); diff != "" {
		t.Errorf("same seed, different result:\n%s", diff)
	}
	// Every resampled median of b lies in [19.5, 21] and of a in [9.5, 11].
	if !got1.OK || got1.Lo < 19.5/11 || got1.Hi > 21/9.5 || got1.Lo > 2 || got1.Hi < 2 {
		t.Errorf("ratio CI %+v does not bracket 2 within [19.5/11, 21/9.5]", got1)
	}
	small := BootstrapMedianRatio(a[:5], b, rand.New(rand.NewPCG(1, 2)), 2000, 0.95)
	if small.OK || !strings.Contains(small.Note, "n >= 6") {
		t.Errorf("n=5: got %+v, want no CI with a note", small)
	}
}

func TestCompareSamples(t *testing.T) {
	opt := DefaultOptions()
	opt.Resamples = 1000
	base := []float64{10, 11, 9.5, 10.5, 10.2, 9.8, 10.1, 9.9}
	slow := []float64{13, 13.5, 12.8, 13.2, 13.1, 12.9, 13.3, 13.4}
	tests := []struct {
		name        string
		a, b        []float64
		significant bool
		verdict     string
		warnings    []string
	}{
		// Medians 13.15/10.05 = 1.3085; n=5: 13.1/10.2 = 1.2843.
		{name: "slower", a: base, b: slow, significant: true, verdict: "+30.8%"},
		{name: "equal", a: base, b: base, verdict: "~"},
		{
			name: "n=3", a: base[:3], b: slow[:3], verdict: "~",
			warnings: []string{
				"no test possible: need n >= 4 per side (have 3 and 3)",
				"no CI: n too small: a ratio CI needs n >= 6 per side (have 3 and 3)",
			},
		},
		{
			name: "n=5", a: base[:5], b: slow[:5], significant: true, verdict: "+28.4%",
			warnings: []string{"no CI: n too small: a ratio CI needs n >= 6 per side (have 5 and 5)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := CompareSamples(tc.a, tc.b, rand.New(rand.NewPCG(7, 7)), opt)
			if c.Significant != tc.significant || c.Verdict() != tc.verdict {
				t.Errorf("significant=%v verdict=%q (p=%v), want %v %q", c.Significant, c.Verdict(), c.Test.P, tc.significant, tc.verdict)
			}
			if diff := cmp.Diff(tc.warnings, c.Warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func seq(n int, offset float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i) + offset
	}
	return xs
}
