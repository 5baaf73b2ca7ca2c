package reports

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// BaselineSchemaVersion identifies the layout of bench/baseline.json.
const BaselineSchemaVersion = "dsbench.baseline/v1"

// DefaultTolerance is the median ratio a metric may worsen by before a
// significant change fails the gate.
const DefaultTolerance = 1.25

// DefaultTimeTolerance is the least tolerance NewBaseline gives a wall-clock
// time. Ours ÷ upstream of one time moves more from run to run than within a
// run: the create step of bench-rollout and of bench-churn-rollout is the
// same work (1000 pods), yet its median ratio was 1.18 and 1.00 in one
// `make bench` and 1.02 and 1.31 two runs later, where the first run's
// samples spread only ×1.19 and ×1.11. Counts, CPU and memory keep the
// file's tolerance.
const DefaultTimeTolerance = 1.5

// isWallTime says whether the metric is elapsed time (CPU seconds are not).
func isWallTime(m Metric) bool { return m.Unit == "s" && m.Key != MetricCPU.Key }

// MaxTolerance caps every tolerance, the file's and those NewBaseline
// derives from a wide spread: a gate that lets a metric get more than twice
// as bad catches nothing worth catching.
const MaxTolerance = 2.0

// DefaultMinSeconds is the floor under which a time does not fail the gate.
// On the 2-core VM a step of half a second moves by a quarter of a second
// from run to run (bench-node-churn's 50-node relabel: 0.33–0.50 s in one
// run of ours, 0.44–0.81 s in the next), so a ratio tolerance alone would
// fail on noise.
const DefaultMinSeconds = 1.0

// Baseline holds reference samples per (scenario, nodes, controller, metric).
type Baseline struct {
	SchemaVersion string    `json:"schemaVersion"`
	Created       time.Time `json:"created"`
	GitCommit     string    `json:"gitCommit,omitempty"`
	// Kwok is the simulator the baseline was measured on (the report's
	// versions.kwok). A run on another one is not compared with it: a
	// change of simulator moves the controllers' times unequally, and the
	// comparison would judge the simulator as much as the controller.
	Kwok string `json:"kwok,omitempty"`
	// Tolerance is the default allowed worsening of the median, as a ratio (1.25 = 25% worse).
	Tolerance float64 `json:"tolerance"`
	// MinSeconds: a time metric (unit s) whose current median for the
	// controller is under this many seconds only warns when it worsens;
	// 0: no floor.
	MinSeconds float64         `json:"minSeconds,omitempty"`
	Entries    []BaselineEntry `json:"entries"`
}

// BaselineEntry is the reference for one metric. Samples allow the U test;
// an entry with only Median can be compared but never tested.
type BaselineEntry struct {
	Scenario       string    `json:"scenario"`
	Nodes          int       `json:"nodes,omitempty"` // 0 matches every node count
	Controller     string    `json:"controller"`
	Metric         string    `json:"metric"` // Metric.Key
	HigherIsBetter bool      `json:"higherIsBetter,omitempty"`
	Samples        []float64 `json:"samples,omitempty"`
	Median         *float64  `json:"median,omitempty"`
	Tolerance      float64   `json:"tolerance,omitempty"` // overrides Baseline.Tolerance
	// RelativeTo, when set (to "upstream"), makes Samples the ratios of
	// Controller's value to RelativeTo's in the same repetition of the same
	// run, so that a machine that is slower or faster as a whole moves both
	// sides and not the ratio.
	RelativeTo string `json:"relativeTo,omitempty"`
}

