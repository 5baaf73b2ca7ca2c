package reports

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Render writes every output for r into dir (created if needed): report.json,
// report.md, report.html and bench.txt, each atomically. baseline may be nil;
// when given, report.md and report.html include the gate verdict and the top
// regressions against it.
func Render(dir string, r *Report, baseline *Baseline) error {
	if err := Write(dir, r); err != nil {
		return fmt.Errorf("rendering report: %w", err)
	}
	a := analyze(r, baseline, DefaultOptions())
	html, err := a.html()
	if err != nil {
		return fmt.Errorf("rendering report: %w", err)
	}
	outputs := []struct {
		name string
		data []byte
	}{
		{MarkdownFile, []byte(a.markdown())},
		{BenchFile, []byte(BenchText(r))},
		{HTMLFile, html},
	}
	for _, o := range outputs {
		if err := writeFileAtomic(filepath.Join(dir, o.name), o.data); err != nil {
			return fmt.Errorf("rendering report: %w", err)
		}
	}
	return nil
}

// analysis is everything derived from a report for rendering.
type analysis struct {
	r          *Report
	groups     []Group
	findings   []Finding
	comparison Comparison
	// floor compares ours with the floor; no rows when it never ran.
	floor Comparison
	// floorDirect compares ours-direct with the floor; no rows unless both ran.
	floorDirect Comparison
	// direct compares ours-direct with ours; no rows when it never ran.
	direct Comparison
	// external shows the external controller (beside ours, if the report
	// has both); no rows when it never ran.
	external Comparison
	gate     *GateResult
}

func analyze(r *Report, b *Baseline, opt Options) *analysis {
	a := &analysis{r: r, groups: Groups(r), findings: CheckInvariants(r), comparison: CompareControllers(r, opt),
		floor: CompareFloor(r, opt), floorDirect: CompareFloorDirect(r, opt), direct: CompareDirect(r, opt), external: CompareExternal(r, opt)}
	if b != nil {
		g := GateWith(r, b, opt)
		a.gate = &g
	}
	return a
}

func (a *analysis) holds(controller string) bool { return Holds(a.findings, controller) }

func (a *analysis) controllers() []string {
	var out []string
	seen := map[string]bool{}
	for _, g := range a.groups {
		if !seen[g.Controller] {
			seen[g.Controller] = true
			out = append(out, g.Controller)
		}
	}
	return out
}

