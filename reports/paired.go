package reports

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Paired compares two controllers run by run: ours and upstream run
// interleaved, repetition i of each next to the other, so drift of the
// machine hits both members of a pair alike. Each pair gives a log ratio
// ln(B/A); the interval is the t interval of their mean, turned back into a
// ratio (the geometric mean of the per-pair ratios), and p is the exact
// two-sided Wilcoxon signed-rank test of the log ratios against 0.
type Paired struct {
	N int // pairs used: both sides measured and both values positive
	// Ratio is the geometric mean of the per-pair ratios B/A; Lo and Hi
	// its confidence interval (OK false when N < 2 or all ratios equal 1).
	Ratio, Lo, Hi float64
	OK            bool
	// P is the signed-rank p-value; Tested false when every pair tied.
	P      float64
	Tested bool
	// Skipped counts pairs with a zero or missing value (no log ratio).
	Skipped int
}

// PairSamples pairs two series by repetition and analyses the log ratios.
func PairSamples(a, b *Series, confidence float64) Paired {
	var out Paired
	if a == nil || b == nil {
		return out
	}
	byRep := map[int]float64{}
	for i, v := range a.Values {
		if i < len(a.Repetitions) {
			byRep[a.Repetitions[i]] = v
		}
	}
	var logs []float64
	for i, vb := range b.Values {
		if i >= len(b.Repetitions) {
			break
		}
		va, ok := byRep[b.Repetitions[i]]
		if !ok {
			continue
		}
		if va <= 0 || vb <= 0 || math.IsInf(va, 0) || math.IsInf(vb, 0) || math.IsNaN(va) || math.IsNaN(vb) {
			out.Skipped++
			continue
		}
		logs = append(logs, math.Log(vb/va))
	}
	out.N = len(logs)
	if out.N == 0 {
		return out
	}
	mean := stat.Mean(logs, nil)
	out.Ratio = math.Exp(mean)
	if out.N >= 2 {
		sd := stat.StdDev(logs, nil)
		if sd > 0 {
			q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(out.N - 1)}.Quantile((1 + confidence) / 2)
			half := q * sd / math.Sqrt(float64(out.N))
			out.Lo, out.Hi, out.OK = math.Exp(mean-half), math.Exp(mean+half), true
		} else {
			out.Lo, out.Hi, out.OK = out.Ratio, out.Ratio, true
		}
	}
	out.P, out.Tested = SignedRank(logs)
	return out
}

// SignedRank is the exact two-sided Wilcoxon signed-rank test of d against
// a median of 0: zeros are dropped, ties get average ranks, and the p-value
// counts the sign assignments (all 2^n, n <= 20; a normal approximation
// with tie correction above) whose rank sum is at least as extreme.
func SignedRank(d []float64) (p float64, ok bool) {
	var nz []float64
	for _, x := range d {
		if x != 0 {
			nz = append(nz, x)
		}
	}
	n := len(nz)
	if n == 0 {
		return 1, false
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int { return cmpFloat(math.Abs(nz[i]), math.Abs(nz[j])) })
	ranks := make([]float64, n)
	tieTerm := 0.0
	for i := 0; i < n; {
		j := i
		for j+1 < n && math.Abs(nz[idx[j+1]]) == math.Abs(nz[idx[i]]) {
			j++
		}
		avg := float64(i+j+2) / 2
		for k := i; k <= j; k++ {
			ranks[idx[k]] = avg
		}
		t := float64(j - i + 1)
		tieTerm += t*t*t - t
		i = j + 1
	}
	wPlus, total := 0.0, 0.0
	for i, x := range nz {
		total += ranks[i]
		if x > 0 {
			wPlus += ranks[i]
		}
	}
	mid := total / 2
	dev := math.Abs(wPlus - mid)
	if n <= 20 {
		extreme := 0
		for mask := 0; mask < 1<<n; mask++ {
			w := 0.0
			for i := 0; i < n; i++ {
				if mask&(1<<i) != 0 {
					w += ranks[i]
				}
			}
			if math.Abs(w-mid) >= dev-1e-9 {
				extreme++
			}
		}
		return float64(extreme) / float64(int(1)<<n), true
	}
	nf := float64(n)
	variance := nf*(nf+1)*(2*nf+1)/24 - tieTerm/48
	z := dev / math.Sqrt(variance)
	return math.Min(1, 2*distuv.UnitNormal.Survival(z)), true
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fmtPaired renders a paired ratio with its interval.
func fmtPaired(p Paired) string {
	if p.N == 0 {
		return "—"
	}
	if !p.OK {
		return fmt.Sprintf("%s (n=%d)", fmtRatio(p.Ratio), p.N)
	}
	return fmt.Sprintf("%s [%s, %s]", fmtRatio(p.Ratio), fmtRatio(p.Lo), fmtRatio(p.Hi))
}