// NewBaseline makes a baseline from the successful runs of our controller in r,
// keeping every sample so that the gate can test. Where r also measured
// upstream in the same case, the entries are relative to it (ours ÷ upstream,
// per repetition): a baseline is then comparable across machines and days,
// which absolute seconds on a shared 2-core VM are not.
func NewBaseline(r *Report, tolerance float64) *Baseline {
	b := &Baseline{SchemaVersion: BaselineSchemaVersion, Created: r.GeneratedAt, GitCommit: r.Versions.GitCommit, Kwok: r.Versions.Kwok, Tolerance: tolerance, MinSeconds: DefaultMinSeconds}
	groups := Groups(r)
	for i := range groups {
		g := &groups[i]
		if g.Controller != ControllerOurs {
			continue
		}
		ref := findGroup(groups, g.Case, ControllerUpstream)
		for _, s := range g.Metrics {
			if IsSetupMetric(s.Metric.Key) || IsClusterShare(s.Metric.Key) || IsClusterRecord(s.Metric.Key) {
				continue // the harness's and the cluster's doing, not the controller's
			}
			e := BaselineEntry{
				Scenario: g.Case.Scenario, Nodes: g.Case.Nodes, Controller: g.Controller,
				Metric: s.Metric.Key, HigherIsBetter: s.Metric.HigherIsBetter, Samples: slices.Clone(s.Values),
			}
			if ref != nil {
				e.RelativeTo, e.Samples = ControllerUpstream, pairedRatios(g, ref, s.Metric.Key)
				if len(e.Samples) == 0 {
					continue
				}
			}
			tol := tolerance
			if isWallTime(s.Metric) {
				tol = max(tol, DefaultTimeTolerance)
			}
			if spread := sampleSpread(e.Samples); spread > tol {
				tol = math.Ceil(spread*100) / 100
			}
			tol = min(tol, MaxTolerance)
			if tol != tolerance {
				e.Tolerance = tol
			}
			b.Entries = append(b.Entries, e)
		}
	}
	return b
}

// sampleSpread is max ÷ min of positive samples (0 when there are fewer
// than two, or any is not positive). A metric whose repetitions in one run
// differ by this much moves as much between two runs of the same code: the
// per-node rollout p99 of bench-rollout spread ×1.34 in the baseline's run,
// and the next run's median was ×1.26 the baseline's, p 0.032, with nothing
// changed. Its tolerance is therefore at least its spread.
func sampleSpread(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if lo <= 0 {
		return 0
	}
	return hi / lo
}

// IsClusterShare says whether the metric is the cluster's share of a
// measurement (nodes becoming eligible, the pod GC): reported, never gated.
func IsClusterShare(key string) bool {
	return key == MetricNodeEligibleP99.Key || key == MetricPodGCWaitMax.Key
}

// IsClusterRecord says whether the metric counts what the cluster did on its
// own: kube-apiserver closing watches it found unresponsive, kwok watching
// again. Reported, never in a baseline: the simulator must not decide a
// verdict, and the first baseline that held them (f7c2762) could have failed
// ours for closes of kwok's watch.
func IsClusterRecord(key string) bool {
	switch strings.TrimPrefix(key, "extra:") {
	case MetricAPIServerPodWatchesClosed, MetricAPIServerNodeWatchesClosed, MetricKwokPodWatchCloses, MetricKwokPodWatchReplays:
		return true
	}
	return false
}

// IsSetupMetric says whether the metric times the runner's preparation of a
// run (reset, nodes, controller start): reported, never in a baseline.
func IsSetupMetric(key string) bool { return strings.HasPrefix(key, "extra:setup-") }

// pairedRatios divides g's value of the metric by ref's in each repetition
// that both measured. Repetitions with an infinite ratio (x/0) are left out.
func pairedRatios(g, ref *Group, key string) []float64 {
	a, b := g.Lookup(key), ref.Lookup(key)
	if a == nil || b == nil {
		return nil
	}
	byRep := map[int]float64{}
	for i, rep := range b.Repetitions {
		byRep[rep] = b.Values[i]
	}
	var out []float64
	for i, rep := range a.Repetitions {
		den, ok := byRep[rep]
		if !ok {
			continue
		}
		if q := ratio(a.Values[i], den); !math.IsInf(q, 0) && !math.IsNaN(q) {
			out = append(out, q)
		}
	}
	return out
}

// ReadBaseline reads a baseline JSON file.
func ReadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading baseline: %w", err)
	}
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("reading baseline %s: decoding JSON: %w", path, err)
	}
	if b.SchemaVersion != BaselineSchemaVersion {
		return nil, fmt.Errorf("reading baseline %s: schemaVersion %q: %w (want %q)", path, b.SchemaVersion, ErrSchemaVersion, BaselineSchemaVersion)
	}
	return &b, nil
}

// WriteBaseline writes b to path atomically.
func WriteBaseline(path string, b *Baseline) error {
	out := *b
	if out.SchemaVersion == "" {
		out.SchemaVersion = BaselineSchemaVersion
	}
	data, err := marshalJSON(&out)
	if err != nil {
		return fmt.Errorf("writing baseline %s: %w", path, err)
	}
	return writeFileAtomic(path, data)
}

