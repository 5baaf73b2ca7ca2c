package reports

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRunMetrics(t *testing.T) {
	start := t0
	full := Run{
		Scenario: "s", Controller: ControllerOurs, Nodes: 3, Start: start, Outcome: OutcomeOK,
		Steps: []Step{
			{Name: "create", Converged: true, Seconds: 2},
			{Name: "update", Converged: true, Seconds: 5},
			{Name: "update", Converged: true, Seconds: 1},
		},
		Rollouts:     []Rollout{{Step: "update", Complete: true, Seconds: 4.5, Nodes: []NodeLatency{{Node: "a", Seconds: 1}, {Node: "b", Seconds: 3}, {Node: "c", Seconds: 4.5}}}},
		NodeJoins:    []NodeLatency{{Node: "a", Seconds: 0.5}, {Node: "b", Seconds: 0.7}, {Node: "c", Seconds: 2}},
		Violations:   []Violation{{Kind: "missing-pod", Expected: true}, {Kind: "extra-pod"}},
		Availability: []Availability{{PeakUnavailable: 1, AllowedUnavailable: 1}, {PeakUnavailable: 2, AllowedUnavailable: 1}},
		APIRequests:  map[string]int64{"list": 2, "create": 3},
		Resources:    Resources{CPUSeconds: 0.5, PeakRSSBytes: 1 << 20},
		Extra:        []ExtraMetric{{Name: "kwok rate", Unit: "pods/s", Value: 10, HigherIsBetter: true}},
		PodsCreated:  4,
	}
	notConverged := full
	notConverged.Steps = []Step{{Name: "create", Converged: false, Seconds: 300}}
	notConverged.Rollouts = []Rollout{{Complete: false, Seconds: 300}}
	notConverged.NodeJoins, notConverged.Violations, notConverged.Availability, notConverged.APIRequests, notConverged.Extra = nil, nil, nil, nil, nil
	notConverged.Resources = Resources{}
	failed := full
	failed.Outcome, failed.Error = OutcomeFailed, "boom"
	// kwok left a pod Pending: the run's times are the simulator's.
	stalled := full
	stalled.SimulatorStalls = []SimulatorStall{{Pod: "bench/agent-x", Node: "n1", Seconds: 30, Nudged: true}}
	// kube-scheduler exited and was started again: the times include the outage.
	restarted := full
	restarted.ClusterRestarts = []ClusterRestart{{Component: "kube-scheduler", At: start.Add(3 * time.Second)}}
	// Stalls that ended StallSettle before the first join leave the joins'
	// latencies standing, and nothing else; any closer, open or during the
	// joins, and the run gives no metric.
	j0 := start.Add(time.Minute)
	joinsAt := func(first time.Duration) []NodeLatency {
		return []NodeLatency{{Node: "a", Seconds: 0.5, Start: j0.Add(first)}, {Node: "b", Seconds: 0.7, Start: j0.Add(first + time.Second)}, {Node: "c", Seconds: 2, Start: j0.Add(first + 2*time.Second)}}
	}
	createStall := []SimulatorStall{{Pod: "bench/agent-x", Node: "n1", Start: j0.Add(-10 * time.Second), Seconds: 10, Nudged: true}} // ends at j0
	stalledBeforeJoins := stalled
	stalledBeforeJoins.SimulatorStalls, stalledBeforeJoins.NodeJoins = createStall, joinsAt(StallSettle)
	stalledJustBeforeJoins := stalledBeforeJoins
	stalledJustBeforeJoins.NodeJoins = joinsAt(StallSettle - time.Second)
	openStall := stalledBeforeJoins
	openStall.SimulatorStalls = []SimulatorStall{{Pod: "bench/agent-x", Node: "n1", Start: j0.Add(-10 * time.Second), Seconds: 10, Nudged: true, Open: true}}
	stallDuringJoins := stalledBeforeJoins
	stallDuringJoins.SimulatorStalls = append(slices.Clone(createStall), SimulatorStall{Pod: "bench/agent-y", Node: "joining-1", Start: j0.Add(StallSettle + time.Second), Seconds: 21, Nudged: true})
	// Pods-exist times only for create steps; the slowest of several rollouts.
	exist := func(sec float64) *float64 { return &sec }
	several := full
	several.Steps = []Step{
		{Name: "create", Kind: "create", Converged: true, Seconds: 2, PodsExistSeconds: exist(0.75)},
		{Name: "update", Kind: "update", Converged: true, Seconds: 5, PodsExistSeconds: exist(4)},
		{Name: "create", Kind: "create", Converged: false, Seconds: 300, PodsExistSeconds: exist(1)},
	}
	several.Rollouts = []Rollout{{Complete: true, Seconds: 4.5}, {Complete: true, Seconds: 6}}
	several.NodeJoins, several.Violations, several.Availability, several.APIRequests, several.Extra = nil, nil, nil, nil, nil
	several.Resources = Resources{}

	// Repairs: the median of each converged pods step's controller share,
	// by the step's key; none for a step that timed out.
	repaired := several
	repaired.Rollouts = nil
	repaired.Steps = []Step{
		{Name: "create", Kind: "create", Converged: true, Seconds: 2},
		{Name: "repair", Kind: "pods", Converged: true, Seconds: 3},
		{Name: "repair", Kind: "pods", Converged: true, Seconds: 4},
		{Name: "late", Kind: "pods", Converged: false, Seconds: 300},
	}
	repaired.Repairs = []Repair{
		{Step: "repair", Replacement: Replacement{Node: "a", Deleting: 1, Recreating: 0.5, Starting: 1}},
		{Step: "repair#2", Replacement: Replacement{Node: "a", Recreating: 0.2}},
		{Step: "repair#2", Replacement: Replacement{Node: "b", Recreating: 0.9}},
		{Step: "repair#2", Replacement: Replacement{Node: "c", Recreating: 0.4}},
		{Step: "late", Replacement: Replacement{Node: "c", Recreating: 7}},
	}

	tests := []struct {
		name string
		run  Run
		want map[string]float64
	}{
		{name: "full", run: full, want: map[string]float64{
			"converge": 8, "step:create": 2, "step:update": 5, "step:update#2": 1,
			"rollout": 4.5, "node-rollout-p99": 4.5, "node-join-p99": 2, "violations": 1, "peak-unavailable": 2,
			"requests": 5, "requests:create": 3, "requests:list": 2, "cpu": 0.5, "rss": 1 << 20, "extra:kwok rate": 10,
			"requests-per-pod": 1.25, "cpu-per-1000-pods": 125,
		}},
		{name: "not converged", run: notConverged, want: map[string]float64{"violations": 0}},
		{name: "pods exist and slowest rollout", run: several, want: map[string]float64{
			"step:create": 2, "step:create (pods exist)": 0.75, "step:update": 5,
			"rollout": 10.5, "rollout-slowest": 6, "violations": 0,
		}},
		{name: "repairs", run: repaired, want: map[string]float64{
			"step:create": 2, "step:repair": 3, "step:repair (gone to new pod, median)": 0.5,
			"step:repair#2": 4, "step:repair#2 (gone to new pod, median)": 0.4, "violations": 0,
		}},
		{name: "failed", run: failed, want: map[string]float64{}},
		{name: "simulator stall", run: stalled, want: map[string]float64{}},
		{name: "cluster component restarted", run: restarted, want: map[string]float64{}},
		{name: "stalls ended before the joins", run: stalledBeforeJoins, want: map[string]float64{"node-join-p99": 2}},
		{name: "stalls ended less than StallSettle before the joins", run: stalledJustBeforeJoins, want: map[string]float64{}},
		{name: "open stall", run: openStall, want: map[string]float64{}},
		{name: "stall during the joins", run: stallDuringJoins, want: map[string]float64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]float64{}
			for _, mv := range RunMetrics(&tc.run) {
				got[mv.Metric.Key] = mv.Value
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RunMetrics (-want +got):\n%s", diff)
			}
		})
	}
	var units []string
	for _, mv := range RunMetrics(&full) {
		if mv.Metric.BenchUnit != "" {
			units = append(units, mv.Metric.BenchUnit)
		}
	}
	want := []string{"s/converge", "s/rollout", "s/node-rollout-p99", "s/node-join-p99", "violations", "requests", "requests/pod", "cpu-s", "cpu-s/1000-pods", "peak-RSS-B", "kwok_rate-pods/s"}
	if diff := cmp.Diff(want, units); diff != "" {
		t.Errorf("bench units in order (-want +got):\n%s", diff)
	}
}