// holdsLine answers "does every invariant hold?" per controller.
func (a *analysis) holdsLine() string {
	var parts []string
	for _, c := range a.controllers() {
		n := 0
		for _, f := range a.findings {
			if f.Controller == c && f.Severity == SeverityFail {
				n++
			}
		}
		s := c + ": " + yesNo(a.holds(c))
		if n > 0 {
			s += fmt.Sprintf(" (%d failing)", n)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no (the report has no runs)"
	}
	return strings.Join(parts, "; ")
}

func (a *analysis) paramsTable() table {
	r := a.r
	t := table{Header: []string{"parameter", "value"}}
	add := func(k, v string) { t.Rows = append(t.Rows, []string{k, v}) }
	add("schema", r.SchemaVersion)
	add("generated", r.GeneratedAt.UTC().Format(time.RFC3339))
	add("scenarios", strings.Join(r.Params.Scenarios, ", "))
	add("nodes", fmt.Sprint(r.Params.Nodes))
	add("repetitions", fmt.Sprintf("%d (interleaved: %s)", r.Params.Repetitions, yesNo(r.Params.Interleaved)))
	add("seed", fmt.Sprint(r.Params.Seed))
	for _, w := range r.Warmups {
		add("warm-up (not measured)", fmt.Sprintf("%s, %s: %s in %s s", w.Scenario, w.Controller, w.Outcome, fmtNum(w.End.Sub(w.Start).Seconds())))
	}
	if r.Params.StepTimeoutSeconds > 0 {
		add("step timeout", fmtNum(r.Params.StepTimeoutSeconds)+" s")
	}
	for _, c := range r.Params.Controllers {
		if c.Name == ControllerExternal {
			add("controller "+c.Name, ExternalParams)
			continue
		}
		v := fmt.Sprintf("qps %g, burst %d, workers %d", c.QPS, c.Burst, c.Workers)
		if c.BurstReplicas > 0 {
			v += fmt.Sprintf(", burstReplicas %d", c.BurstReplicas)
		}
		if c.Binary != "" {
			v += ", binary " + c.Binary
		}
		if len(c.Args) > 0 {
			v += ", args " + strings.Join(c.Args, " ")
		}
		if len(c.Env) > 0 {
			v += ", env " + strings.Join(c.Env, " ")
		}
		add("controller "+c.Name, v)
	}
	add("harness client", fmt.Sprintf("qps %g, burst %d", r.Params.Harness.QPS, r.Params.Harness.Burst))
	v := r.Versions
	commit := v.GitCommit
	if v.GitDirty {
		commit += " (dirty)"
	}
	add("versions", fmt.Sprintf("go %s, kubernetes %s, kwok %s, commit %s", v.Go, v.Kubernetes, v.Kwok, commit))
	m := r.Machine
	machine := fmt.Sprintf("%d cores", m.Cores)
	if m.CPUModel != "" {
		machine += " (" + m.CPUModel + ")"
	}
	machine += fmt.Sprintf(", %s memory, %s/%s", fmtBytes(float64(m.MemoryBytes)), m.OS, m.Arch)
	if m.Kernel != "" {
		machine += ", kernel " + m.Kernel
	}
	add("machine", machine)
	return t
}

func (a *analysis) invariantsTable() table {
	t := table{
		Header: []string{"case", "controller", "runs ok", "failed", "unexpected violations", "expected violations",
			"worst peak unavailable / allowed", "pods observed (min)", "watch gaps", "node flaps", "invariants hold"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true, false},
	}
	for _, g := range a.groups {
		var ok, unexpected, expected, gaps, flaps int
		minObserved := 1.0
		avail := "—"
		worst := 0
		haveAvail := false
		for _, run := range g.Runs {
			if !run.OK() {
				continue
			}
			ok++
			for _, v := range run.Violations {
				if v.Expected {
					expected++
				} else {
					unexpected++
				}
			}
			for _, av := range run.Availability {
				if d := av.PeakUnavailable - av.AllowedUnavailable; !haveAvail || d > worst {
					haveAvail, worst = true, d
					avail = fmt.Sprintf("%d / %d", av.PeakUnavailable, av.AllowedUnavailable)
					if av.ClusterMade > 0 {
						avail += fmt.Sprintf(" (%d cluster's)", av.ClusterMade)
					}
				}
			}
			minObserved = min(minObserved, run.Coverage.ObservedFraction)
			gaps += len(run.Coverage.WatchGaps)
			flaps += run.Coverage.NodeReadyFlaps
		}
		holds := "yes"
		for _, f := range a.findings {
			if f.Severity == SeverityFail && f.Controller == g.Controller && (Case{f.Scenario, f.Nodes}) == g.Case {
				holds = "NO"
				break
			}
		}
		observed := "—"
		if ok > 0 {
			observed = fmtPercent(minObserved)
		}
		t.Rows = append(t.Rows, []string{
			g.Case.String(), g.Controller, fmt.Sprint(ok), fmt.Sprint(g.Failed()), fmt.Sprint(unexpected), fmt.Sprint(expected),
			avail, observed, fmt.Sprint(gaps), fmt.Sprint(flaps), holds,
		})
	}
	return t
}

func (a *analysis) findingsTable() (table, bool) {
	t := table{Title: "Findings", Header: []string{"severity", "controller", "case", "rep", "check", "detail"}, Right: []bool{false, false, false, true}}
	for _, f := range a.findings {
		cs, rep := Case{f.Scenario, f.Nodes}.String(), fmt.Sprint(f.Repetition)
		if f.Check == CheckNoRuns {
			cs, rep = "—", "—"
		}
		t.Rows = append(t.Rows, []string{string(f.Severity), f.Controller, cs, rep, f.Check, f.Detail})
	}
	return t, len(t.Rows) > 0
}

// nodeLatencyMeasure is a row of the per-node latency table.
type nodeLatencyMeasure struct {
	name   string
	values func(*Group) []float64
}

// nodeLatencyMeasures are the rows of the per-node latency table. The three
// replacement parts say whose time a rollout's per-node latency is, the
// three repair parts a pods step's: only "gone → new pod" is the
// controller's.
var nodeLatencyMeasures = slices.Concat(
	[]nodeLatencyMeasure{
		{"node join", func(g *Group) []float64 { return g.NodeJoins }},
		{"per-node rollout", func(g *Group) []float64 { return g.NodeRollouts }},
	},
	splitMeasures("replaced", func(g *Group) []Replacement { return g.Replacements }),
	splitMeasures("repaired", func(g *Group) []Replacement { return g.Repairs }),
)

// splitMeasures are the three rows of the replacements that of gives.
func splitMeasures(prefix string, of func(*Group) []Replacement) []nodeLatencyMeasure {
	part := func(name string, value func(Replacement) float64) nodeLatencyMeasure {
		return nodeLatencyMeasure{prefix + ": " + name, func(g *Group) []float64 {
			rs := of(g)
			xs := make([]float64, 0, len(rs))
			for _, r := range rs {
				xs = append(xs, value(r))
			}
			return xs
		}}
	}
	return []nodeLatencyMeasure{
		part("terminating → gone (cluster)", func(r Replacement) float64 { return r.Deleting }),
		part("gone → new pod (controller)", func(r Replacement) float64 { return r.Recreating }),
		part("new pod → available (cluster)", func(r Replacement) float64 { return r.Starting }),
	}
}

// joinAccount says, for the runs whose joins g pools, how many joins were
// not measured: ended by their node or DaemonSet going first, or left
// unmeasured (a finding). "" when every join was measured.
func joinAccount(g *Group) string {
	var measured, ended, unmeasured int
	for _, run := range g.Runs {
		if pooled(run) {
			measured += len(run.NodeJoins)
			ended += run.NodeJoinsEnded
			unmeasured += len(run.NodeJoinsUnmeasured)
		}
	}
	if ended+unmeasured == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s: %d of %d joins measured; %d ended by their node or DaemonSet going first, %d unmeasured (see the findings).",
		g.Case, g.Controller, measured, measured+ended+unmeasured, ended, unmeasured)
}

