package reports

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Metric is one scalar measured per run and compared over repetitions.
// All built-in metrics are lower-is-better.
type Metric struct {
	Key            string // stable identifier, used in baselines
	Label          string
	Unit           string // "s", "B", or "" for counts
	BenchUnit      string // unit in bench.txt; "" when the metric is not written there
	HigherIsBetter bool
}

// Built-in metrics. Per-step, per-verb and extra metrics are made by stepMetric,
// verbMetric and extraMetric.
var (
	MetricConverge = Metric{Key: "converge", Label: "convergence, all steps", Unit: "s", BenchUnit: "s/converge"}
	MetricRollout  = Metric{Key: "rollout", Label: "rollout, end to end", Unit: "s", BenchUnit: "s/rollout"}
	// MetricRolloutSlowest is the longest of a run's rollouts, where it had
	// several (many DaemonSets rolling at once).
	MetricRolloutSlowest  = Metric{Key: "rollout-slowest", Label: "slowest rollout", Unit: "s", BenchUnit: "s/rollout-slowest"}
	MetricNodeRolloutP99  = Metric{Key: "node-rollout-p99", Label: "per-node rollout p99", Unit: "s", BenchUnit: "s/node-rollout-p99"}
	MetricNodeJoinP99     = Metric{Key: "node-join-p99", Label: "node join p99", Unit: "s", BenchUnit: "s/node-join-p99"}
	MetricNodeEligibleP99 = Metric{Key: "node-eligible-p99", Label: "node added to eligible p99 (cluster's share)", Unit: "s"}
	MetricPodGCWaitMax    = Metric{Key: "pod-gc-wait-max", Label: "pod GC wait on deleted nodes, max (cluster's share)", Unit: "s"}
	MetricViolations      = Metric{Key: "violations", Label: "unexpected violations", BenchUnit: "violations"}
	MetricPeakUnavailable = Metric{Key: "peak-unavailable", Label: "peak unavailable pods"}
	MetricRequests        = Metric{Key: "requests", Label: "API requests", BenchUnit: "requests"}
	MetricCPU             = Metric{Key: "cpu", Label: "controller CPU", Unit: "s", BenchUnit: "cpu-s"}
	MetricRSS             = Metric{Key: "rss", Label: "controller peak RSS", Unit: "B", BenchUnit: "peak-RSS-B"}
	// Per pod created (Run.PodsCreated), so that runs of different sizes
	// and scenarios compare.
	MetricRequestsPerPod = Metric{Key: "requests-per-pod", Label: "API requests per pod created", BenchUnit: "requests/pod"}
	MetricCPUPer1000Pods = Metric{Key: "cpu-per-1000-pods", Label: "controller CPU per 1000 pods created", Unit: "s", BenchUnit: "cpu-s/1000-pods"}
)

const (
	stepPrefix  = "step:"
	verbPrefix  = "requests:"
	extraPrefix = "extra:"
)

func stepMetric(name string) Metric {
	return Metric{Key: stepPrefix + name, Label: "step " + name, Unit: "s"}
}

// podsExistMetric is the time from a create step to every pod existing
// (reports.Step.PodsExistSeconds): a step metric of its own, so that it
// sits beside the step in tables, plots and scale curves.
func podsExistMetric(stepKey string) Metric {
	return stepMetric(stepKey + " (pods exist)")
}

// repairMetric is the median over a pods step's repaired nodes of the
// controller's share, from the deleted pod gone to the new pod seen
// (reports.Repair): the step's time without kwok's finalizing and starting.
func repairMetric(stepKey string) Metric {
	return stepMetric(stepKey + " (gone to new pod, median)")
}

// repairSeconds are the controller's shares of the step's repairs.
func repairSeconds(run *Run, stepKey string) []float64 {
	var xs []float64
	for _, r := range run.Repairs {
		if r.Step == stepKey {
			xs = append(xs, r.Recreating)
		}
	}
	return xs
}

func verbMetric(verb string) Metric {
	return Metric{Key: verbPrefix + verb, Label: "requests " + verb}
}

func extraMetric(e ExtraMetric) Metric {
	unit := benchToken(e.Name)
	if e.Unit != "" {
		unit += "-" + benchToken(e.Unit)
	}
	return Metric{Key: extraPrefix + e.Name, Label: e.Name, Unit: e.Unit, BenchUnit: unit, HigherIsBetter: e.HigherIsBetter}
}