// GateStatus is the verdict on one baseline entry.
type GateStatus string

const (
	GatePass      GateStatus = "pass"      // no significant worsening beyond tolerance
	GateRegressed GateStatus = "regressed" // p < alpha and the median ratio is beyond tolerance: fails the gate
	GateImproved  GateStatus = "improved"  // p < alpha and better
	GateUntested  GateStatus = "untested"  // too few samples, or a median-only baseline: a warning
	GateMissing   GateStatus = "missing"   // the report has no values for the entry: the run does not match the baseline, a failure
	// GateUnderFloor: worse as GateRegressed, but the time is still under
	// the baseline's MinSeconds, where noise is as large as the value: a warning.
	GateUnderFloor GateStatus = "under-floor"
)

// GateCheck is the comparison of one baseline entry with the report.
type GateCheck struct {
	Case       Case
	Controller string
	Metric     Metric // Metric.HigherIsBetter flips the direction: Worsening = baseline/current
	Status     GateStatus
	Tolerance  float64
	// Worsening is the median ratio oriented so that > 1 is worse
	// (current/baseline, or its inverse for higher-is-better metrics).
	Worsening float64
	SampleComparison
	Detail string
}

// GateResult is the outcome of Gate. Pass is false iff Failures is non-empty.
type GateResult struct {
	Pass     bool
	Failures []string
	Warnings []string
	Checks   []GateCheck
}

// Gate checks r against the baseline b (nil: invariants only) with DefaultOptions.
// It fails when an invariant does not hold for our controller (unexpected
// violations, over-unavailability, non-convergence, failed runs, missing data),
// or when a metric is significantly worse (Mann-Whitney p < alpha) and its
// median worsened beyond the tolerance. Invariant failures of upstream and
// untestable comparisons are warnings.
func Gate(r *Report, b *Baseline) GateResult { return GateWith(r, b, DefaultOptions()) }

// GateWith is Gate with explicit options.
func GateWith(r *Report, b *Baseline, opt Options) GateResult {
	var res GateResult
	for _, f := range CheckInvariants(r) {
		line := fmt.Sprintf("%s %s#%d: %s: %s", f.Controller, Case{f.Scenario, f.Nodes}, f.Repetition, f.Check, f.Detail)
		if f.Check == CheckNoRuns {
			line = f.Detail
		}
		if f.Severity == SeverityFail && (f.Controller == ControllerOurs || f.Check == CheckNoRuns) {
			res.Failures = append(res.Failures, line)
		} else {
			res.Warnings = append(res.Warnings, line)
		}
	}
	if b != nil && !sameSimulator(r, b, &res) {
		b = nil
	}
	if b != nil {
		tol := b.Tolerance
		if tol == 0 {
			tol = DefaultTolerance
		}
		if tol < 1 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("baseline tolerance %g < 1 makes no sense; using %g", tol, DefaultTolerance))
			tol = DefaultTolerance
		}
		groups := Groups(r)
		for _, e := range b.Entries {
			res.Checks = append(res.Checks, gateEntry(groups, e, tol, b.MinSeconds, opt)...)
		}
		compared := 0
		for _, c := range res.Checks {
			line := fmt.Sprintf("%s %s %s: %s", c.Controller, c.Case, c.Metric.Key, c.Detail)
			switch c.Status {
			case GateRegressed, GateMissing:
				res.Failures = append(res.Failures, line)
			case GateUntested, GateUnderFloor:
				res.Warnings = append(res.Warnings, line)
			}
			if c.Tested {
				compared++
			}
		}
		res.Failures = append(res.Failures, uncovered(groups, b)...)
		if compared == 0 {
			res.Failures = append(res.Failures, fmt.Sprintf("the gate compared nothing: none of the baseline's %d entries could be tested against this run "+
				"(its scenarios, node counts, controllers or repetitions do not match the baseline's); run without the gate (--no-gate, or --baseline '') to only report", len(b.Entries)))
		}
	}
	res.Pass = len(res.Failures) == 0
	return res
}

