package reports

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

// newRun builds a successful run whose single step converged in seconds.
func newRun(scenario, controller string, rep int, seconds float64) Run {
	start := t0.Add(time.Duration(rep) * time.Minute)
	return Run{
		Scenario: scenario, Controller: controller, Repetition: rep, Nodes: 100,
		Start: start, End: start.Add(time.Minute), Outcome: OutcomeOK,
		Steps:     []Step{{Name: "create", Kind: "create", Start: start, Converged: true, Seconds: seconds}},
		Resources: Resources{CPUSeconds: seconds / 10},
		Coverage:  Coverage{PodsExpected: 100, PodsObserved: 100, ObservedFraction: 1},
	}
}

// newReport builds a report with one run per value for each controller.
func newReport(ours, upstream []float64) *Report {
	r := &Report{SchemaVersion: SchemaVersion, GeneratedAt: t0, Params: Params{Scenarios: []string{"s"}, Nodes: 100}}
	for i, v := range ours {
		r.Runs = append(r.Runs, newRun("s", ControllerOurs, i, v))
	}
	for i, v := range upstream {
		r.Runs = append(r.Runs, newRun("s", ControllerUpstream, i, v))
	}
	return r
}

func scaled(xs []float64, f float64) []float64 {
	out := slices.Clone(xs)
	for i := range out {
		out[i] *= f
	}
	return out
}

