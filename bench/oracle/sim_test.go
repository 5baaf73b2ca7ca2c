package oracle_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dsbench/dsbench/bench/oracle"
)

// bugs a fake controller can have on purpose.
type bugs struct {
	doubleCreate         bool // creates two pods where one is missing
	ignoreTaints         bool // decides eligibility as if nodes had no taints
	staleNodeList        bool // never sees nodes leave: recreates pods the pod GC removed from deleted nodes
	ignoreMaxUnavailable bool // replaces every old pod at once
	skipNewNodes         bool // never creates on nodes added after the start
}

// sim is a fake controller plus a fake kubelet and pod GC, ticking once a
// second. The kubelet makes pods Ready 2 s after creation and finishes
// deletions after 1 s; the pod GC deletes pods of nodes gone for 5 s. As
// upstream, the controller leaves bound pods of deleted nodes to the pod GC. The controller decides eligibility with oracle.Eligibility (tested on
// its own above), so these runs test the Checker's detection, not the rules.
type sim struct {
	t     *testing.T
	c     *oracle.Checker
	now   float64
	nodes map[string]*corev1.Node
	gone  map[string]float64 // deleted node -> when
	stale map[string]*corev1.Node
	known map[string]bool
	ds    *appsv1.DaemonSet
	pods  map[string]*simPod
	seq   int
	bugs  bugs
	n     int // events applied
}

type simPod struct {
	pod     *corev1.Pod
	seq     int
	readyAt float64
	goneAt  float64 // 0 unless deleting
}

func newSim(t *testing.T, b bugs, grace map[oracle.Kind]time.Duration) *sim {
	return &sim{t: t, c: oracle.NewChecker(oracle.Config{Grace: grace}), nodes: map[string]*corev1.Node{},
		gone: map[string]float64{}, stale: map[string]*corev1.Node{},
		known: map[string]bool{}, pods: map[string]*simPod{}, bugs: b}
}

func (s *sim) emit(kind oracle.EventKind, o runtime.Object) {
	s.t.Helper()
	if err := s.c.Apply(oracle.Event{Time: at(s.now), Kind: kind, Object: o}); err != nil {
		s.t.Fatal(err)
	}
	agree(s.t, s.c, s.n)
	s.n++
}

func (s *sim) setNode(n *corev1.Node) {
	kind := oracle.Modified
	if s.nodes[n.Name] == nil {
		kind = oracle.Added
	}
	if s.now == 0 {
		s.known[n.Name] = true
	}
	s.nodes[n.Name] = n
	s.stale[n.Name] = n
	delete(s.gone, n.Name)
	s.emit(kind, n)
}

func (s *sim) deleteNode(name string) {
	n := s.nodes[name]
	delete(s.nodes, name)
	s.gone[name] = s.now
	s.emit(oracle.Deleted, n)
}

func (s *sim) setDS(ds *appsv1.DaemonSet) {
	kind := oracle.Modified
	if s.ds == nil {
		kind = oracle.Added
	}
	s.ds = ds
	s.emit(kind, ds)
}

func (s *sim) runUntil(end float64) {
	for s.now < end {
		s.now++
		s.kubelet()
		s.podGC()
		s.controller()
	}
}

func (s *sim) sorted() []*simPod {
	ps := make([]*simPod, 0, len(s.pods))
	for _, p := range s.pods {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *simPod) int { return a.seq - b.seq })
	return ps
}

func (s *sim) kubelet() {
	for _, p := range s.sorted() {
		switch {
		case p.goneAt != 0 && s.now >= p.goneAt:
			delete(s.pods, p.pod.Name)
			s.emit(oracle.Deleted, p.pod)
		case p.goneAt == 0 && p.pod.Status.Phase == corev1.PodPending && s.now >= p.readyAt:
			p.pod = p.pod.DeepCopy()
			ready(at(s.now))(p.pod)
			s.emit(oracle.Modified, p.pod)
		}
	}
}

func (s *sim) podGC() {
	for _, p := range s.sorted() {
		if at, ok := s.gone[p.pod.Spec.NodeName]; ok && p.goneAt == 0 && s.now >= at+5 {
			s.remove(p)
		}
	}
}

func (s *sim) create(node string) {
	s.seq++
	p := &simPod{pod: pod(s.ds, fmt.Sprintf("p%d", s.seq), node), seq: s.seq, readyAt: s.now + 2}
	s.pods[p.pod.Name] = p
	s.emit(oracle.Added, p.pod)
}

