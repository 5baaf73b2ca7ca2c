package reports

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Defaults for the statistics; README.md explains each method.
const (
	DefaultConfidence = 0.95 // for the median CI and the ratio CI
	DefaultAlpha      = 0.05 // significance level of the Mann-Whitney U test
	DefaultResamples  = 5000 // bootstrap resamples for the ratio CI
	// DefaultSeed seeds the bootstrap so that rendering a report is reproducible.
	DefaultSeed uint64 = 1
	// ExactULimit is the largest per-side sample size for which the exact U
	// distribution is used (when there are no ties).
	ExactULimit = 50
)

// Options configure comparisons.
type Options struct {
	Confidence float64
	Alpha      float64
	Resamples  int
	Seed       uint64 // seeds a PCG per compared series (see seriesRand)
}

// DefaultOptions returns the options used by Render, Summary, Compare and Gate.
func DefaultOptions() Options {
	return Options{Confidence: DefaultConfidence, Alpha: DefaultAlpha, Resamples: DefaultResamples, Seed: DefaultSeed}
}

// Stats describes one metric over repetitions.
type Stats struct {
	N      int
	Min    float64
	Median float64 // middle value; mean of the two middle values when N is even
	P90    float64 // nearest rank
	P99    float64 // nearest rank
	Max    float64
	Mean   float64
	StdDev float64 // sample standard deviation (N-1); NaN when N < 2
	CI     MedianCI
}

// MedianCI is a distribution-free confidence interval for the median built
// from order statistics: [x(l), x(n+1-l)].
type MedianCI struct {
	OK               bool    // false when N is too small for the requested confidence
	Lo, Hi           float64 // x(LoOrder), x(HiOrder)
	LoOrder, HiOrder int     // 1-based order statistics
	Confidence       float64 // actual coverage, >= the requested confidence
	Note             string  // why there is no interval
}

// Summarize computes the Stats of xs (any order; xs is not modified).
func Summarize(xs []float64, confidence float64) Stats {
	nan := math.NaN()
	s := Stats{N: len(xs), Min: nan, Median: nan, P90: nan, P99: nan, Max: nan, Mean: nan, StdDev: nan}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	s.CI = medianCISorted(sorted, confidence)
	if len(sorted) == 0 {
		return s
	}
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	s.Median = medianSorted(sorted)
	s.P90 = percentileSorted(sorted, 0.90)
	s.P99 = percentileSorted(sorted, 0.99)
	s.Mean = stat.Mean(sorted, nil)
	if len(sorted) >= 2 {
		s.StdDev = stat.StdDev(sorted, nil)
	}
	return s
}

// Median returns the median of xs (mean of the two middle values for even n), NaN if empty.
func Median(xs []float64) float64 {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	return medianSorted(sorted)
}