// metricRank orders metric families in tables.
func metricRank(key string) int {
	switch {
	case key == MetricConverge.Key:
		return 0
	case strings.HasPrefix(key, stepPrefix):
		return 1
	case key == MetricRollout.Key, key == MetricRolloutSlowest.Key:
		return 2
	case key == MetricNodeRolloutP99.Key:
		return 3
	case key == MetricNodeJoinP99.Key:
		return 4
	case key == MetricPodGCWaitMax.Key, key == MetricNodeEligibleP99.Key:
		return 5
	case key == MetricViolations.Key:
		return 5
	case key == MetricPeakUnavailable.Key:
		return 6
	case key == MetricRequests.Key:
		return 7
	case strings.HasPrefix(key, verbPrefix):
		return 8
	case key == MetricCPU.Key:
		return 9
	case key == MetricRSS.Key:
		return 10
	default:
		return 11
	}
}

// MetricValue is one metric's value in one run.
type MetricValue struct {
	Metric Metric
	Value  float64
}

// StallSettle is how long after a simulator stall ended kwok may still be
// working off its consequences (the nudges' events, the backlog behind
// them): at 5000 nodes, kwok patched stalled pods a second time up to 12 s
// after they started.
const StallSettle = 20 * time.Second

// RunMetrics extracts the metrics of one run, in table order. A metric is
// absent when the run cannot define it: convergence when a step did not
// converge, rollout when a rollout did not complete, CPU and RSS when zero
// (not measured). Failed runs yield no metrics, and neither do runs in
// which the simulator stalled: their times are kwok's, not the controller's
// (the invariants still judge them, and say they were left out). One
// exception: the node-join latencies of a run whose every join began at
// least StallSettle after the last stall ended (stalls at create, joins
// after a pause) owe nothing to the stalls, and are kept. Runs in which a
// component of the cluster exited (ClusterRestarts) yield none either.
func RunMetrics(run *Run) []MetricValue {
	if !run.OK() || len(run.ClusterRestarts) > 0 {
		return nil
	}
	var out []MetricValue
	add := func(m Metric, v float64) { out = append(out, MetricValue{m, v}) }
	if len(run.SimulatorStalls) > 0 {
		if joinsAfterStalls(run) {
			add(MetricNodeJoinP99, Percentile(nodeJoinSeconds(run), 0.99))
		}
		return out
	}

	if len(run.Steps) > 0 {
		total, all := 0.0, true
		for _, s := range run.Steps {
			total += s.Seconds
			all = all && s.Converged
		}
		if all {
			add(MetricConverge, total)
		}
		for i, s := range run.Steps {
			if s.Converged {
				add(stepMetric(StepKey(run.Steps, i)), s.Seconds)
				if s.Kind == "create" && s.PodsExistSeconds != nil { // scenarios.KindCreate
					add(podsExistMetric(StepKey(run.Steps, i)), *s.PodsExistSeconds)
				}
				if xs := repairSeconds(run, StepKey(run.Steps, i)); len(xs) > 0 {
					add(repairMetric(StepKey(run.Steps, i)), Median(xs))
				}
			}
		}
	}
	if len(run.Rollouts) > 0 {
		total, all := 0.0, true
		for _, ro := range run.Rollouts {
			total += ro.Seconds
			all = all && ro.Complete
		}
		if all {
			add(MetricRollout, total)
			if len(run.Rollouts) > 1 {
				slowest := 0.0
				for _, ro := range run.Rollouts {
					slowest = max(slowest, ro.Seconds)
				}
				add(MetricRolloutSlowest, slowest)
			}
		}
		if nodes := nodeRolloutSeconds(run); len(nodes) > 0 {
			add(MetricNodeRolloutP99, Percentile(nodes, 0.99))
		}
	}
	if len(run.NodeJoins) > 0 {
		add(MetricNodeJoinP99, Percentile(nodeJoinSeconds(run), 0.99))
	}
	if len(run.NodeEligible) > 0 {
		xs := make([]float64, 0, len(run.NodeEligible))
		for _, n := range run.NodeEligible {
			xs = append(xs, n.Seconds)
		}
		add(MetricNodeEligibleP99, Percentile(xs, 0.99))
	}
	if len(run.PodGCWaits) > 0 {
		longest := 0.0
		for _, w := range run.PodGCWaits {
			longest = max(longest, w.Seconds)
		}
		add(MetricPodGCWaitMax, longest)
	}
	add(MetricViolations, float64(unexpectedViolations(run)))
	if len(run.Availability) > 0 {
		peak := 0
		for _, a := range run.Availability {
			peak = max(peak, a.PeakUnavailable)
		}
		add(MetricPeakUnavailable, float64(peak))
	}
	if run.APIRequests != nil {
		var total int64
		verbs := make([]string, 0, len(run.APIRequests))
		for v, n := range run.APIRequests {
			total += n
			verbs = append(verbs, v)
		}
		add(MetricRequests, float64(total))
		if run.PodsCreated > 0 {
			add(MetricRequestsPerPod, float64(total)/float64(run.PodsCreated))
		}
		slices.Sort(verbs)
		for _, v := range verbs {
			add(verbMetric(v), float64(run.APIRequests[v]))
		}
	}
	if run.Resources.CPUSeconds > 0 {
		add(MetricCPU, run.Resources.CPUSeconds)
		if run.PodsCreated > 0 {
			add(MetricCPUPer1000Pods, run.Resources.CPUSeconds/float64(run.PodsCreated)*1000)
		}
	}
	if run.Resources.PeakRSSBytes > 0 {
		add(MetricRSS, float64(run.Resources.PeakRSSBytes))
	}
	for _, e := range run.Extra {
		add(extraMetric(e), e.Value)
	}
	return out
}