func (a *analysis) nodeLatencyTable() (table, bool) {
	t := table{
		Header: []string{"case", "latency", "controller", "n", "median", "p90", "p99", "max"},
		Right:  []bool{false, false, false, true, true, true, true, true},
	}
	for _, cs := range cases(a.groups) {
		for _, measure := range nodeLatencyMeasures {
			for _, g := range a.groups {
				if g.Case != cs {
					continue
				}
				xs := measure.values(&g)
				if len(xs) == 0 {
					continue
				}
				d := Distribute(xs)
				name := measure.name
				if measure.name == "node join" {
					if note := joinAccount(&g); note != "" {
						t.Notes = append(t.Notes, note)
						name += fmt.Sprintf(" (%d)", len(t.Notes))
					}
				}
				t.Rows = append(t.Rows, []string{cs.String(), name, g.Controller, fmt.Sprint(d.N),
					fmtDecimal(d.Median), fmtDecimal(d.P90), fmtDecimal(d.P99), fmtDecimal(d.Max)})
			}
		}
	}
	return t, len(t.Rows) > 0
}

const harnessNote = "How far the harness's oracle trailed the watch events (each stamped once, on arrival), worst run of each case: a run whose p99 lag exceeds 0.1 s is harness-limited, its latencies include the harness's own delay. Clamped events were judged at the oracle's later time. Retracted limit episodes were ended by a node change that etcd ordered before the pod change that began them (the watch streams delivered them the other way round). Harness CPU is the dsbench process's own, summed over the runs.\n"