// sameSimulator says whether r ran on the kwok that b was measured on. A
// baseline that does not say is compared, with a warning; one of another
// kwok is a failure, since a change of simulator moves the controllers'
// times unequally and no comparison with it is a verdict.
func sameSimulator(r *Report, b *Baseline, res *GateResult) bool {
	switch {
	case b.Kwok == "":
		res.Warnings = append(res.Warnings, "the baseline does not say which kwok it was measured on (it predates baseline.kwok): compared as if it were this run's "+r.Versions.Kwok)
		return true
	case b.Kwok != r.Versions.Kwok:
		res.Failures = append(res.Failures, fmt.Sprintf("the baseline was measured on kwok %s and this run on kwok %s: no comparison across simulators is a verdict "+
			"(make bench-baseline re-measures it on this one; --baseline '' only reports)", b.Kwok, r.Versions.Kwok))
		return false
	}
	return true
}

// uncovered names the cases of our controller in the report that the
// baseline has no entry for: a run of other scenarios or another size is
// not gated by this baseline, and must not pass as if it were.
func uncovered(groups []Group, b *Baseline) []string {
	var out []string
	for _, g := range groups {
		if g.Controller != ControllerOurs {
			continue
		}
		if !slices.ContainsFunc(b.Entries, func(e BaselineEntry) bool {
			return e.Scenario == g.Case.Scenario && (e.Nodes == 0 || e.Nodes == g.Case.Nodes) && cmp.Or(e.Controller, ControllerOurs) == g.Controller
		}) {
			out = append(out, fmt.Sprintf("%s %s: the baseline has no entry for this case, so nothing about it was gated (run without the gate to only report)", g.Controller, g.Case))
		}
	}
	return out
}

func gateEntry(groups []Group, e BaselineEntry, tol, minSeconds float64, opt Options) []GateCheck {
	if e.RelativeTo != "" && e.RelativeTo != ControllerUpstream {
		return []GateCheck{{
			Case: Case{e.Scenario, e.Nodes}, Controller: cmp.Or(e.Controller, ControllerOurs), Metric: Metric{Key: e.Metric, Label: e.Metric},
			Status: GateMissing, Tolerance: tol, Worsening: math.NaN(), Detail: fmt.Sprintf("relativeTo %q: only %q is supported", e.RelativeTo, ControllerUpstream),
		}}
	}
	if e.Tolerance >= 1 {
		tol = e.Tolerance
	}
	tol = min(tol, MaxTolerance)
	controller := cmp.Or(e.Controller, ControllerOurs)
	var matched []*Group
	for i := range groups {
		g := &groups[i]
		if g.Case.Scenario == e.Scenario && (e.Nodes == 0 || g.Case.Nodes == e.Nodes) && g.Controller == controller {
			matched = append(matched, g)
		}
	}
	if len(matched) == 0 {
		return []GateCheck{{
			Case: Case{e.Scenario, e.Nodes}, Controller: controller, Metric: Metric{Key: e.Metric, Label: e.Metric, HigherIsBetter: e.HigherIsBetter},
			Status: GateMissing, Tolerance: tol,
			Worsening: math.NaN(), Detail: "scenario not in this report",
		}}
	}
	var out []GateCheck
	for _, g := range matched {
		m := Metric{Key: e.Metric, Label: e.Metric}
		if s := g.Lookup(e.Metric); s != nil {
			m = s.Metric
		}
		m.HigherIsBetter = e.HigherIsBetter
		// The floor looks at the controller's own time, also for a ratio.
		own := seriesValues(g, e.Metric)
		underFloor := isWallTime(m) && minSeconds > 0 && len(own) > 0 && Median(own) < minSeconds
		var cur []float64
		if e.RelativeTo == "" {
			cur = own
		} else {
			m = Metric{Key: e.Metric + " ÷ " + e.RelativeTo, Label: m.Label + " ÷ " + e.RelativeTo, Unit: "ratio", HigherIsBetter: e.HigherIsBetter}
			ref := findGroup(groups, g.Case, e.RelativeTo)
			if ref == nil {
				out = append(out, GateCheck{Case: g.Case, Controller: controller, Metric: m, Status: GateMissing, Tolerance: tol, Worsening: math.NaN(),
					Detail: fmt.Sprintf("the baseline is relative to %s, which this report did not measure (run with --controller both)", e.RelativeTo)})
				continue
			}
			cur = pairedRatios(g, ref, e.Metric)
		}
		c := GateCheck{Case: g.Case, Controller: controller, Metric: m, Tolerance: tol}
		base := e.Samples
		if len(base) == 0 && e.Median != nil {
			base = []float64{*e.Median}
		}
		rng := seriesRand(opt.Seed, "gate|"+g.Case.String()+"|"+controller+"|"+e.Metric)
		c.SampleComparison = CompareSamples(base, cur, rng, opt)
		c.Worsening = c.Ratio
		if e.HigherIsBetter {
			c.Worsening = ratio(1, c.Ratio)
		}
		beyond := c.Worsening > tol
		ratioText := fmt.Sprintf("median %s → %s (×%s, tolerance ×%g)", fmtValue(m, c.A.Median), fmtValue(m, c.B.Median), fmtRatio(c.Ratio), tol)
		if e.HigherIsBetter {
			ratioText += ", higher is better"
		}
		switch {
		case len(cur) == 0:
			c.Status, c.Detail = GateMissing, "no values in this report"
		case len(base) == 0:
			c.Status, c.Detail = GateMissing, "baseline entry has neither samples nor a median"
		case len(e.Samples) == 0:
			c.Status, c.Detail = GateUntested, ratioText+"; baseline has a median only: no test possible"
		case !c.Tested:
			c.Status, c.Detail = GateUntested, ratioText+"; "+strings.Join(c.Warnings, "; ")
		case c.Significant && beyond && underFloor:
			c.Status, c.Detail = GateUnderFloor, ratioText+fmt.Sprintf(", p=%.3f; the time itself, median %.2f s, is under the %g s floor", c.Test.P, Median(own), minSeconds)
		case c.Significant && beyond:
			c.Status, c.Detail = GateRegressed, ratioText+fmt.Sprintf(", p=%.3f", c.Test.P)
		case c.Significant && c.Worsening < 1:
			c.Status, c.Detail = GateImproved, ratioText+fmt.Sprintf(", p=%.3f", c.Test.P)
		default:
			c.Status, c.Detail = GatePass, ratioText+fmt.Sprintf(", p=%.3f", c.Test.P)
		}
		out = append(out, c)
	}
	return out
}