// StepKey names step i, numbering repeated names (name#2) so each stays distinct.
func StepKey(steps []Step, i int) string {
	n := 1
	for j := range i {
		if steps[j].Name == steps[i].Name {
			n++
		}
	}
	if n == 1 {
		return steps[i].Name
	}
	return fmt.Sprintf("%s#%d", steps[i].Name, n)
}

func unexpectedViolations(run *Run) int {
	n := 0
	for _, v := range run.Violations {
		if !v.Expected {
			n++
		}
	}
	return n
}

func nodeRolloutSeconds(run *Run) []float64 {
	var xs []float64
	for _, ro := range run.Rollouts {
		for _, n := range ro.Nodes {
			xs = append(xs, n.Seconds)
		}
	}
	return xs
}

func nodeJoinSeconds(run *Run) []float64 {
	xs := make([]float64, 0, len(run.NodeJoins))
	for _, n := range run.NodeJoins {
		xs = append(xs, n.Seconds)
	}
	return xs
}

// Case is what repetitions are grouped by: one scenario at one cluster size.
type Case struct {
	Scenario string
	Nodes    int
}

func (c Case) String() string {
	if c.Nodes == 0 {
		return c.Scenario + " (nodes=any)"
	}
	return fmt.Sprintf("%s (nodes=%d)", c.Scenario, c.Nodes)
}

// Series is one metric's values over the successful repetitions of a group.
type Series struct {
	Metric      Metric
	Values      []float64
	Repetitions []int // Repetitions[i] produced Values[i]
}

// Group is all runs of one case with one controller.
type Group struct {
	Case       Case
	Controller string
	Runs       []*Run // sorted by repetition, failed runs included
	Metrics    []Series
	// NodeJoins and NodeRollouts pool the per-node latencies of all successful
	// runs but those in which a cluster component exited, Replacements the
	// rollouts' replacements of the same runs.
	NodeJoins, NodeRollouts []float64
	Replacements            []Replacement
	// Repairs pool the pods steps' repairs of the same runs.
	Repairs []Replacement
}

// Failed counts the failed runs of the group.
func (g *Group) Failed() int {
	n := 0
	for _, r := range g.Runs {
		if !r.OK() {
			n++
		}
	}
	return n
}

// Lookup returns the series of a metric key, or nil.
func (g *Group) Lookup(key string) *Series {
	for i := range g.Metrics {
		if g.Metrics[i].Metric.Key == key {
			return &g.Metrics[i]
		}
	}
	return nil
}

// Groups splits a report into groups, ordered by case (scenarios in
// Params.Scenarios order, then first appearance; nodes ascending) and then
// controller (upstream before ours, the reference first).
func Groups(r *Report) []Group {
	type key struct {
		c          Case
		controller string
	}
	byKey := map[key]*Group{}
	var keys []key
	for i := range r.Runs {
		run := &r.Runs[i]
		k := key{Case{run.Scenario, run.Nodes}, run.Controller}
		g, ok := byKey[k]
		if !ok {
			g = &Group{Case: k.c, Controller: k.controller}
			byKey[k] = g
			keys = append(keys, k)
		}
		g.Runs = append(g.Runs, run)
	}
	order := caseOrder(r)
	slices.SortStableFunc(keys, func(a, b key) int {
		if c := compareCases(order, a.c, b.c); c != 0 {
			return c
		}
		return cmp.Compare(controllerRank(a.controller), controllerRank(b.controller))
	})
	out := make([]Group, 0, len(keys))
	for _, k := range keys {
		g := byKey[k]
		slices.SortStableFunc(g.Runs, func(a, b *Run) int { return cmp.Compare(a.Repetition, b.Repetition) })
		fillSeries(g)
		out = append(out, *g)
	}
	return out
}

// pooled says whether a run's per-node latencies join its group's pools:
// it succeeded and no cluster component restarted during it.
func pooled(run *Run) bool { return run.OK() && len(run.ClusterRestarts) == 0 }

