package reports

import (
	"fmt"
	"slices"
	"strings"
)

// Severity of a Finding.
type Severity string

const (
	// SeverityFail: the invariant does not hold, or data is missing so it cannot be checked.
	SeverityFail Severity = "fail"
	// SeverityWarn: the results are usable but suspect.
	SeverityWarn Severity = "warn"
)

// Checks reported in Finding.Check.
const (
	CheckNoRuns              = "no-runs"
	CheckRunFailed           = "run-failed"
	CheckNotConverged        = "not-converged"
	CheckRolloutIncomplete   = "rollout-incomplete"
	CheckUnexpectedViolation = "unexpected-violation"
	CheckOverUnavailable     = "over-unavailable"
	CheckIncompleteCoverage  = "incomplete-coverage"
	CheckWatchGap            = "watch-gap"
	CheckNodeFlaps           = "node-flaps"
	CheckHarnessLimited      = "harness-limited"
	CheckSimulatorStall      = "simulator-stall"
	CheckClusterRestart      = "cluster-restart"
	CheckKwokReplay          = "kwok-replay"
	CheckJoinUnmeasured      = "join-unmeasured"
)

// Finding is one invariant that did not hold in one run.
type Finding struct {
	Severity   Severity
	Check      string
	Scenario   string
	Nodes      int
	Controller string
	Repetition int
	Detail     string
}

// CheckInvariants lists every invariant that does not hold, in group order
// (see Groups) then repetition. Missing data (failed runs, unobserved pods,
// watch gaps) is a failure because nothing can be claimed about it.
func CheckInvariants(r *Report) []Finding {
	if len(r.Runs) == 0 {
		return []Finding{{Severity: SeverityFail, Check: CheckNoRuns, Detail: "the report has no runs"}}
	}
	var out []Finding
	for _, g := range Groups(r) {
		for _, run := range g.Runs {
			out = append(out, checkRun(run)...)
		}
	}
	// A warm-up is judged as any run: a bug it shows is a bug.
	for i := range r.Warmups {
		for _, f := range checkRun(&r.Warmups[i]) {
			f.Detail = "warm-up run: " + f.Detail
			out = append(out, f)
		}
	}
	return out
}

func checkRun(run *Run) []Finding {
	var out []Finding
	add := func(sev Severity, check, format string, args ...any) {
		out = append(out, Finding{
			Severity: sev, Check: check, Scenario: run.Scenario, Nodes: run.Nodes,
			Controller: run.Controller, Repetition: run.Repetition, Detail: fmt.Sprintf(format, args...),
		})
	}
	if !run.OK() {
		add(SeverityFail, CheckRunFailed, "run failed: %s", run.Error)
		return out
	}
	for i, s := range run.Steps {
		if !s.Converged && !s.ExpectedNotConverged {
			add(SeverityFail, CheckNotConverged, "step %q (%s) did not converge within %ss", StepKey(run.Steps, i), s.Kind, fmtDecimal(s.Seconds))
		}
	}
	for _, ro := range run.Rollouts {
		if !ro.Complete && !ro.Interrupted() {
			add(SeverityFail, CheckRolloutIncomplete, "rollout of %s in step %q did not complete", ro.DaemonSet, ro.Step)
		}
	}
	out = append(out, checkJoinsMeasured(run)...)
	if n := unexpectedViolations(run); n > 0 {
		kinds := map[string]int{}
		var first *Violation
		for i := range run.Violations {
			v := &run.Violations[i]
			if v.Expected {
				continue
			}
			kinds[v.Kind]++
			if first == nil || v.Start.Before(first.Start) {
				first = v
			}
		}
		var parts []string
		for _, k := range sortedKeys(kinds) {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, kinds[k]))
		}
		add(SeverityFail, CheckUnexpectedViolation, "%d unexpected %s (%s); first: %s on node %q at +%ss for %ss",
			n, plural(n, "violation", "violations"), strings.Join(parts, ", "), first.Kind, first.Node, fmtDecimal(first.Start.Sub(run.Start).Seconds()), fmtDecimal(first.Seconds))
	}
	for _, a := range run.Availability {
		if a.PeakUnavailable > a.AllowedUnavailable && !a.Expected {
			add(SeverityFail, CheckOverUnavailable, "%s step %q: peak unavailable %d > allowed %d", a.DaemonSet, a.Step, a.PeakUnavailable, a.AllowedUnavailable)
		}
	}
	if c := run.Coverage; c.ObservedFraction < 1 {
		add(SeverityFail, CheckIncompleteCoverage, "observed %s of pods (%d of %d)", fmtPercent(c.ObservedFraction), c.PodsObserved, c.PodsExpected)
	}
	// A gap that a declared fault caused (an API server restart) is marked,
	// not failed: the fault is the point of the run. Any other gap fails it.
	var gaps, faultGaps []string
	for _, g := range run.Coverage.WatchGaps {
		part := fmt.Sprintf("%s %ss", g.Resource, fmtDecimal(g.Seconds))
		if g.DuringFault != "" {
			faultGaps = append(faultGaps, part+" during "+g.DuringFault)
		} else {
			gaps = append(gaps, part)
		}
	}
	if len(gaps) > 0 {
		add(SeverityFail, CheckWatchGap, "%d watch %s (%s): events may be missing", len(gaps), plural(len(gaps), "gap", "gaps"), strings.Join(gaps, ", "))
	}
	if len(faultGaps) > 0 {
		add(SeverityWarn, CheckWatchGap, "%d watch %s caused by a fault step (%s): the harness listed again; changes undone within a gap are not seen", len(faultGaps), plural(len(faultGaps), "gap", "gaps"), strings.Join(faultGaps, ", "))
	}
	if st := run.SimulatorStalls; len(st) > 0 {
		worst, open, pending, terminating := 0.0, 0, 0, 0
		for _, x := range st {
			worst = max(worst, x.Seconds)
			if x.Open {
				open++
			}
			if x.Terminating {
				terminating++
			} else {
				pending++
			}
		}
		var what []string
		if pending > 0 {
			what = append(what, fmt.Sprintf("%d %s Pending", pending, plural(pending, "pod", "pods")))
		}
		if terminating > 0 {
			what = append(what, fmt.Sprintf("%d deleted %s terminating", terminating, plural(terminating, "pod", "pods")))
		}
		left := "the run is left out of the statistics, since its times include the stall"
		if joinsAfterStalls(run) {
			left = "the run is left out of the statistics but for its node joins, which all began " + StallSettle.String() + " or more after the last stall ended"
		}
		add(SeverityWarn, CheckSimulatorStall, "kwok left %s on Ready nodes (longest %ss, %d still waiting at the end); the harness nudged each; %s",
			strings.Join(what, " and "), fmtDecimal(worst), open, left)
	}
	if rs := run.ClusterRestarts; len(rs) > 0 {
		var parts, failed []string
		for _, r := range rs {
			part := fmt.Sprintf("%s at %ss", r.Component, fmtDecimal(r.At.Sub(run.Start).Seconds()))
			if r.Error != "" {
				failed = append(failed, part+": "+r.Error)
			}
			parts = append(parts, part)
		}
		if len(failed) > 0 {
			add(SeverityFail, CheckClusterRestart, "cluster %s exited and did not start again (%s): the run measured a broken cluster",
				plural(len(failed), "component", "components"), strings.Join(failed, "; "))
		} else {
			add(SeverityWarn, CheckClusterRestart, "cluster %s exited and the harness started %s again (%s); the run is left out of the statistics, since its times include the outage",
				plural(len(rs), "component", "components"), plural(len(rs), "it", "them"), strings.Join(parts, ", "))
		}
	}
	if h := run.Harness; h != nil && h.Rejected > 0 {
		add(SeverityFail, CheckHarnessLimited, "the oracle could not apply %d watch events: its view is incomplete", h.Rejected)
	}
	if h := run.Harness; h != nil && h.Limited {
		add(SeverityWarn, CheckHarnessLimited, "the oracle trailed the watch events by %ss at p99 (max %ss, %d clamped): latencies include the harness's own delay",
			fmtDecimal(h.LagP99), fmtDecimal(h.LagMax), h.Clamped)
	}
	for _, e := range run.Extra {
		if e.Name == MetricKwokPodWatchReplays && e.Value > 0 {
			n := int(e.Value)
			add(SeverityWarn, CheckKwokReplay, "kube-apiserver closed kwok's pod watch %d %s as unresponsive, and kwok worked through every pod again each time before what changed: pods started late for the simulator's reason, latencies may be inflated",
				n, plural(n, "time", "times"))
		}
	}
	if f := run.Coverage.NodeReadyFlaps; f > 0 {
		add(SeverityWarn, CheckNodeFlaps, "%d node readiness %s: the simulator was unstable, latencies may be inflated", f, plural(f, "flap", "flaps"))
	}
	return out
}