// Regressions returns up to n checks that got worse (Worsening > 1), the
// regressed ones first, then by Worsening descending.
func (g GateResult) Regressions(n int) []GateCheck {
	var out []GateCheck
	for _, c := range g.Checks {
		if c.Worsening > 1 {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b GateCheck) int {
		if ar, br := a.Status == GateRegressed, b.Status == GateRegressed; ar != br {
			if ar {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.Worsening, a.Worsening)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// Verdict is "PASS" or "FAIL".
func (g GateResult) Verdict() string {
	if g.Pass {
		return "PASS"
	}
	return "FAIL"
}

// Markdown renders the gate verdict, its failures and warnings, and the top regressions.
func (g GateResult) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Gate: %s** (%d failures, %d warnings, %d baseline checks)\n\n", g.Verdict(), len(g.Failures), len(g.Warnings), len(g.Checks))
	for _, f := range g.Failures {
		fmt.Fprintf(&b, "- FAIL: %s\n", mdEscape(f))
	}
	for _, w := range g.Warnings {
		fmt.Fprintf(&b, "- warn: %s\n", mdEscape(w))
	}
	if len(g.Failures)+len(g.Warnings) > 0 {
		b.WriteString("\n")
	}
	if len(g.Checks) == 0 {
		return b.String()
	}
	if t, ok := g.regressionTable(); ok {
		b.WriteString("Top regressions against the baseline:\n\n")
		b.WriteString(t.markdown(""))
	} else {
		b.WriteString("No metric is worse than the baseline.\n\n")
	}
	return b.String()
}

func (g GateResult) regressionTable() (table, bool) {
	regs := g.Regressions(10)
	t := table{
		Header: []string{"case", "controller", "metric", "baseline median", "current median", "ratio [CI]", "p", "tolerance", "status"},
		Right:  []bool{false, false, false, true, true, true, true, true, false},
	}
	for _, c := range regs {
		metric := c.Metric.Key
		if c.Metric.HigherIsBetter {
			metric += " ↑"
		}
		t.Rows = append(t.Rows, []string{
			c.Case.String(), c.Controller, metric, fmtValue(c.Metric, c.A.Median), fmtValue(c.Metric, c.B.Median),
			fmtRatioCI(c.SampleComparison), fmtP(c.SampleComparison), fmt.Sprintf("×%g", c.Tolerance), string(c.Status),
		})
	}
	return t, len(regs) > 0
}