// harnessTable shows the harness's lag per case and controller.
func (a *analysis) harnessTable() (table, bool) {
	t := table{
		Header: []string{"case", "controller", "runs", "events", "lag p50 (ms)", "lag p99 (ms)", "lag max (ms)", "clamped", "retracted", "relists", "harness CPU (s)", "harness-limited runs"},
		Right:  []bool{false, false, true, true, true, true, true, true, true, true, true},
	}
	for _, g := range a.groups {
		var runs, events, clamped, retracted, relists, limited int
		var p50, p99, lagMax, cpu float64
		for _, run := range g.Runs {
			h := run.Harness
			if h == nil {
				continue
			}
			runs++
			events += h.Events
			clamped += h.Clamped
			retracted += h.Retracted
			relists += h.Relists
			cpu += h.CPUSeconds
			p50, p99, lagMax = max(p50, h.LagP50), max(p99, h.LagP99), max(lagMax, h.LagMax)
			if h.Limited {
				limited++
			}
		}
		if runs == 0 {
			continue
		}
		ms := func(s float64) string { return fmtDecimal(s * 1000) }
		t.Rows = append(t.Rows, []string{g.Case.String(), g.Controller, fmt.Sprint(runs), fmt.Sprint(events),
			ms(p50), ms(p99), ms(lagMax), fmt.Sprint(clamped), fmt.Sprint(retracted), fmt.Sprint(relists), fmtDecimal(cpu), fmt.Sprint(limited)})
	}
	return t, len(t.Rows) > 0
}

const faultsNote = "Each fault step of each run. Survived: every step begun by the fault's end converged afterwards, and no unexpected violation began between the fault's start and that recovery. Recovery runs from the fault's end to the last such convergence. API calls are the controller's, summed over its processes, during the fault; a bound, when the step sets one, makes a higher rate a HotLoop violation.\n"

// faultsTable sums the faults per case, controller and fault kind.
func (a *analysis) faultsTable() (table, bool) {
	t := table{
		Header: []string{"case", "controller", "fault", "steps", "injected", "survived", "violations", "recovery p50 (s)", "recovery max (s)", "API calls/min p50", "API calls/min max", "bound", "also"},
		Right:  []bool{false, false, false, true, true, true, true, true, true, true, true, true, false},
	}
	for _, g := range a.groups {
		byKind := map[string][]Fault{}
		var kinds []string
		for _, run := range g.Runs {
			for _, f := range run.Faults {
				if byKind[f.Kind] == nil {
					kinds = append(kinds, f.Kind)
				}
				byKind[f.Kind] = append(byKind[f.Kind], f)
			}
		}
		for _, k := range kinds {
			fs := byKind[k]
			var injected, survived, violations, statusWrites, lost int
			var delayed, landed, landFailures int64
			landFailuresBy := map[string]int64{}
			var recovery, rates []float64
			bound := 0.0
			for _, f := range fs {
				statusWrites += f.StatusWrites
				delayed += f.DelayedRequests
				landed += f.LandedWrites
				landFailures += f.LandFailures
				for why, n := range f.LandFailuresBy {
					landFailuresBy[why] += n
				}
				if f.LostUpdate != "" {
					lost++
				}
				injected += f.Injected
				violations += f.Violations
				if f.Survived() {
					survived++
				}
				if f.Recovered {
					recovery = append(recovery, f.RecoverySeconds)
				}
				if f.APIRequests >= 0 {
					rates = append(rates, f.CallsPerMinute)
				}
				bound = max(bound, f.MaxCallsPerMinute)
			}
			dash := func(xs []float64, q float64) string {
				if len(xs) == 0 {
					return "—"
				}
				sorted := slices.Sorted(slices.Values(xs))
				return fmtDecimal(percentileSorted(sorted, q))
			}
			b := "—"
			if bound > 0 {
				b = fmtDecimal(bound)
			}
			var also []string
			if delayed > 0 {
				also = append(also, fmt.Sprintf("%d requests delayed", delayed))
			}
			if landed+landFailures > 0 {
				refused := fmt.Sprintf("%d timed-out writes landed later, %d refused then", landed, landFailures)
				if len(landFailuresBy) > 0 {
					var whys []string
					for _, why := range slices.Sorted(maps.Keys(landFailuresBy)) {
						whys = append(whys, fmt.Sprintf("%s: %d", why, landFailuresBy[why]))
					}
					refused += " (" + strings.Join(whys, ", ") + ")"
				}
				also = append(also, refused)
			}
			if statusWrites > 0 {
				also = append(also, fmt.Sprintf("%d bogus status writes, %d lost updates", statusWrites, lost))
			}
			t.Rows = append(t.Rows, []string{g.Case.String(), g.Controller, k, fmt.Sprint(len(fs)), fmt.Sprint(injected),
				fmt.Sprintf("%d/%d", survived, len(fs)), fmt.Sprint(violations), dash(recovery, 0.5), dash(recovery, 1), dash(rates, 0.5), dash(rates, 1), b,
				strings.Join(also, "; ")})
		}
	}
	return t, len(t.Rows) > 0
}