func TestGate(t *testing.T) {
	base := []float64{10.0, 10.4, 9.8, 10.1, 10.6, 9.9, 10.2, 10.3}
	baseline := NewBaseline(newReport(base, nil), 1.25)
	tests := []struct {
		name      string
		report    *Report
		baseline  *Baseline
		pass      bool
		status    GateStatus // of the "converge" check
		failures  []string   // substrings, one per failure
		warnsWith string     // substring of some warning
	}{
		{name: "equal passes", report: newReport(base, nil), baseline: baseline, pass: true, status: GatePass},
		{
			name: "slowed 2x fails", report: newReport(scaled(base, 2), nil), baseline: baseline, status: GateRegressed,
			// Medians: (10.1+10.2)/2 = 10.15, x2 = 20.30; exact p = 2/C(16,8) = 0.00016.
			failures: []string{
				"converge: median 10.15 → 20.30 (×2.000, tolerance ×1.5), p=0.000",
				"step:create: median 10.15 → 20.30",
				"cpu: median 1.02 → 2.03 (×2.000, tolerance ×1.25)",
			},
		},
		{
			// Times get DefaultTimeTolerance; CPU keeps the file's ×1.25.
			name: "slowed 1.4x fails on CPU only", report: newReport(scaled(base, 1.4), nil), baseline: baseline, status: GatePass,
			failures: []string{"cpu: median 1.02 → 1.42 (×1.400, tolerance ×1.25)"},
		},
		{name: "slower within tolerance passes", report: newReport(scaled(base, 1.2), nil), baseline: baseline, pass: true, status: GatePass},
		{name: "faster is improved", report: newReport(scaled(base, 0.5), nil), baseline: baseline, pass: true, status: GateImproved},
		{
			// Nothing could be tested: the gate compared nothing and fails.
			name: "too small n says so", report: newReport(scaled(base[:3], 2), nil), baseline: NewBaseline(newReport(base[:3], nil), 1.25),
			status: GateUntested, warnsWith: "no test possible: need n >= 4 per side (have 3 and 3)",
			failures: []string{"the gate compared nothing"},
		},
		{
			name: "median-only baseline is untested", report: newReport(scaled(base, 2), nil),
			baseline: &Baseline{SchemaVersion: BaselineSchemaVersion, Tolerance: 1.25, Entries: []BaselineEntry{
				{Scenario: "s", Controller: ControllerOurs, Metric: "converge", Median: ptr(10.0)},
			}},
			status: GateUntested, warnsWith: "baseline has a median only: no test possible",
			failures: []string{"the gate compared nothing"},
		},
		{
			name: "higher-is-better drop fails", report: withExtra(newReport(base, nil), 50), baseline: &Baseline{
				SchemaVersion: BaselineSchemaVersion, Tolerance: 1.25, Entries: []BaselineEntry{
					{Scenario: "s", Nodes: 100, Controller: ControllerOurs, Metric: "converge", Samples: base},
					{Scenario: "s", Nodes: 100, Controller: ControllerOurs, Metric: "extra:throughput", HigherIsBetter: true, Samples: []float64{80, 81, 79, 82, 80, 81}},
				}},
			// Current values 50,51,52,50,51,52,50,51: median 51; 51/80.5 = 0.634, worsening 1.58.
			status: GatePass, failures: []string{"extra:throughput: median 80.50 → 51.00 (×0.634, tolerance ×1.25), higher is better, p=0.002"},
		},
		{
			name: "unexpected violation of ours fails", report: withViolation(newReport(base, base), ControllerOurs, false), baseline: baseline,
			status: GatePass, failures: []string{"ours s (nodes=100)#0: unexpected-violation: 1 unexpected violation (extra-pod ×1)"},
		},
		{
			name: "expected violation passes", report: withViolation(newReport(base, base), ControllerOurs, true), baseline: baseline,
			pass: true, status: GatePass,
		},
		{
			name: "unexpected violation of upstream warns", report: withViolation(newReport(base, base), ControllerUpstream, false), baseline: baseline,
			pass: true, status: GatePass, warnsWith: "upstream s (nodes=100)#0: unexpected-violation",
		},
		{
			name: "missing data fails", report: withGap(newReport(base, nil)), baseline: baseline,
			status: GatePass, failures: []string{"watch-gap: 1 watch gap (pods 4.00s)"},
		},
		{name: "no baseline checks invariants only", report: newReport(base, nil), pass: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := Gate(tc.report, tc.baseline)
			if g.Pass != tc.pass {
				t.Errorf("Pass = %v, want %v\n%s", g.Pass, tc.pass, g.Markdown())
			}
			if len(g.Failures) != len(tc.failures) {
				t.Errorf("got %d failures, want %d:\n%s", len(g.Failures), len(tc.failures), strings.Join(g.Failures, "\n"))
			}
			for i, want := range tc.failures {
				if i < len(g.Failures) && !strings.Contains(g.Failures[i], want) {
					t.Errorf("failure %d = %q, want it to contain %q", i, g.Failures[i], want)
				}
			}
			if tc.warnsWith != "" && !slices.ContainsFunc(g.Warnings, func(w string) bool { return strings.Contains(w, tc.warnsWith) }) {
				t.Errorf("no warning contains %q:\n%s", tc.warnsWith, strings.Join(g.Warnings, "\n"))
			}
			if tc.status != "" {
				var got GateStatus
				for _, c := range g.Checks {
					if c.Metric.Key == MetricConverge.Key {
						got = c.Status
					}
				}
				if got != tc.status {
					t.Errorf("converge status = %q, want %q\n%s", got, tc.status, g.Markdown())
				}
			}
		})
	}
}