func TestGroupsOrder(t *testing.T) {
	r := &Report{Params: Params{Scenarios: []string{"b", "a"}}}
	add := func(s string, nodes int, c string, rep int) {
		run := newRun(s, c, rep, 1)
		run.Nodes = nodes
		r.Runs = append(r.Runs, run)
	}
	add("a", 10, ControllerOurs, 1)
	add("a", 10, ControllerOurs, 0)
	add("a", 10, ControllerUpstream, 0)
	add("b", 100, ControllerOurs, 0)
	add("b", 10, ControllerOurs, 0)
	add("c", 10, ControllerUpstream, 0)
	var got []string
	for _, g := range Groups(r) {
		var reps []string
		for _, run := range g.Runs {
			reps = append(reps, strconv.Itoa(run.Repetition))
		}
		got = append(got, g.Case.String()+" "+g.Controller+" "+strings.Join(reps, ","))
	}
	want := []string{
		"b (nodes=10) ours 0", "b (nodes=100) ours 0",
		"a (nodes=10) upstream 0", "a (nodes=10) ours 0,1",
		"c (nodes=10) upstream 0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Groups order (-want +got):\n%s", diff)
	}
}

func TestCheckRun(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Run)
		want   []string // "severity check: detail"
	}{
		{name: "clean", mutate: func(*Run) {}},
		{name: "failed", mutate: func(r *Run) { r.Outcome, r.Error = OutcomeFailed, "kwok died" },
			want: []string{"fail run-failed: run failed: kwok died"}},
		{name: "not converged", mutate: func(r *Run) { r.Steps[0].Converged, r.Steps[0].Seconds = false, 300 },
			want: []string{`fail not-converged: step "create" (create) did not converge within 300.0s`}},
		{name: "expected not converged", mutate: func(r *Run) {
			r.Steps[0].Converged, r.Steps[0].Seconds, r.Steps[0].ExpectedNotConverged = false, 60, true
		}},
		{name: "rollouts", mutate: func(r *Run) {
			r.Rollouts = []Rollout{
				{Step: "update", DaemonSet: "ns/a", Outcome: "superseded"},
				{Step: "update", DaemonSet: "ns/b", Outcome: "deleted"},
				{Step: "rollback", DaemonSet: "ns/a", Complete: true, Outcome: "converged"},
				{Step: "update#2", DaemonSet: "ns/c"},
			}
		}, want: []string{`fail rollout-incomplete: rollout of ns/c in step "update#2" did not complete`}},
		{name: "violations", mutate: func(r *Run) {
			r.Violations = []Violation{
				{Kind: "missing-pod", Node: "n2", Start: r.Start.Add(5 * time.Second), Seconds: 2},
				{Kind: "extra-pod", Node: "n1", Start: r.Start.Add(3 * time.Second), Seconds: 1.5},
				{Kind: "missing-pod", Node: "n3", Start: r.Start.Add(4 * time.Second), Seconds: 1, Expected: true},
			}
		}, want: []string{`fail unexpected-violation: 2 unexpected violations (extra-pod ×1, missing-pod ×1); first: extra-pod on node "n1" at +3.00s for 1.50s`}},
		{name: "over unavailable", mutate: func(r *Run) {
			r.Availability = []Availability{{DaemonSet: "ns/ds", Step: "update", PeakUnavailable: 3, AllowedUnavailable: 2}}
		}, want: []string{`fail over-unavailable: ns/ds step "update": peak unavailable 3 > allowed 2`}},
		// A stalled run leaves the statistics, not the verdict: its violations still fail.
		{name: "simulator stall with a violation", mutate: func(r *Run) {
			r.SimulatorStalls = []SimulatorStall{{Pod: "ns/p", Node: "n1", Seconds: 31.5, Nudged: true}}
			r.Violations = []Violation{{Kind: "extra-pod", Node: "n1", Start: r.Start.Add(3 * time.Second), Seconds: 1.5}}
		}, want: []string{
			`fail unexpected-violation: 1 unexpected violation (extra-pod ×1); first: extra-pod on node "n1" at +3.00s for 1.50s`,
			"warn simulator-stall: kwok left 1 pod Pending on Ready nodes (longest 31.50s, 0 still waiting at the end); the harness nudged each; the run is left out of the statistics, since its times include the stall",
		}},
		// A deleted pod kwok never finalized is the simulator's too; the
		// missing pod it caused is still judged.
		{name: "simulator stall of a terminating pod", mutate: func(r *Run) {
			r.SimulatorStalls = []SimulatorStall{
				{Pod: "ns/old", Node: "n1", Terminating: true, Seconds: 24, Nudged: true},
				{Pod: "ns/older", Node: "n2", Terminating: true, Seconds: 40, Nudged: true, Open: true},
				{Pod: "ns/new", Node: "n3", Seconds: 21, Nudged: true},
			}
			r.Violations = []Violation{{Kind: "missing-pod", Node: "n2", Start: r.Start.Add(3 * time.Second), Seconds: 40}}
		}, want: []string{
			`fail unexpected-violation: 1 unexpected violation (missing-pod ×1); first: missing-pod on node "n2" at +3.00s for 40.00s`,
			"warn simulator-stall: kwok left 1 pod Pending and 2 deleted pods terminating on Ready nodes (longest 40.00s, 1 still waiting at the end); the harness nudged each; the run is left out of the statistics, since its times include the stall",
		}},
		// A cluster component that exited leaves the statistics, not the
		// verdict; one that could not be started again fails the run.
		{name: "cluster restart with a violation", mutate: func(r *Run) {
			r.ClusterRestarts = []ClusterRestart{{Component: "kube-scheduler", At: r.Start.Add(12500 * time.Millisecond)}}
			r.Violations = []Violation{{Kind: "extra-pod", Node: "n1", Start: r.Start.Add(3 * time.Second), Seconds: 1.5}}
		}, want: []string{
			`fail unexpected-violation: 1 unexpected violation (extra-pod ×1); first: extra-pod on node "n1" at +3.00s for 1.50s`,
			"warn cluster-restart: cluster component exited and the harness started it again (kube-scheduler at 12.50s); the run is left out of the statistics, since its times include the outage",
		}},
		{name: "cluster component not started again", mutate: func(r *Run) {
			r.ClusterRestarts = []ClusterRestart{
				{Component: "kube-controller-manager", At: r.Start.Add(2 * time.Second)},
				{Component: "kube-scheduler", At: r.Start.Add(2 * time.Second), Error: "kwokctl start cluster: exit status 1"},
			}
		}, want: []string{
			"fail cluster-restart: cluster component exited and did not start again (kube-scheduler at 2.00s: kwokctl start cluster: exit status 1): the run measured a broken cluster",
		}},
		{name: "simulator stall before the node joins", mutate: func(r *Run) {
			r.SimulatorStalls = []SimulatorStall{{Pod: "ns/p", Node: "n1", Start: r.Start, Seconds: 25, Nudged: true}}
			r.NodeJoins = []NodeLatency{{Node: "j1", Seconds: 0.5, Start: r.Start.Add(45 * time.Second)}}
		}, want: []string{
			"warn simulator-stall: kwok left 1 pod Pending on Ready nodes (longest 25.00s, 0 still waiting at the end); the harness nudged each; the run is left out of the statistics but for its node joins, which all began 20s or more after the last stall ended",
		}},
		// kwok's replays warn; unlike a stall they take no run out (RunMetrics ignores them).
		{name: "kwok replays", mutate: func(r *Run) {
			r.Extra = []ExtraMetric{{Name: "apiserver-pod-watches-closed", Value: 30}, {Name: MetricKwokPodWatchReplays, Value: 20}}
		}, want: []string{
			"warn kwok-replay: kube-apiserver closed kwok's pod watch 20 times as unresponsive, and kwok worked through every pod again each time before what changed: pods started late for the simulator's reason, latencies may be inflated",
		}},
		{name: "no kwok replay", mutate: func(r *Run) {
			r.Extra = []ExtraMetric{{Name: MetricKwokPodWatchReplays, Value: 0}}
		}},
		{name: "coverage", mutate: func(r *Run) {
			r.Coverage = Coverage{PodsExpected: 200, PodsObserved: 199, ObservedFraction: 0.995, NodeReadyFlaps: 3,
				WatchGaps: []WatchGap{{Resource: "pods", Seconds: 1.25}, {Resource: "nodes", Seconds: 0.5}}}
		}, want: []string{
			"fail incomplete-coverage: observed 99.5% of pods (199 of 200)",
			"fail watch-gap: 2 watch gaps (pods 1.25s, nodes 0.500s): events may be missing",
			"warn node-flaps: 3 node readiness flaps: the simulator was unstable, latencies may be inflated",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := newRun("s", ControllerOurs, 0, 1)
			tc.mutate(&run)
			var got []string
			for _, f := range checkRun(&run) {
				got = append(got, string(f.Severity)+" "+f.Check+": "+f.Detail)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("checkRun (-want +got):\n%s", diff)
			}
		})
	}
	if f := CheckInvariants(&Report{}); len(f) != 1 || f[0].Check != CheckNoRuns {
		t.Errorf("CheckInvariants(empty) = %+v, want one no-runs finding", f)
	}
}