const nodeLatencyNote = "Seconds; every node of every successful repetition pooled; percentiles by nearest rank. A per-node rollout runs from the node's turn (its old pod's deletion or, with maxSurge, its new pod's creation if that came first; never before the update) to the new pod available. The replaced rows split it for each node whose old pod was gone before the new one appeared (no surge): the old pod's termination being finalized and the new pod starting are the cluster's time; from gone to new pod is the controller's (its reaction, and its own pacing of creates). The repaired rows split the same way each node whose pod a pods step deleted, from the deletion to an active pod available again; the median of a step's controller share is also a step metric (\"gone to new pod, median\"), compared per repetition.\n"

func (a *analysis) markdown() string {
	var b strings.Builder
	b.WriteString("# dsbench report\n\n")
	b.WriteString(a.paramsTable().markdown(""))
	b.WriteString("## Invariants\n\n")
	fmt.Fprintf(&b, "**Does every invariant hold?** %s\n\n", a.holdsLine())
	b.WriteString(a.invariantsTable().markdown(""))
	if t, ok := a.findingsTable(); ok {
		b.WriteString(t.markdown("###"))
	}
	if a.gate != nil {
		b.WriteString("## Against the baseline\n\n")
		b.WriteString(a.gate.Markdown())
	}
	b.WriteString(a.comparison.Markdown())
	if len(a.floor.Rows) > 0 {
		b.WriteString(a.floor.Markdown())
	}
	if len(a.floorDirect.Rows) > 0 {
		b.WriteString(a.floorDirect.Markdown())
	}
	if len(a.direct.Rows) > 0 {
		b.WriteString(a.direct.Markdown())
	}
	if len(a.external.Rows) > 0 {
		b.WriteString(a.external.Markdown())
	}
	if t, ok := a.nodeLatencyTable(); ok {
		b.WriteString("## Per-node latencies\n\n")
		b.WriteString(nodeLatencyNote + "\n")
		b.WriteString(t.markdown(""))
	}
	if t, ok := a.faultsTable(); ok {
		b.WriteString("## Faults\n\n")
		b.WriteString(faultsNote + "\n")
		b.WriteString(t.markdown(""))
	}
	if t, ok := a.harnessTable(); ok {
		b.WriteString("## The harness\n\n")
		b.WriteString(harnessNote + "\n")
		b.WriteString(t.markdown(""))
	}
	return b.String()
}