func medianSorted(s []float64) float64 {
	n := len(s)
	switch {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return s[n/2]
	default:
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// Percentile returns the nearest-rank p-quantile of xs (0 <= p <= 1): the
// ceil(p*n)-th smallest value, so the result is always an observed value. NaN if empty.
func Percentile(xs []float64, p float64) float64 {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	return percentileSorted(sorted, p)
}

func percentileSorted(s []float64, p float64) float64 {
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	// The epsilon keeps p*n that should be an integer (0.9*10) from rounding up a rank.
	rank := int(math.Ceil(p*float64(n) - 1e-9))
	rank = max(1, min(n, rank))
	return s[rank-1]
}

// MedianConfidenceInterval returns the order-statistic CI of the median of xs.
func MedianConfidenceInterval(xs []float64, confidence float64) MedianCI {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	return medianCISorted(sorted, confidence)
}

func medianCISorted(sorted []float64, confidence float64) MedianCI {
	n := len(sorted)
	l, coverage, ok := medianCIOrder(n, confidence)
	if !ok {
		return MedianCI{Note: fmt.Sprintf("n too small: a %s CI of the median needs n >= %d (have %d)",
			pct(confidence), MinCISamples(confidence), n)}
	}
	return MedianCI{OK: true, Lo: sorted[l-1], Hi: sorted[n-l], LoOrder: l, HiOrder: n + 1 - l, Confidence: coverage}
}

// medianCIOrder finds the largest l with P(l <= K <= n-l) >= confidence for
// K ~ Binomial(n, 1/2), the number of samples below the true median. Then
// [x(l), x(n+1-l)] covers the median with that probability.
func medianCIOrder(n int, confidence float64) (l int, coverage float64, ok bool) {
	if n < 1 {
		return 0, 0, false
	}
	bin := distuv.Binomial{N: float64(n), P: 0.5}
	for k := 1; 2*k <= n+1; k++ {
		c := bin.CDF(float64(n-k)) - bin.CDF(float64(k-1))
		if c < confidence {
			break
		}
		l, coverage, ok = k, c, true
	}
	return l, coverage, ok
}

// MinCISamples is the smallest n for which the median CI exists (6 at 95%).
func MinCISamples(confidence float64) int {
	for n := 1; n < 1000; n++ {
		if _, _, ok := medianCIOrder(n, confidence); ok {
			return n
		}
	}
	return 1000
}

// MinTestSamples is the smallest n per side for which the exact two-sided U
// test can reach p < alpha at all: 2/C(2n, n) < alpha (4 at alpha 0.05).
func MinTestSamples(alpha float64) int {
	for n := 1; n < 100; n++ {
		if 2/binomialCoefficient(2*n, n) < alpha {
			return n
		}
	}
	return 100
}

func binomialCoefficient(n, k int) float64 {
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return c
}

// UTest is the result of a two-sided Mann-Whitney U test.
type UTest struct {
	N1, N2 int
	// U is the statistic of the first sample: the number of pairs (a, b) with
	// a > b, ties counting 1/2 (scipy's convention). The second sample's U is N1*N2-U.
	U     float64
	P     float64 // two-sided p-value
	Exact bool    // exact distribution (no ties, both n <= ExactULimit); else normal approximation
	Ties  bool
	Note  string
}

// MannWhitney runs a two-sided Mann-Whitney U test of a against b.
// Without ties and with both sizes <= ExactULimit the p-value is exact:
// 2*P(U <= min(U, N1*N2-U)), capped at 1. Otherwise it uses the normal
// approximation with tie correction and continuity correction.
func MannWhitney(a, b []float64) (UTest, error) {
	n1, n2 := len(a), len(b)
	t := UTest{N1: n1, N2: n2}
	if n1 == 0 || n2 == 0 {
		return t, fmt.Errorf("mann-whitney test: empty sample (n1=%d, n2=%d)", n1, n2)
	}
	type obs struct {
		v     float64
		first bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range a {
		all = append(all, obs{v, true})
	}
	for _, v := range b {
		all = append(all, obs{v, false})
	}
	slices.SortFunc(all, func(x, y obs) int {
		switch {
		case x.v < y.v:
			return -1
		case x.v > y.v:
			return 1
		}
		return 0
	})
	// Average ranks over runs of equal values; collect sum(t^3 - t) for the tie correction.
	var rankSumA, tieTerm float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		avgRank := float64(i+1+j) / 2 // ranks i+1..j
		for k := i; k < j; k++ {
			if all[k].first {
				rankSumA += avgRank
			}
		}
		if run := float64(j - i); run > 1 {
			t.Ties = true
			tieTerm += run*run*run - run
		}
		i = j
	}
	t.U = rankSumA - float64(n1*(n1+1))/2
	mn := float64(n1 * n2)
	if !t.Ties && n1 <= ExactULimit && n2 <= ExactULimit {
		t.Exact = true
		lower := math.Min(t.U, mn-t.U)
		t.P = math.Min(1, 2*exactUCDF(n1, n2, int(math.Round(lower))))
		return t, nil
	}
	n := float64(n1 + n2)
	sigma := math.Sqrt(mn / 12 * ((n + 1) - tieTerm/(n*(n-1))))
	if sigma == 0 {
		t.P = 1
		t.Note = "all values are equal"
		return t, nil
	}
	z := math.Max(0, math.Abs(t.U-mn/2)-0.5) / sigma
	t.P = math.Min(1, 2*distuv.UnitNormal.Survival(z))
	return t, nil
}

// exactUCDF returns P(U <= u) under H0 for sample sizes m and n without ties.
// counts(m, n)[u] = counts(m-1, n)[u-n] + counts(m, n-1)[u]: the largest of
// the m+n values belongs to the first sample (beating all n others) or not.
func exactUCDF(m, n, u int) float64 {
	// prev[i] holds counts(i, j-1); cur[i] holds counts(i, j).
	prev := make([][]float64, m+1)
	for i := range prev {
		prev[i] = []float64{1} // counts(i, 0): U is always 0
	}
	for j := 1; j <= n; j++ {
		cur := make([][]float64, m+1)
		cur[0] = []float64{1}
		for i := 1; i <= m; i++ {
			c := make([]float64, i*j+1)
			copy(c, prev[i])
			for v, cnt := range cur[i-1] {
				c[v+j] += cnt
			}
			cur[i] = c
		}
		prev = cur
	}
	counts := prev[m]
	var below, total float64
	for v, cnt := range counts {
		total += cnt
		if v <= u {
			below += cnt
		}
	}
	return below / total
}

// RatioCI is a bootstrap confidence interval for median(B)/median(A).
type RatioCI struct {
	OK         bool
	Lo, Hi     float64
	Confidence float64
	Resamples  int
	Note       string
}

// BootstrapMedianRatio computes a percentile-bootstrap CI of median(b)/median(a):
// each resample draws len(a) values from a, then len(b) values from b, with
// replacement from rng, and takes the ratio of their medians; the interval is
// the nearest-rank (1-c)/2 and (1+c)/2 quantiles of the resampled ratios.
// It needs at least MinCISamples(confidence) values on each side.
func BootstrapMedianRatio(a, b []float64, rng *rand.Rand, resamples int, confidence float64) RatioCI {
	need := MinCISamples(confidence)
	if len(a) < need || len(b) < need {
		return RatioCI{Note: fmt.Sprintf("n too small: a ratio CI needs n >= %d per side (have %d and %d)", need, len(a), len(b))}
	}
	if resamples < 1 {
		resamples = DefaultResamples
	}
	ratios := make([]float64, resamples)
	ra, rb := make([]float64, len(a)), make([]float64, len(b))
	for i := range ratios {
		for j := range ra {
			ra[j] = a[rng.IntN(len(a))]
		}
		for j := range rb {
			rb[j] = b[rng.IntN(len(b))]
		}
		slices.Sort(ra)
		slices.Sort(rb)
		ratios[i] = ratio(medianSorted(rb), medianSorted(ra))
	}
	slices.Sort(ratios)
	return RatioCI{
		OK:         true,
		Lo:         percentileSorted(ratios, (1-confidence)/2),
		Hi:         percentileSorted(ratios, (1+confidence)/2),
		Confidence: confidence,
		Resamples:  resamples,
	}
}

// ratio is num/den with 0/0 = 1 (both unchanged at zero) and x/0 = +Inf.
func ratio(num, den float64) float64 {
	if den == 0 {
		if num == 0 {
			return 1
		}
		return math.Copysign(math.Inf(1), num)
	}
	return num / den
}

// SampleComparison compares sample A (the reference: old, upstream, baseline)
// with sample B (the candidate: new, ours, current).
type SampleComparison struct {
	A, B        Stats
	Ratio       float64 // median(B) / median(A); 1 when both are 0, +Inf when only A is 0
	RatioCI     RatioCI
	Tested      bool // false when a side has fewer than MinTestSamples values
	Test        UTest
	Significant bool // Tested and Test.P < alpha
	Warnings    []string
}

// CompareSamples summarizes a and b, tests them and bootstraps the ratio of
// medians with rng (nil: a PCG seeded with opt.Seed).
func CompareSamples(a, b []float64, rng *rand.Rand, opt Options) SampleComparison {
	if rng == nil {
		rng = rand.New(rand.NewPCG(opt.Seed, 0))
	}
	c := SampleComparison{
		A: Summarize(a, opt.Confidence),
		B: Summarize(b, opt.Confidence),
	}
	c.Ratio = ratio(c.B.Median, c.A.Median)
	if len(a) == 0 || len(b) == 0 {
		c.Ratio = math.NaN()
		c.Warnings = append(c.Warnings, fmt.Sprintf("no data on one side (n=%d vs n=%d)", len(a), len(b)))
		return c
	}
	if need := MinTestSamples(opt.Alpha); len(a) < need || len(b) < need {
		c.Warnings = append(c.Warnings, fmt.Sprintf("no test possible: need n >= %d per side (have %d and %d)", need, len(a), len(b)))
	} else {
		t, err := MannWhitney(a, b)
		if err == nil {
			c.Tested, c.Test = true, t
			c.Significant = t.P < opt.Alpha
			if t.Note != "" {
				c.Warnings = append(c.Warnings, t.Note)
			}
		}
	}
	c.RatioCI = BootstrapMedianRatio(a, b, rng, opt.Resamples, opt.Confidence)
	if !c.RatioCI.OK {
		c.Warnings = append(c.Warnings, "no CI: "+c.RatioCI.Note)
	}
	return c
}

// Verdict is benchstat's delta column: "~" when the difference is not
// significant (or cannot be tested), else the change of the median in percent.
func (c SampleComparison) Verdict() string {
	if !c.Significant {
		return "~"
	}
	if math.IsInf(c.Ratio, 1) {
		return "+∞"
	}
	return fmt.Sprintf("%+.1f%%", (c.Ratio-1)*100)
}

// Distribution summarizes many pooled values (per-node latencies over all repetitions).
type Distribution struct {
	N      int
	Min    float64
	Median float64
	P90    float64 // nearest rank
	P99    float64 // nearest rank
	Max    float64
	Mean   float64
}

// Distribute summarizes xs with nearest-rank percentiles.
func Distribute(xs []float64) Distribution {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	nan := math.NaN()
	d := Distribution{N: len(sorted), Min: nan, Median: nan, P90: nan, P99: nan, Max: nan, Mean: nan}
	if len(sorted) == 0 {
		return d
	}
	d.Min, d.Max = sorted[0], sorted[len(sorted)-1]
	d.Median = medianSorted(sorted)
	d.P90 = percentileSorted(sorted, 0.90)
	d.P99 = percentileSorted(sorted, 0.99)
	d.Mean = stat.Mean(sorted, nil)
	return d
}

func pct(f float64) string {
	return fmt.Sprintf("%g%%", math.Round(f*1000)/10)
}