// checkJoinsMeasured fails a run with joins it did not measure while node
// and DaemonSet were still there: the join percentiles would leave them out
// unsaid. A pod that never started on a node where kwok left a pod Pending
// to the end is the simulator's (a warning, the run is already left out of
// the statistics); a missing pod, or a Ready pod on a node never eligible,
// never is.
func checkJoinsMeasured(run *Run) []Finding {
	if len(run.NodeJoinsUnmeasured) == 0 {
		return nil
	}
	stalled := map[string]bool{}
	for _, st := range run.SimulatorStalls {
		if st.Open && !st.Terminating {
			stalled[st.Node] = true
		}
	}
	var fail, warn []string
	for _, j := range run.NodeJoinsUnmeasured {
		switch {
		case !j.Eligible:
			fail = append(fail, j.Node+" (a Ready pod, never eligible)")
		case !j.PodCreated:
			fail = append(fail, j.Node+" (eligible, no pod)")
		case stalled[j.Node]:
			warn = append(warn, j.Node+" (eligible, pod never started by kwok)")
		default:
			fail = append(fail, j.Node+" (eligible, pod never Ready)")
		}
	}
	total := len(run.NodeJoins) + run.NodeJoinsEnded + len(run.NodeJoinsUnmeasured)
	var out []Finding
	add := func(sev Severity, nodes []string, why string) {
		if len(nodes) == 0 {
			return
		}
		const shown = 5
		list := strings.Join(nodes[:min(shown, len(nodes))], ", ")
		if len(nodes) > shown {
			list += fmt.Sprintf(" and %d more", len(nodes)-shown)
		}
		out = append(out, Finding{
			Severity: sev, Check: CheckJoinUnmeasured, Scenario: run.Scenario, Nodes: run.Nodes, Controller: run.Controller, Repetition: run.Repetition,
			Detail: fmt.Sprintf("%d of %d node joins have no latency while node and DaemonSet remained: %s; %s", len(nodes), total, list, why),
		})
	}
	add(SeverityFail, fail, "the node join percentiles leave them out")
	add(SeverityWarn, warn, "the simulator's, and the run is left out of the statistics")
	return out
}

// Holds reports whether no failing finding concerns controller c.
func Holds(findings []Finding, controller string) bool {
	for _, f := range findings {
		if f.Severity == SeverityFail && (f.Controller == controller || f.Check == CheckNoRuns) {
			return false
		}
	}
	return true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
