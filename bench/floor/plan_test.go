package floor_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dsbench/dsbench/bench/floor"
)

const dsKey = "ns/ds"

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func maxUnavailable(v intstr.IntOrString) appsv1.DaemonSetUpdateStrategy {
	return appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &v}}
}

func maxSurge(v intstr.IntOrString) appsv1.DaemonSetUpdateStrategy {
	zero := intstr.FromInt32(0)
	return appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: &v, MaxUnavailable: &zero}}
}

var (
	one      = maxUnavailable(intstr.FromInt32(1))
	onDelete = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
)

// must is a must-run node holding pods.
func must(name string, pods ...floor.Pod) floor.Node {
	return floor.Node{Name: name, MustRun: true, MayRun: true, Pods: pods}
}

func creating(n floor.Node) floor.Node { n.Creating = true; return n }

// current is an available pod of the current revision, created at sec.
func current(name string, sec int) floor.Pod {
	return floor.Pod{Key: "ns/" + name, Created: t0.Add(time.Duration(sec) * time.Second), Current: true, Ready: true, Available: true}
}

func old(name string, sec int) floor.Pod { p := current(name, sec); p.Current = false; return p }

func unready(p floor.Pod) floor.Pod     { p.Ready, p.Available = false, false; return p }
func unavailable(p floor.Pod) floor.Pod { p.Available = false; return p }
func failed(p floor.Pod) floor.Pod      { p.Terminal = true; return unready(p) }
func terminating(p floor.Pod) floor.Pod { p.Terminating = true; return p }
func deleting(p floor.Pod) floor.Pod    { p.Deleting = true; return p }
func orphan(p floor.Pod) floor.Pod      { p.Orphan = true; return p }

func create(node string) floor.Create { return floor.Create{DaemonSet: dsKey, Node: node} }

func del(node, pod string, r floor.Reason) floor.Delete {
	return floor.Delete{DaemonSet: dsKey, Node: node, Pod: "ns/" + pod, Reason: r}
}