func fillSeries(g *Group) {
	idx := map[string]int{}
	for _, run := range g.Runs {
		for _, mv := range RunMetrics(run) {
			i, ok := idx[mv.Metric.Key]
			if !ok {
				i = len(g.Metrics)
				idx[mv.Metric.Key] = i
				g.Metrics = append(g.Metrics, Series{Metric: mv.Metric})
			}
			g.Metrics[i].Values = append(g.Metrics[i].Values, mv.Value)
			g.Metrics[i].Repetitions = append(g.Metrics[i].Repetitions, run.Repetition)
		}
		if pooled(run) {
			g.NodeJoins = append(g.NodeJoins, nodeJoinSeconds(run)...)
			g.NodeRollouts = append(g.NodeRollouts, nodeRolloutSeconds(run)...)
			for _, ro := range run.Rollouts {
				g.Replacements = append(g.Replacements, ro.Replacements...)
			}
			for _, r := range run.Repairs {
				g.Repairs = append(g.Repairs, r.Replacement)
			}
		}
	}
	metrics := make([]Metric, len(g.Metrics))
	for i, s := range g.Metrics {
		metrics[i] = s.Metric
	}
	seen := firstSeen(metrics)
	slices.SortStableFunc(g.Metrics, func(a, b Series) int { return compareMetrics(seen, a.Metric, b.Metric) })
}

func firstSeen(ms []Metric) map[string]int {
	seen := map[string]int{}
	for i, m := range ms {
		if _, ok := seen[m.Key]; !ok {
			seen[m.Key] = i
		}
	}
	return seen
}

// compareMetrics orders by family, then steps and extras by first appearance, verbs alphabetically.
func compareMetrics(seen map[string]int, a, b Metric) int {
	if c := cmp.Compare(metricRank(a.Key), metricRank(b.Key)); c != 0 {
		return c
	}
	if strings.HasPrefix(a.Key, verbPrefix) {
		return cmp.Compare(a.Key, b.Key)
	}
	return cmp.Compare(seen[a.Key], seen[b.Key])
}

// unionMetrics merges the metric lists of groups in table order.
func unionMetrics(groups ...*Group) []Metric {
	var all []Metric
	have := map[string]bool{}
	for _, g := range groups {
		if g == nil {
			continue
		}
		for _, s := range g.Metrics {
			if !have[s.Metric.Key] {
				have[s.Metric.Key] = true
				all = append(all, s.Metric)
			}
		}
	}
	seen := firstSeen(all)
	slices.SortStableFunc(all, func(a, b Metric) int { return compareMetrics(seen, a, b) })
	return all
}

func caseOrder(r *Report) map[string]int {
	order := map[string]int{}
	for _, s := range r.Params.Scenarios {
		if _, ok := order[s]; !ok {
			order[s] = len(order)
		}
	}
	for _, run := range r.Runs {
		if _, ok := order[run.Scenario]; !ok {
			order[run.Scenario] = len(order)
		}
	}
	return order
}

func compareCases(order map[string]int, a, b Case) int {
	if c := cmp.Compare(order[a.Scenario], order[b.Scenario]); c != 0 {
		return c
	}
	return cmp.Compare(a.Nodes, b.Nodes)
}

func controllerRank(c string) int {
	switch c {
	case ControllerUpstream:
		return 0
	case ControllerOurs:
		return 1
	case ControllerOursDirect:
		return 2
	case ControllerExternal:
		return 3
	}
	return 4 // the floor, a bound rather than a controller, comes last
}

// benchToken makes s usable as a Go benchmark unit: no whitespace, never empty.
func benchToken(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, s)
	if s == "" {
		return "_"
	}
	return s
}

// benchNameToken makes s usable as one part of a benchmark name: also no
// '/' (separates parts) and no '=' (would read as a key=value part).
func benchNameToken(s string) string {
	return strings.NewReplacer("/", "_", "=", "_").Replace(benchToken(s))
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// joinsAfterStalls says whether the run has node joins and each began at
// least StallSettle after every simulator stall ended. An open stall, or a
// join without a recorded start, keeps them out.
func joinsAfterStalls(run *Run) bool {
	if len(run.NodeJoins) == 0 {
		return false
	}
	var clean time.Time
	for _, st := range run.SimulatorStalls {
		if st.Open {
			return false
		}
		end := st.Start.Add(time.Duration(st.Seconds*float64(time.Second)) + StallSettle)
		if end.After(clean) {
			clean = end
		}
	}
	for _, j := range run.NodeJoins {
		if j.Start.IsZero() || j.Start.Before(clean) {
			return false
		}
	}
	return true
}