// benchLine is the Go benchmark result line syntax (golang.org/design/14313):
// "Benchmark" + a name without spaces whose first rune is not lower case, an
// integer iteration count, then pairs of a number and a unit without spaces.
var benchLine = regexp.MustCompile(`^Benchmark[^\sa-z]\S*\s+\d+(\s+\S+\s+\S+)+$`)

// configLine is a configuration line: a key starting with a lower-case letter,
// without spaces or upper case, a colon, and a value after spaces.
var configLine = regexp.MustCompile(`^[a-z][^\sA-Z:]*:\s+\S.*$`)

func TestBenchTextFormat(t *testing.T) {
	r, _ := readTestdata(t)
	r.Runs[0].Scenario = "odd name/with=chars" // must be sanitized into one name part
	lines := strings.Split(strings.TrimSuffix(BenchText(r), "\n"), "\n")
	results := 0
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "Benchmark"):
			results++
			if !benchLine.MatchString(line) {
				t.Errorf("line %d is not a valid result line: %q", i+1, line)
				continue
			}
			f := strings.Fields(line)
			parts := strings.Split(f[0], "/")
			if len(parts) != 4 || !strings.HasPrefix(parts[2], "controller=") || !strings.HasPrefix(parts[3], "nodes=") {
				t.Errorf("line %d: name %q is not BenchmarkScenario/<name>/controller=<c>/nodes=<n>", i+1, f[0])
			}
			for j := 2; j < len(f); j += 2 {
				if _, err := strconv.ParseFloat(f[j], 64); err != nil {
					t.Errorf("line %d: value %q: %v", i+1, f[j], err)
				}
			}
		default:
			if !configLine.MatchString(line) {
				t.Errorf("line %d is neither a comment, a result nor a configuration line: %q", i+1, line)
			}
		}
	}
	// 12 rolling-update runs + 5 successful node-churn runs.
	if results != 17 {
		t.Errorf("got %d result lines, want 17", results)
	}
	if !strings.Contains(BenchText(r), "BenchmarkScenario/odd_name_with_chars/controller=ours/nodes=5 1 ") {
		t.Errorf("scenario name was not sanitized:\n%s", BenchText(r))
	}
}

func TestSummaryFitsOneScreen(t *testing.T) {
	r, _ := readTestdata(t)
	s := Summary(r)
	lines := strings.Split(s, "\n")
	if len(lines) > 40 {
		t.Errorf("Summary has %d lines, want at most 40", len(lines))
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 160 {
			t.Errorf("Summary line of %d runes: %q", n, l)
		}
	}
}