// summaryMetrics are the metrics Summary shows per case.
var summaryMetrics = []Metric{MetricConverge, MetricRollout, MetricNodeRolloutP99, MetricNodeJoinP99, MetricViolations, MetricRequests, MetricCPU, MetricRSS}

// Summary is a one-screen terminal summary: invariants, then per case the
// medians of the main metrics for upstream and ours, their ratio and the U
// test, and where ours-direct ran, its medians against ours the same way.
func Summary(r *Report) string {
	var b strings.Builder
	commit := shortCommit(r.Versions.GitCommit)
	if r.Versions.GitDirty {
		commit += " (dirty)"
	}
	fmt.Fprintf(&b, "dsbench %s  %s  commit %s  nodes=%d reps=%d  %d cores\n",
		r.SchemaVersion, r.GeneratedAt.UTC().Format(time.RFC3339), commit, r.Params.Nodes, r.Params.Repetitions, r.Machine.Cores)
	findings := CheckInvariants(r)
	a := &analysis{r: r, groups: Groups(r), findings: findings}
	fmt.Fprintf(&b, "invariants hold: %s\n", a.holdsLine())
	shown := 0
	for _, f := range findings {
		if f.Severity != SeverityFail {
			continue
		}
		if shown == 5 {
			b.WriteString("  ... more in report.md\n")
			break
		}
		fmt.Fprintf(&b, "  FAIL %s %s#%d %s: %s\n", f.Controller, Case{f.Scenario, f.Nodes}, f.Repetition, f.Check, f.Detail)
		shown++
	}
	for _, cs := range cases(a.groups) {
		up, ours := findGroup(a.groups, cs, ControllerUpstream), findGroup(a.groups, cs, ControllerOurs)
		// ours-direct, where it ran, against ours in columns of its own;
		// the external controller, which runs alone, in one of its own.
		direct := findGroup(a.groups, cs, ControllerOursDirect)
		external := findGroup(a.groups, cs, ControllerExternal)
		fmt.Fprintf(&b, "\n%s\n", cs)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "\tupstream\tours\tours/upstream\tp\tΔ\t")
		if direct != nil {
			fmt.Fprintf(tw, "ours-direct\tours-direct/ours\tp\tΔ\t")
		}
		if external != nil {
			fmt.Fprintf(tw, "external\t")
		}
		fmt.Fprintln(tw)
		for _, m := range summaryMetrics {
			av, bv, dv, ev := seriesValues(up, m.Key), seriesValues(ours, m.Key), seriesValues(direct, m.Key), seriesValues(external, m.Key)
			if len(av) == 0 && len(bv) == 0 && len(dv) == 0 && len(ev) == 0 {
				continue
			}
			label := m.Label
			if m.Unit != "" {
				label += " (" + unitLabel(m) + ")"
			}
			c := summaryComparison(av, bv)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t", label, fmtValue(m, c.A.Median), fmtValue(m, c.B.Median), fmtRatio(c.Ratio), fmtP(c), c.Verdict())
			if direct != nil {
				d := summaryComparison(bv, dv)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t", fmtValue(m, d.B.Median), fmtRatio(d.Ratio), fmtP(d), d.Verdict())
			}
			if external != nil {
				fmt.Fprintf(tw, "%s\t", fmtValue(m, Median(ev)))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	return b.String()
}

// summaryComparison is b against a for Summary: medians, their ratio and
// the U test, without the intervals.
func summaryComparison(av, bv []float64) SampleComparison {
	alpha := DefaultAlpha
	c := SampleComparison{A: Stats{N: len(av), Median: Median(av)}, B: Stats{N: len(bv), Median: Median(bv)}}
	c.Ratio = ratio(c.B.Median, c.A.Median)
	if need := MinTestSamples(alpha); len(av) >= need && len(bv) >= need {
		if t, err := MannWhitney(av, bv); err == nil {
			c.Tested, c.Test, c.Significant = true, t, t.P < alpha
		}
	}
	return c
}