// A baseline measured beside upstream is compared through the same run's
// upstream: a machine that is slower as a whole passes, ours alone slower
// fails, and an absolute baseline would have failed the slow machine.
func TestGateRelativeToUpstream(t *testing.T) {
	base := []float64{10.0, 10.4, 9.8, 10.1, 10.6, 9.9, 10.2, 10.3}
	up := scaled(slices.Clone(base), 2)
	slices.Reverse(up)
	baseline := NewBaseline(newReport(base, up), 1.25)
	for _, e := range baseline.Entries {
		if e.RelativeTo != ControllerUpstream || len(e.Samples) != len(base) {
			t.Fatalf("entry %s: relativeTo %q with %d samples, want upstream with %d", e.Metric, e.RelativeTo, len(e.Samples), len(base))
		}
	}
	status := func(g GateResult) GateStatus {
		for _, c := range g.Checks {
			if c.Metric.Key == "converge ÷ upstream" {
				return c.Status
			}
		}
		return ""
	}
	if g := Gate(newReport(scaled(base, 1.5), scaled(up, 1.5)), baseline); !g.Pass || status(g) != GatePass {
		t.Errorf("a machine 1.5x slower for both controllers: pass=%v converge=%q, want a pass\n%s", g.Pass, status(g), g.Markdown())
	}
	if g := Gate(newReport(scaled(base, 2), scaled(base, 2)), NewBaseline(newReport(base, nil), 1.25)); g.Pass {
		t.Errorf("an absolute baseline passed a machine 2x slower; the relative test above proves nothing")
	}
	g := Gate(newReport(scaled(base, 2), up), baseline)
	if g.Pass || status(g) != GateRegressed {
		t.Errorf("ours alone 2x slower: pass=%v converge=%q, want regressed\n%s", g.Pass, status(g), g.Markdown())
	}
	if len(g.Failures) == 0 || !strings.Contains(g.Failures[0], "converge ÷ upstream: median 0.500 → 1.00 (×2.000") {
		t.Errorf("failures = %q", g.Failures)
	}
	// The flagship baseline is relative to upstream, and `dsbench run`
	// measures ours alone by default: that run compared nothing.
	g = Gate(newReport(base, nil), baseline)
	if g.Pass || !slices.ContainsFunc(g.Failures, func(w string) bool { return strings.Contains(w, "--controller both") }) ||
		!slices.ContainsFunc(g.Failures, func(w string) bool { return strings.Contains(w, "the gate compared nothing") }) {
		t.Errorf("a report without upstream against a relative baseline: pass=%v failures=%q, want a failure that says to measure upstream and that nothing was compared", g.Pass, g.Failures)
	}
}

// A run of other scenarios than the baseline's (dsbench run node-churn
// against the default suite's baseline) must not pass as gated: the
// baseline's scenario is missing, the run's is not covered, and nothing was
// compared; each is a failure.
func TestGateMissingScenario(t *testing.T) {
	b := &Baseline{SchemaVersion: BaselineSchemaVersion, Entries: []BaselineEntry{{Scenario: "gone", Controller: ControllerOurs, Metric: "converge", Samples: []float64{1, 2, 3, 4}}}}
	g := Gate(newReport([]float64{1, 2, 3, 4}, nil), b)
	if g.Pass || len(g.Checks) != 1 || g.Checks[0].Status != GateMissing {
		t.Errorf("got pass=%v checks=%+v, want a failing gate with one missing check", g.Pass, g.Checks)
	}
	for _, want := range []string{"scenario not in this report", "the baseline has no entry for this case", "the gate compared nothing"} {
		if !slices.ContainsFunc(g.Failures, func(f string) bool { return strings.Contains(f, want) }) {
			t.Errorf("no failure says %q: %q", want, g.Failures)
		}
	}
	if g.Checks[0].Case.String() != "gone (nodes=any)" {
		t.Errorf("case = %q", g.Checks[0].Case)
	}
}