// olds is n must-run nodes n00.. each with an available old pod.
func olds(n int) []floor.Node {
	var out []floor.Node
	for i := range n {
		out = append(out, must(fmt.Sprintf("n%02d", i), old(fmt.Sprintf("p%02d", i), 0)))
	}
	return out
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name     string
		strategy appsv1.DaemonSetUpdateStrategy
		nodes    []floor.Node
		want     floor.Plan
	}{
		{
			name:     "create where the pod must run and is missing, only there",
			strategy: one,
			nodes: []floor.Node{must("b"), must("a"), {Name: "may", MayRun: true}, {Name: "no"},
				must("has", current("x", 0)), must("gone", terminating(failed(current("y", 0))))},
			want: floor.Plan{Creates: []floor.Create{create("a"), create("b"), create("gone")}},
		},
		{
			name:     "without surge, no create while the node's pod terminates (upstream)",
			strategy: one,
			nodes:    []floor.Node{must("a", terminating(current("x", 0))), must("b", terminating(old("y", 0)))},
		},
		{
			name:     "with surge, the create goes beside the terminating pod",
			strategy: maxSurge(intstr.FromInt32(1)),
			nodes:    []floor.Node{must("a", terminating(current("x", 0)))},
			want:     floor.Plan{Creates: []floor.Create{create("a")}},
		},
		{
			name:     "OnDelete waits too",
			strategy: onDelete,
			nodes:    []floor.Node{must("a", terminating(current("x", 0)))},
		},
		{
			name:     "no create while one is in flight, or an active pod's delete is unseen",
			strategy: one,
			nodes: []floor.Node{creating(must("a")), must("b", deleting(current("x", 0))),
				must("c", deleting(failed(current("y", 0))))},
			want: floor.Plan{Creates: []floor.Create{create("c")}},
		},
		{
			name:     "ineligible node: every pod goes, terminating ones aside",
			strategy: one,
			nodes:    []floor.Node{{Name: "no", Pods: []floor.Pod{current("x", 0), failed(current("y", 0)), terminating(current("z", 0))}}},
			want:     floor.Plan{Deletes: []floor.Delete{del("no", "x", floor.IneligibleReason), del("no", "y", floor.IneligibleReason)}},
		},
		{
			name:     "failed pod: deleted and replaced at once",
			strategy: one,
			nodes:    []floor.Node{must("a", failed(current("x", 0)))},
			want:     floor.Plan{Creates: []floor.Create{create("a")}, Deletes: []floor.Delete{del("a", "x", floor.FailedReason)}},
		},
		{
			name:     "duplicates without surge: the oldest stays",
			strategy: one,
			nodes:    []floor.Node{must("a", current("late", 5), current("early", 1), current("mid", 3))},
			want:     floor.Plan{Deletes: []floor.Delete{del("a", "late", floor.ExcessReason), del("a", "mid", floor.ExcessReason)}},
		},
		{
			name:     "may run but not must: one current pod stays, an old one goes at once",
			strategy: one,
			nodes: []floor.Node{{Name: "a", MayRun: true, Pods: []floor.Pod{current("x", 0)}},
				{Name: "b", MayRun: true, Pods: []floor.Pod{old("y", 0), current("z", 1)}},
				{Name: "c", MayRun: true, Pods: []floor.Pod{old("w", 0)}}},
			want: floor.Plan{Deletes: []floor.Delete{del("c", "w", floor.OutdatedReason), del("b", "y", floor.ExcessReason)}},
		},
		{
			name:     "OnDelete: old pods stay",
			strategy: onDelete,
			nodes:    append(olds(3), floor.Node{Name: "may", MayRun: true, Pods: []floor.Pod{old("w", 0)}}),
		},
		{
			name:     "maxUnavailable 20% of 10: two waves of two",
			strategy: maxUnavailable(intstr.FromString("20%")),
			nodes:    olds(10),
			want:     floor.Plan{Deletes: []floor.Delete{del("n00", "p00", floor.OutdatedReason), del("n01", "p01", floor.OutdatedReason)}},
		},
		{
			name:     "maxUnavailable 10% of 5 rounds up to 1",
			strategy: maxUnavailable(intstr.FromString("10%")),
			nodes:    olds(5),
			want:     floor.Plan{Deletes: []floor.Delete{del("n00", "p00", floor.OutdatedReason)}},
		},
		{
			name:     "maxUnavailable and maxSurge 0: one at a time",
			strategy: maxUnavailable(intstr.FromInt32(0)),
			nodes:    olds(3),
			want:     floor.Plan{Deletes: []floor.Delete{del("n00", "p00", floor.OutdatedReason)}},
		},
		{
			name:     "the budget counts new pods not yet available, creates in flight and unseen deletes",
			strategy: maxUnavailable(intstr.FromInt32(3)),
			nodes: append(olds(4), must("x1", unavailable(current("c", 0))), creating(must("x2")),
				must("x3", deleting(old("d", 0)))),
		},
		{
			name:     "an unavailable old pod is replaced at once and counts",
			strategy: maxUnavailable(intstr.FromInt32(2)),
			nodes:    append(olds(3), must("x", unready(old("u", 0)))),
			want:     floor.Plan{Deletes: []floor.Delete{del("n00", "p00", floor.OutdatedReason), del("x", "u", floor.OutdatedReason)}},
		},
		{
			name:     "maxSurge 1: one new pod beside an old one",
			strategy: maxSurge(intstr.FromInt32(1)),
			nodes:    olds(3),
			want:     floor.Plan{Creates: []floor.Create{create("n00")}},
		},
		{
			name:     "maxSurge: a surge in flight or not yet available uses the budget",
			strategy: maxSurge(intstr.FromInt32(2)),
			nodes:    append(olds(3), creating(must("s1", old("o1", 0))), must("s2", old("o2", 0), unavailable(current("c2", 1)))),
		},
		{
			name:     "maxSurge: the old pod goes once the new one is available, or if it is not Ready",
			strategy: maxSurge(intstr.FromInt32(1)),
			nodes: []floor.Node{must("a", old("o1", 0), current("c1", 1)), must("b", unready(old("o2", 0)), unavailable(current("c2", 1))),
				must("c", old("o3", 0))},
			want: floor.Plan{Creates: []floor.Create{create("c")},
				Deletes: []floor.Delete{del("a", "o1", floor.SurgedReason), del("b", "o2", floor.SurgedReason)}},
		},
		{
			name:     "maxSurge: an unavailable old pod gets its replacement beyond the budget",
			strategy: maxSurge(intstr.FromInt32(1)),
			nodes:    append(olds(2), must("u", unavailable(old("o", 0)))),
			want:     floor.Plan{Creates: []floor.Create{create("n00"), create("u")}},
		},
		{
			name:     "orphans that stay are adopted and get no second pod",
			strategy: one,
			nodes:    []floor.Node{must("a", orphan(current("x", 0))), {Name: "no", Pods: []floor.Pod{orphan(current("y", 0))}}},
			want: floor.Plan{Deletes: []floor.Delete{del("no", "y", floor.IneligibleReason)},
				Adopts: []floor.Adopt{{DaemonSet: dsKey, Pod: "ns/x"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := floor.Compute(floor.Input{DaemonSets: []floor.DaemonSet{{Key: dsKey, Strategy: tt.strategy, Nodes: tt.nodes}}})
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b floor.Plan) bool {
				return cmp.Equal(a.Creates, b.Creates, emptyEqual) && cmp.Equal(a.Deletes, b.Deletes, emptyEqual) && cmp.Equal(a.Adopts, b.Adopts, emptyEqual)
			})); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

var emptyEqual = cmp.FilterValues(func(a, b any) bool { return isEmpty(a) && isEmpty(b) }, cmp.Comparer(func(_, _ any) bool { return true }))

func isEmpty(v any) bool {
	switch v := v.(type) {
	case []floor.Create:
		return len(v) == 0
	case []floor.Delete:
		return len(v) == 0
	case []floor.Adopt:
		return len(v) == 0
	}
	return false
}

func TestLimits(t *testing.T) {
	for _, tt := range []struct {
		s              appsv1.DaemonSetUpdateStrategy
		mustRun        int
		surge, unavail int
	}{
		{maxUnavailable(intstr.FromString("10%")), 100, 0, 10},
		{maxUnavailable(intstr.FromString("10%")), 101, 0, 11},
		{maxUnavailable(intstr.FromInt32(0)), 7, 0, 1},
		{maxSurge(intstr.FromString("25%")), 5, 2, 0},
		{onDelete, 5, 0, 0},
		{appsv1.DaemonSetUpdateStrategy{}, 5, 0, 1},
	} {
		s, u := floor.Limits(tt.s, tt.mustRun)
		if s != tt.surge || u != tt.unavail {
			t.Errorf("Limits(%v, %d) = %d, %d; want %d, %d", tt.s.RollingUpdate, tt.mustRun, s, u, tt.surge, tt.unavail)
		}
	}
}

// Random views: whatever the view, the plan is the same for any order of
// its slices, never creates where it must not or twice on a node, and never
// takes more must-run nodes out than the budget leaves.
func TestComputeInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strategies := []appsv1.DaemonSetUpdateStrategy{one, onDelete, maxUnavailable(intstr.FromString("30%")), maxSurge(intstr.FromInt32(2))}
	for i := range 2000 {
		ds := floor.DaemonSet{Key: dsKey, Strategy: strategies[i%len(strategies)]}
		for n := range rng.IntN(8) {
			node := floor.Node{Name: fmt.Sprintf("n%d", n), MayRun: rng.IntN(5) > 0, Creating: rng.IntN(6) == 0}
			node.MustRun = node.MayRun && rng.IntN(4) > 0
			for k := range rng.IntN(3) {
				p := floor.Pod{Key: fmt.Sprintf("ns/p%d-%d", n, k), Created: t0.Add(time.Duration(rng.IntN(3)) * time.Second),
					Current: rng.IntN(2) == 0, Terminal: rng.IntN(8) == 0, Terminating: rng.IntN(8) == 0, Deleting: rng.IntN(8) == 0,
					Ready: rng.IntN(3) > 0, Orphan: rng.IntN(10) == 0}
				p.Available = p.Ready && rng.IntN(3) > 0
				node.Pods = append(node.Pods, p)
			}
			ds.Nodes = append(ds.Nodes, node)
		}
		in := floor.Input{DaemonSets: []floor.DaemonSet{ds}}
		got := floor.Compute(in)

		shuffled := ds
		shuffled.Nodes = append([]floor.Node(nil), ds.Nodes...)
		rng.Shuffle(len(shuffled.Nodes), func(a, b int) { shuffled.Nodes[a], shuffled.Nodes[b] = shuffled.Nodes[b], shuffled.Nodes[a] })
		if diff := cmp.Diff(got, floor.Compute(floor.Input{DaemonSets: []floor.DaemonSet{shuffled}})); diff != "" {
			t.Fatalf("case %d: plan depends on the order of the nodes:\n%s", i, diff)
		}
		byName := map[string]floor.Node{}
		for _, n := range ds.Nodes {
			byName[n.Name] = n
		}
		created := map[string]bool{}
		for _, c := range got.Creates {
			n := byName[c.Node]
			if !n.MustRun || n.Creating || created[c.Node] {
				t.Fatalf("case %d: create on %+v (must-run %v, in flight %v, twice %v)", i, n, n.MustRun, n.Creating, created[c.Node])
			}
			created[c.Node] = true
		}
		deleted := map[string]bool{}
		for _, d := range got.Deletes {
			if deleted[d.Pod] {
				t.Fatalf("case %d: %s deleted twice", i, d.Pod)
			}
			deleted[d.Pod] = true
		}
		if _, maxUnav := floor.Limits(ds.Strategy, mustRunCount(ds)); maxUnav > 0 && !floorSurges(ds) {
			before, after := unavailableNodes(ds, nil), unavailableNodes(ds, deleted)
			if after > max(before, maxUnav) {
				t.Fatalf("case %d: %d must-run nodes unavailable after the plan (%d before), maxUnavailable %d\n%+v\n%+v", i, after, before, maxUnav, ds, got)
			}
		}
	}
}

func floorSurges(ds floor.DaemonSet) bool {
	s, _ := floor.Limits(ds.Strategy, 1)
	return s > 0
}

func mustRunCount(ds floor.DaemonSet) int {
	n := 0
	for _, x := range ds.Nodes {
		if x.MustRun {
			n++
		}
	}
	return n
}

// unavailableNodes counts must-run nodes without an available active pod
// once the deleted pods are gone.
func unavailableNodes(ds floor.DaemonSet, deleted map[string]bool) int {
	n := 0
	for _, x := range ds.Nodes {
		if !x.MustRun {
			continue
		}
		ok := false
		for _, p := range x.Pods {
			ok = ok || p.Available && !p.Terminal && !p.Terminating && !p.Deleting && !deleted[p.Key]
		}
		if !ok {
			n++
		}
	}
	return n
}

func TestChooseInFlight(t *testing.T) {
	inf := math.Inf(1)
	for _, tt := range []struct {
		name  string
		tried map[int]float64
		want  int
	}{
		{"first trial", nil, 8},
		{"next trial", map[int]float64{8: 30}, 32},
		{"last trial", map[int]float64{8: 30, 32: 20}, 128},
		{"best", map[int]float64{8: 30, 32: 20, 128: 25}, 32},
		{"tie keeps the first", map[int]float64{8: 20, 32: 20, 128: 25}, 8},
		{"a trial that did not converge loses", map[int]float64{8: inf, 32: 90, 128: inf}, 32},
	} {
		if got := floor.ChooseInFlight([]int{8, 32, 128}, tt.tried); got != tt.want {
			t.Errorf("%s: ChooseInFlight = %d, want %d", tt.name, got, tt.want)
		}
	}
}