func (s *sim) remove(p *simPod) {
	p.pod = p.pod.DeepCopy()
	terminating(p.pod)
	p.goneAt = s.now + 1
	s.emit(oracle.Modified, p.pod)
}

func (s *sim) controller() {
	hash := oracle.CurrentHash(s.ds)
	nodes := s.nodes
	if s.bugs.staleNodeList {
		nodes = s.stale
	}
	live := map[string][]*simPod{}
	for _, p := range s.sorted() {
		if p.goneAt != 0 || nodes[p.pod.Spec.NodeName] == nil {
			continue // bound pods of deleted nodes are the pod GC's
		}
		live[p.pod.Spec.NodeName] = append(live[p.pod.Spec.NodeName], p)
	}
	var must []string
	var old []*simPod
	unavailable := 0
	for _, name := range slices.Sorted(mapKeys(nodes)) {
		n := nodes[name]
		if s.bugs.ignoreTaints {
			n = n.DeepCopy()
			n.Spec.Taints = nil
		}
		mustRun, mayRun := oracle.Eligibility(s.ds, n)
		ps := live[name]
		switch {
		case !mayRun:
			for _, p := range ps {
				s.remove(p)
			}
			continue
		case len(ps) == 0 && mustRun && (s.known[name] || !s.bugs.skipNewNodes):
			s.create(name)
			if s.bugs.doubleCreate {
				s.create(name)
			}
		case len(ps) > 1:
			for _, p := range ps[1:] {
				s.remove(p)
			}
			ps = ps[:1]
		}
		if !mustRun {
			continue
		}
		must = append(must, name)
		if len(ps) == 0 || ps[0].pod.Status.Phase != corev1.PodRunning {
			unavailable++
		}
		if len(ps) == 1 && ps[0].pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash {
			old = append(old, ps[0])
		}
	}
	maxU, _ := intstr.GetScaledValueFromIntOrPercent(s.ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable, len(must), true)
	budget := maxU - unavailable
	for _, p := range old {
		switch {
		case p.pod.Status.Phase != corev1.PodRunning:
			s.remove(p)
		case budget > 0 || s.bugs.ignoreMaxUnavailable:
			s.remove(p)
			budget--
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// script: five nodes (n5 tainted NoSchedule), the DaemonSet, a node joining
// kwok-style at 10 s, a rolling update at 20 s, n2 deleted at 40 s, end at 50 s.
func (s *sim) script() (rollout oracle.BarrierID) {
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		s.setNode(node(n))
	}
	s.setNode(node("n5", withTaint("dedicated", "db", corev1.TaintEffectNoSchedule)))
	s.setDS(daemonSet("d"))
	s.runUntil(10)
	s.setNode(node("n6", withTaint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoSchedule)))
	s.runUntil(12)
	s.setNode(node("n6"))
	s.runUntil(20)
	rollout = s.c.AddBarrier(oracle.Barrier{Name: "rollout", DaemonSet: dsKey, Start: at(20), Visible: oracle.GenerationObserved(dsKey, 2)})
	s.setDS(daemonSet("d", image("pause:2", 2)))
	s.runUntil(40)
	s.deleteNode("n2")
	s.runUntil(50)
	return rollout
}

type kindNode struct {
	Kind     oracle.Kind
	Node     string
	Start    float64
	Duration float64 // seconds; for unresolved ones, up to the end at 50 s
	Open     bool
}

func summarize(vs []oracle.Violation) []kindNode {
	var out []kindNode
	for _, v := range vs {
		out = append(out, kindNode{v.Kind, v.Node, v.Start.Sub(t0).Seconds(), v.Duration().Seconds(), v.Unresolved})
	}
	return out
}

func TestSimulatedControllers(t *testing.T) {
	// The fake acts on the tick after a change: allow that.
	grace := map[oracle.Kind]time.Duration{oracle.MissingPod: 3 * time.Second, oracle.PodOnDeletedNode: 2 * time.Second}
	tests := []struct {
		name string
		bugs bugs
		want []kindNode
		// rolloutEnd is when the rollout converged, 0 if never.
		rolloutEnd float64
	}{
		{name: "correct", rolloutEnd: 36},
		{
			name: "double create",
			bugs: bugs{doubleCreate: true},
			want: []kindNode{
				{oracle.DuplicatePods, "n1", 1, 1, false}, {oracle.DuplicatePods, "n2", 1, 1, false},
				{oracle.DuplicatePods, "n3", 1, 1, false}, {oracle.DuplicatePods, "n4", 1, 1, false},
				{oracle.DuplicatePods, "n6", 13, 1, false},
				{oracle.DuplicatePods, "n1", 22, 1, false}, {oracle.DuplicatePods, "n2", 25, 1, false},
				{oracle.DuplicatePods, "n3", 28, 1, false}, {oracle.DuplicatePods, "n4", 31, 1, false},
				{oracle.DuplicatePods, "n6", 34, 1, false},
			},
			rolloutEnd: 36,
		},
		{
			name: "ignores taints",
			bugs: bugs{ignoreTaints: true},
			want: []kindNode{
				{oracle.PodOnIneligibleNode, "n5", 1, 32, false}, // replaced by the rollout at 33 (fifth node)...
				{oracle.PodOnIneligibleNode, "n6", 11, 1, false}, // created before not-ready was lifted
				{oracle.PodOnIneligibleNode, "n5", 34, 16, true}, // ...and created again
			},
			rolloutEnd: 39,
		},
		{
			name: "creates pods for deleted nodes",
			bugs: bugs{staleNodeList: true},
			// The pod GC removes n2's pod at 45; each tick the controller
			// makes another for n2 and the pod GC removes it: every one is
			// a violation, however short.
			want: []kindNode{
				{oracle.PodOnDeletedNode, "n2", 45, 1, false}, {oracle.PodOnDeletedNode, "n2", 46, 1, false},
				{oracle.PodOnDeletedNode, "n2", 47, 1, false}, {oracle.PodOnDeletedNode, "n2", 48, 1, false},
				{oracle.PodOnDeletedNode, "n2", 49, 1, false}, {oracle.PodOnDeletedNode, "n2", 50, 0, true},
			},
			rolloutEnd: 36,
		},
		{
			name:       "exceeds maxUnavailable",
			bugs:       bugs{ignoreMaxUnavailable: true},
			want:       []kindNode{{oracle.Overunavailable, "", 21, 3, false}},
			rolloutEnd: 24,
		},
		{
			name: "never creates on new nodes",
			bugs: bugs{skipNewNodes: true},
			want: []kindNode{{oracle.MissingPod, "n6", 12, 38, true}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, tc.bugs, grace)
			id := s.script()
			got := summarize(s.c.Finish(at(50)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			cv, ok := s.c.ConvergedAt(id)
			switch {
			case tc.rolloutEnd == 0 && ok:
				t.Errorf("rollout converged at %v, want never", cv.At)
			case tc.rolloutEnd != 0 && (!ok || !cv.At.Equal(at(tc.rolloutEnd))):
				t.Errorf("rollout converged=%v at %v, want %v", ok, cv.At, at(tc.rolloutEnd))
			}
		})
	}
}

func TestSimulatedRolloutMetrics(t *testing.T) {
	s := newSim(t, bugs{}, nil)
	s.script()
	rs := s.c.Rollouts()
	if len(rs) != 1 {
		t.Fatalf("got %d rollouts, want 1", len(rs))
	}
	r := rs[0]
	r.Nodes = nil
	want := oracle.Rollout{DaemonSet: dsKey, FromHash: oracle.CurrentHash(daemonSet("d")), ToHash: oracle.CurrentHash(daemonSet("d", image("pause:2", 2))),
		Start: at(20), End: at(36), Outcome: oracle.RolloutConverged, PeakUnavailable: 1, AllowedAtPeak: 1, LastNodeAvailable: at(36)}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("rollout (-want +got):\n%s", diff)
	}
	// One node every 3 s: delete at t, gone and recreated at t+1, Ready at t+3.
	var got []oracle.NodeRollout
	for i, n := range []string{"n1", "n2", "n3", "n4", "n6"} {
		d := 21 + 3*float64(i)
		got = append(got, oracle.NodeRollout{Node: n, OldPodGone: at(d), OldPodVanished: at(d + 1), NewPodCreated: at(d + 1), NewPodReady: at(d + 3), NewPodAvailable: at(d + 3)})
	}
	if diff := cmp.Diff(got, s.c.Rollouts()[0].Nodes); diff != "" {
		t.Errorf("node rollouts (-want +got):\n%s", diff)
	}
	joins := s.c.NodeJoins()
	wantJoins := []oracle.NodeJoin{{DaemonSet: dsKey, Node: "n6", NodeAdded: at(10), MustRun: at(12), PodCreated: at(13), PodReady: at(15)}}
	if diff := cmp.Diff(wantJoins, joins); diff != "" {
		t.Errorf("joins (-want +got):\n%s", diff)
	}
}