func TestBaselineRoundTrip(t *testing.T) {
	r, _ := readTestdata(t)
	b := NewBaseline(r, 1.3)
	path := filepath.Join(t.TempDir(), "baseline.json")
	if err := WriteBaseline(path, b); err != nil {
		t.Fatalf("WriteBaseline: %v", err)
	}
	got, err := ReadBaseline(path)
	if err != nil {
		t.Fatalf("ReadBaseline: %v", err)
	}
	if diff := cmp.Diff(b, got); diff != "" {
		t.Errorf("baseline round trip (-want +got):\n%s", diff)
	}
	for _, e := range b.Entries {
		if e.Controller != ControllerOurs {
			t.Errorf("baseline entry for %q; NewBaseline keeps ours only", e.Controller)
		}
	}
	// A report gated against its own baseline passes every metric check.
	g := Gate(r, b)
	for _, c := range g.Checks {
		if c.Status == GateRegressed || c.Status == GateImproved {
			t.Errorf("self-comparison of %s %s: status %s", c.Case, c.Metric.Key, c.Status)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := WriteBaseline(bad, &Baseline{SchemaVersion: "dsbench.baseline/v0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBaseline(bad); !errors.Is(err, ErrSchemaVersion) {
		t.Errorf("ReadBaseline(v0) error = %v, want ErrSchemaVersion", err)
	}
}

func ptr[T any](v T) *T { return &v }

func withExtra(r *Report, v float64) *Report {
	for i := range r.Runs {
		r.Runs[i].Extra = []ExtraMetric{{Name: "throughput", Unit: "pods/s", Value: v + float64(i%3), HigherIsBetter: true}}
	}
	return r
}

func withViolation(r *Report, controller string, expected bool) *Report {
	for i := range r.Runs {
		run := &r.Runs[i]
		if run.Controller == controller && run.Repetition == 0 {
			run.Violations = append(run.Violations, Violation{DaemonSet: "ns/ds", Node: "n1", Kind: "extra-pod", Start: run.Start.Add(2 * time.Second), Seconds: 1, Expected: expected})
		}
	}
	return r
}

func withGap(r *Report) *Report {
	r.Runs[0].Coverage.WatchGaps = []WatchGap{{Resource: "pods", Start: r.Runs[0].Start, Seconds: 4, Reason: "watch expired"}}
	return r
}

// The floor is for wall-clock times only: CPU seconds under 1 s are
// measured exactly (rusage), and a controller that burns 1.8x the CPU fails.
func TestGateTimeFloorSparesNoCPU(t *testing.T) {
	base := scaled([]float64{10.0, 10.4, 9.8, 10.1, 10.6, 9.9, 10.2, 10.3}, 0.05) // CPU about 0.05 s
	g := Gate(newReport(scaled(base, 1.8), nil), NewBaseline(newReport(base, nil), 1.25))
	for _, c := range g.Checks {
		if c.Metric.Key == MetricCPU.Key && c.Status != GateRegressed {
			t.Errorf("cpu 1.8x worse under 1 s: status %q, want %q\n%s", c.Status, GateRegressed, g.Markdown())
		}
	}
}

// A tolerance written in the baseline file is capped at MaxTolerance.
func TestGateToleranceCap(t *testing.T) {
	base := []float64{10.0, 10.4, 9.8, 10.1, 10.6, 9.9, 10.2, 10.3}
	b := NewBaseline(newReport(base, nil), 1.25)
	for i := range b.Entries {
		b.Entries[i].Tolerance = 6.6
	}
	g := Gate(newReport(scaled(base, 2.5), nil), b)
	if g.Pass {
		t.Errorf("2.5x slower passed a baseline that declares x6.6:\n%s", g.Markdown())
	}
	for _, c := range g.Checks {
		if c.Tolerance != MaxTolerance {
			t.Errorf("%s: tolerance %v, want the cap %v", c.Metric.Key, c.Tolerance, MaxTolerance)
		}
	}
}

func TestGateTimeFloor(t *testing.T) {
	base := scaled([]float64{10.0, 10.4, 9.8, 10.1, 10.6, 9.9, 10.2, 10.3}, 0.05) // about 0.5 s
	status := func(g GateResult) GateStatus {
		for _, c := range g.Checks {
			if strings.HasPrefix(c.Metric.Key, "step:create") {
				return c.Status
			}
		}
		return ""
	}
	tests := []struct {
		name     string
		baseline *Baseline
		report   *Report
		want     GateStatus
	}{
		{name: "1.8x slower, still under 1 s", baseline: NewBaseline(newReport(base, nil), 1.25),
			report: newReport(scaled(base, 1.8), nil), want: GateUnderFloor},
		{name: "3x slower, now over 1 s", baseline: NewBaseline(newReport(base, nil), 1.25),
			report: newReport(scaled(base, 3), nil), want: GateRegressed},
		{name: "a ratio: ours 1.8x slower, ours still under 1 s", baseline: NewBaseline(newReport(base, scaled(base, 2)), 1.25),
			report: newReport(scaled(base, 1.8), scaled(base, 2)), want: GateUnderFloor},
		{name: "a ratio: ours 3x slower, ours over 1 s", baseline: NewBaseline(newReport(base, scaled(base, 2)), 1.25),
			report: newReport(scaled(base, 3), scaled(base, 2)), want: GateRegressed},
		{name: "no floor declared", baseline: func() *Baseline {
			b := NewBaseline(newReport(base, nil), 1.25)
			b.MinSeconds = 0
			return b
		}(), report: newReport(scaled(base, 1.8), nil), want: GateRegressed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := Gate(tt.report, tt.baseline)
			if got := status(g); got != tt.want {
				t.Fatalf("step:create status %q, want %q\n%s", got, tt.want, g.Markdown())
			}
			if tt.want == GateUnderFloor && !slices.ContainsFunc(g.Warnings, func(w string) bool { return strings.Contains(w, "under the 1 s floor") }) {
				t.Errorf("warnings %q do not say that the time is under the floor", g.Warnings)
			}
		})
	}
}

func TestBaselineLeavesOutSetupTimes(t *testing.T) {
	r := newReport([]float64{10, 11, 12, 13, 14}, []float64{10, 11, 12, 13, 14})
	for i := range r.Runs {
		r.Runs[i].Extra = []ExtraMetric{{Name: "setup-reset", Unit: "s", Value: 7}, {Name: "kwok-ready", Unit: "s", Value: 3}}
		r.Runs[i].NodeEligible = []NodeLatency{{Node: "n1", Seconds: 2}}
		r.Runs[i].PodGCWaits = []NodeLatency{{Node: "n2", Seconds: 45}}
	}
	b := NewBaseline(r, 1.25)
	var keys []string
	for _, e := range b.Entries {
		keys = append(keys, e.Metric)
	}
	if slices.Contains(keys, "extra:setup-reset") || !slices.Contains(keys, "extra:kwok-ready") {
		t.Errorf("baseline metrics %q: want extra:kwok-ready and no extra:setup-reset", keys)
	}
	// The cluster's share is reported, never gated.
	if slices.Contains(keys, MetricNodeEligibleP99.Key) || slices.Contains(keys, MetricPodGCWaitMax.Key) {
		t.Errorf("baseline metrics %q hold the cluster's share (node-eligible-p99, pod-gc-wait-max)", keys)
	}
	if b.MinSeconds != DefaultMinSeconds {
		t.Errorf("MinSeconds %v, want %v", b.MinSeconds, DefaultMinSeconds)
	}
}

// Wall-clock times get at least DefaultTimeTolerance, other metrics the
// file's; a metric whose own repetitions spread wider gets its spread, so
// that run-to-run noise of that size does not fail the gate, while a
// worsening beyond it still does.
func TestBaselineTolerances(t *testing.T) {
	tight := []float64{10.0, 10.4, 9.8, 10.1, 10.6, 9.9, 10.2, 10.3}
	noisy := []float64{10, 15, 11, 18, 10.5, 12, 11.5, 10.8} // max/min 1.8
	tolerances := func(b *Baseline) (converge, cpu float64) {
		for _, e := range b.Entries {
			switch e.Metric {
			case "converge":
				converge = e.Tolerance
			case "cpu":
				cpu = e.Tolerance
			}
		}
		return converge, cpu
	}
	for _, tt := range []struct {
		name              string
		samples           []float64
		wantConv, wantCPU float64 // 0: the file's
	}{
		{"tight", tight, DefaultTimeTolerance, 0},
		{"noisy", noisy, 1.8, 1.8},
		// A zero time has no spread; a zero CPU is "not measured", so
		// the CPU samples are 0.1, 0.2, 0.3: spread 3, capped at MaxTolerance.
		{"a zero sample", []float64{0, 1, 2, 3}, DefaultTimeTolerance, MaxTolerance},
	} {
		conv, cpu := tolerances(NewBaseline(newReport(tt.samples, nil), 1.25))
		if conv != tt.wantConv || cpu != tt.wantCPU {
			t.Errorf("%s samples: tolerances converge %v, cpu %v; want %v, %v", tt.name, conv, cpu, tt.wantConv, tt.wantCPU)
		}
	}
	status := func(g GateResult) GateStatus {
		for _, c := range g.Checks {
			if c.Metric.Key == "converge" {
				return c.Status
			}
		}
		return ""
	}
	noisyBase := NewBaseline(newReport(noisy, nil), 1.25)
	for _, tt := range []struct {
		factor float64
		want   GateStatus
	}{{1.6, GatePass}, {2.5, GateRegressed}} {
		g := Gate(newReport(scaled(noisy, tt.factor), nil), noisyBase)
		if got := status(g); got != tt.want {
			t.Errorf("noisy baseline, current ×%g: converge %q, want %q\n%s", tt.factor, got, tt.want, g.Markdown())
		}
	}
}

// A watch gap that a declared fault caused is a warning, not a failure; any
// other gap in the same run still fails it.
func TestWatchGapDuringAFaultIsMarkedNotExcused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gaps  []WatchGap
		holds bool
	}{
		{"during a restart", []WatchGap{{Resource: "pods", Seconds: 0.04, DuringFault: "restart"}}, true},
		{"during a restart and another", []WatchGap{{Resource: "pods", Seconds: 0.04, DuringFault: "restart"}, {Resource: "nodes", Seconds: 2}}, false},
		{"no fault", []WatchGap{{Resource: "pods", Seconds: 0.04}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReport([]float64{10, 10.2, 9.9}, nil)
			for i := range r.Runs {
				if r.Runs[i].Controller == ControllerOurs {
					r.Runs[i].Coverage.WatchGaps = tc.gaps
				}
			}
			findings := CheckInvariants(r)
			if got := Holds(findings, ControllerOurs); got != tc.holds {
				t.Errorf("holds = %v, want %v: %+v", got, tc.holds, findings)
			}
			warned := false
			for _, f := range findings {
				if f.Check == CheckWatchGap && f.Severity == SeverityWarn && strings.Contains(f.Detail, "restart") {
					warned = true
				}
			}
			if tc.gaps[0].DuringFault != "" && !warned {
				t.Errorf("the fault's gap is not reported: %+v", findings)
			}
		})
	}
}

// Runs in which kwok stalled pods, or in which a cluster component exited,
// leave the statistics. A controller whose every run is left out is then
// compared on nothing, and the gate fails: leaving them out can hide no
// regression. One clean run less only narrows the test.
func TestGateLeftOutRunsCompareNothing(t *testing.T) {
	base := []float64{10.0, 10.4, 9.8, 10.1, 10.6, 9.9, 10.2, 10.3}
	baseline := NewBaseline(newReport(base, nil), DefaultTolerance)
	for _, tc := range []struct {
		name    string
		leftOut func(*Run)
	}{
		{"simulator stall", func(r *Run) {
			r.SimulatorStalls = []SimulatorStall{{Pod: "s/p", Node: "n1", Seconds: 25, Nudged: true}}
		}},
		{"cluster restart", func(r *Run) {
			r.ClusterRestarts = []ClusterRestart{{Component: "kube-scheduler", At: r.Start.Add(time.Second)}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := newReport(scaled(base, 3), nil) // three times slower, every run left out
			for i := range all.Runs {
				tc.leftOut(&all.Runs[i])
			}
			g := Gate(all, baseline)
			if g.Pass || !slices.ContainsFunc(g.Failures, func(f string) bool { return strings.Contains(f, "the gate compared nothing") }) {
				t.Errorf("every run left out: pass=%v failures=%q, want a failing gate that compared nothing", g.Pass, g.Failures)
			}

			some := newReport(scaled(base, 3), nil) // three times slower, two runs left out
			tc.leftOut(&some.Runs[0])
			tc.leftOut(&some.Runs[1])
			if g := Gate(some, baseline); g.Pass {
				t.Errorf("a 3x slower controller passed once two of its runs were left out:\n%s", g.Markdown())
			}
		})
	}
}

// A baseline names the kwok it was measured on, and a run on another kwok is
// not compared with it: even a run twice as slow then fails only for the
// simulator, and a run on the same kwok is gated as before.
func TestGateComparesOnlyOnTheBaselinesSimulator(t *testing.T) {
	base := []float64{10.0, 10.4, 9.8, 10.1, 10.6, 9.9, 10.2, 10.3}
	on := func(r *Report, kwok string) *Report { r.Versions.Kwok = kwok; return r }
	baseline := NewBaseline(on(newReport(base, nil), "v0.8.0+watch-resume"), 1.25)
	if baseline.Kwok != "v0.8.0+watch-resume" {
		t.Fatalf("NewBaseline recorded kwok %q, want the report's", baseline.Kwok)
	}
	t.Run("same kwok", func(t *testing.T) {
		g := Gate(on(newReport(scaled(base, 2), nil), "v0.8.0+watch-resume"), baseline)
		if g.Pass || len(g.Checks) == 0 {
			t.Errorf("a run twice as slow on the baseline's kwok: Pass %v with %d checks, want a regression", g.Pass, len(g.Checks))
		}
	})
	t.Run("another kwok", func(t *testing.T) {
		g := Gate(on(newReport(base, nil), "v0.8.0"), baseline)
		if g.Pass || len(g.Checks) != 0 || len(g.Failures) != 1 || !strings.Contains(g.Failures[0], "measured on kwok v0.8.0+watch-resume and this run on kwok v0.8.0") {
			t.Errorf("a run on another kwok: Pass %v, %d checks, failures %q; want one failure naming both and no comparison", g.Pass, len(g.Checks), g.Failures)
		}
	})
	t.Run("baseline that does not say", func(t *testing.T) {
		old := *baseline
		old.Kwok = ""
		g := Gate(on(newReport(base, nil), "v0.8.0"), &old)
		if !g.Pass || len(g.Checks) == 0 || !slices.ContainsFunc(g.Warnings, func(w string) bool { return strings.Contains(w, "does not say which kwok") }) {
			t.Errorf("an old baseline: Pass %v, %d checks, warnings %q; want compared with a warning", g.Pass, len(g.Checks), g.Warnings)
		}
	})
}

// What the cluster did on its own (watches closed, kwok watching again) is
// reported but never baselined, so that no run can fail for it.
func TestNewBaselineLeavesOutClusterRecords(t *testing.T) {
	r := newReport([]float64{10, 11, 12, 13}, []float64{12, 12, 13, 14})
	for i := range r.Runs {
		r.Runs[i].Extra = []ExtraMetric{
			{Name: MetricAPIServerPodWatchesClosed, Unit: "count", Value: float64(1 + i)},
			{Name: MetricAPIServerNodeWatchesClosed, Unit: "count", Value: float64(1 + i)},
			{Name: MetricKwokPodWatchCloses, Unit: "count", Value: float64(1 + i)},
			{Name: MetricKwokPodWatchReplays, Unit: "count", Value: float64(1 + i)},
			{Name: "throughput", Unit: "pods/s", Value: float64(50 + i)},
		}
	}
	var keys []string
	for _, e := range NewBaseline(r, 1.25).Entries {
		keys = append(keys, e.Metric)
	}
	if !slices.Contains(keys, "extra:throughput") {
		t.Fatalf("baseline metrics %q lack extra:throughput: the extras were not read", keys)
	}
	for _, k := range keys {
		if IsClusterRecord(k) {
			t.Errorf("the baseline holds %s, a count of what the cluster did", k)
		}
	}
}
