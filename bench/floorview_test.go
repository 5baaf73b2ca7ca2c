package bench

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dsbench/dsbench/bench/floor"
	"github.com/dsbench/dsbench/bench/oracle"
)

// The floor's view, kept between reads, gives at every read the input a
// whole read of the same view gives, and the same UIDs, whatever happened
// in between: nodes joining, leaving and changing labels and taints,
// DaemonSets changed, deleted and being deleted, pods created, bound,
// Ready, failed, terminating, moved, adopted and deleted, time passing
// minReadySeconds, and the floor's own expectations coming and going.
func TestFloorViewMatchesAWholeRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 400 {
		script := make([]byte, 600)
		for j := range script {
			script[j] = byte(rng.UintN(256))
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkFloorView(t, script) })
	}
}

// Scripts for what random ones reach too seldom (see floorScript.step for
// the ops and their arguments).
var floorViewScripts = map[string][]byte{
	// node n0; DaemonSet d0 with minReadySeconds 3; its current pod p0
	// bound to n0, then Ready; a read; 4 s pass with no event; a read.
	"available by time alone": {0, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0, 4, 0, 0, 1, 0, 0, 0, 5, 0, 0, 11, 7, 4, 11},
}

func TestFloorViewScripts(t *testing.T) {
	for name, script := range floorViewScripts {
		t.Run(name, func(t *testing.T) { checkFloorView(t, script) })
	}
}

func FuzzFloorViewMatchesAWholeRead(f *testing.F) {
	for _, script := range floorViewScripts {
		f.Add(script)
	}
	f.Add([]byte{0, 0, 0, 2, 0, 0, 11, 4, 0, 0, 0, 11, 5, 0, 0, 11, 7, 3, 11})
	f.Add([]byte{0, 1, 1, 2, 1, 1, 4, 2, 1, 1, 11, 0, 1, 2, 11, 1, 1, 11, 2, 1, 0, 11})
	f.Fuzz(checkFloorView)
}

// floorScript plays a script of bytes against a World: each op reads its
// arguments from the bytes that follow it (0 once they run out).
type floorScript struct {
	t      *testing.T
	b      []byte
	now    time.Time
	w      *oracle.World
	exp    floorExpectations
	nodes  map[string]*corev1.Node
	dss    map[string]*appsv1.DaemonSet
	pods   map[string]*corev1.Pod
	serial int
}

func (s *floorScript) next(n int) int {
	if len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0]) % n
	s.b = s.b[1:]
	return v
}

func (s *floorScript) apply(kind oracle.EventKind, o runtime.Object) {
	s.t.Helper()
	if err := s.w.Apply(oracle.Event{Time: s.now, Kind: kind, Object: o}); err != nil {
		s.t.Fatal(err)
	}
}

// put records the object under name and applies it: Added, or Modified if
// the name was there.
func put[T runtime.Object](s *floorScript, m map[string]T, name string, o T) {
	s.t.Helper()
	kind := oracle.Added
	if _, ok := m[name]; ok {
		kind = oracle.Modified
	}
	m[name] = o
	s.apply(kind, o)
}

func checkFloorView(t *testing.T, script []byte) {
	s := &floorScript{t: t, b: script, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), w: oracle.NewWorld(),
		exp:   floorExpectations{creating: map[string]floorExpectation{}, deleting: map[string]floorExpectation{}, adopting: map[string]floorExpectation{}},
		nodes: map[string]*corev1.Node{}, dss: map[string]*appsv1.DaemonSet{}, pods: map[string]*corev1.Pod{}}
	var view floorView
	for reads := 0; len(s.b) > 0; {
		if s.step() {
			reads++
			compareFloorViews(t, reads, &view, s.w, s.now, s.exp)
		}
	}
	compareFloorViews(t, -1, &view, s.w, s.now, s.exp)
}

// step plays one op; it says whether the op is a read.
func (s *floorScript) step() bool {
	switch s.next(12) {
	case 0: // a node joins or changes
		name := fmt.Sprint("n", s.next(6))
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": []string{"a", "b"}[s.next(2)]}}}
		switch s.next(4) {
		case 1:
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		case 2:
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute}}
		case 3:
			n.Spec.Unschedulable = true
		}
		put(s, s.nodes, name, n)
	case 1: // a node leaves
		name := fmt.Sprint("n", s.next(6))
		if n, ok := s.nodes[name]; ok {
			delete(s.nodes, name)
			s.apply(oracle.Deleted, n)
		}
	case 2: // a DaemonSet is created or changed
		name := fmt.Sprint("d", s.next(2))
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(fmt.Sprint(name, "-", s.serial))},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				MinReadySeconds: int32(3 * s.next(2)),
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: fmt.Sprint("image:", s.next(2))}}}}}}
		if s.next(2) == 1 {
			ds.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
		}
		if s.next(2) == 1 {
			ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		} else {
			one := intstr.FromInt32(1)
			ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one}}
		}
		if s.next(2) == 1 {
			ds.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: fmt.Sprint(s.next(2))}
		}
		kind := oracle.Added
		if old, ok := s.dss[name]; ok {
			kind, ds.UID = oracle.Modified, old.UID
			if s.next(3) == 0 { // a write of its status alone, which moves its hash
				ds = old.DeepCopy()
				c := int32(s.next(3))
				ds.Status.CollisionCount = &c
			}
		}
		s.serial++
		s.dss[name] = ds
		s.apply(kind, ds)
	case 3: // a DaemonSet is deleted, or starts to be
		name := fmt.Sprint("d", s.next(2))
		if ds, ok := s.dss[name]; ok {
			if s.next(2) == 0 {
				delete(s.dss, name)
				s.apply(oracle.Deleted, ds)
			} else {
				ds = ds.DeepCopy()
				ds.DeletionTimestamp = &metav1.Time{Time: s.now}
				s.dss[name] = ds
				s.apply(oracle.Modified, ds)
			}
		}
	case 4: // a pod is created: a DaemonSet's, of its revision or not, or an orphan; bound or pinned
		name, ds := fmt.Sprint("p", s.next(10)), fmt.Sprint("d", s.next(2))
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(fmt.Sprint(name, "-", s.serial)),
			CreationTimestamp: metav1.Time{Time: s.now}, Labels: map[string]string{"app": ds}}}
		s.serial++
		if d, ok := s.dss[ds]; ok && s.next(3) > 0 {
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
			switch s.next(3) {
			case 0:
				p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = oracle.CurrentHash(d)
			case 1:
				p.Labels["pod-template-generation"] = fmt.Sprint(s.next(2))
			}
		}
		node := fmt.Sprint("n", s.next(6))
		if s.next(2) == 0 {
			p.Spec.NodeName = node
		} else {
			p.Spec.Affinity = floor.NewPod(&appsv1.DaemonSet{}, "", node, floor.BindScheduler).Spec.Affinity
		}
		put(s, s.pods, name, p)
	case 5: // a pod changes
		name := fmt.Sprint("p", s.next(10))
		old, ok := s.pods[name]
		if !ok {
			return false
		}
		p := old.DeepCopy()
		switch s.next(6) {
		case 0:
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: s.now}}}
		case 1:
			p.Status.Conditions = nil
		case 2:
			p.Status.Phase = corev1.PodFailed
		case 3:
			p.DeletionTimestamp = &metav1.Time{Time: s.now}
		case 4:
			p.Spec.NodeName = fmt.Sprint("n", s.next(6)) // bound, or moved
		case 5:
			if d, ok := s.dss[p.Labels["app"]]; ok {
				p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
			} else {
				p.OwnerReferences = nil
			}
		}
		s.pods[name] = p
		s.apply(oracle.Modified, p)
	case 6: // a pod is gone
		name := fmt.Sprint("p", s.next(10))
		if p, ok := s.pods[name]; ok {
			delete(s.pods, name)
			s.apply(oracle.Deleted, p)
		}
	case 7: // time passes
		s.now = s.now.Add(time.Duration(s.next(5)) * time.Second)
	case 8: // a create begins or ends
		s.toggle(s.exp.creating, fmt.Sprintf("ns/d%d|n%d", s.next(2), s.next(6)))
	case 9: // a delete begins or ends
		s.toggle(s.exp.deleting, fmt.Sprint("ns/p", s.next(10)))
	case 10: // an adoption begins or ends
		s.toggle(s.exp.adopting, fmt.Sprint("ns/p", s.next(10)))
	case 11:
		return true
	}
	return false
}

func (s *floorScript) toggle(m map[string]floorExpectation, key string) {
	if _, ok := m[key]; ok {
		delete(m, key)
	} else {
		m[key] = floorExpectation{}
	}
}

// compareFloorViews reads the kept view and a whole one, and fails on any
// difference, the order of the nodes included (sorted, so that the planner
// need not sort them).
func compareFloorViews(t *testing.T, read int, kept *floorView, w *oracle.World, now time.Time, exp floorExpectations) {
	t.Helper()
	got, gotDSS := kept.read(w, now, exp)
	want, wantDSS, uids := wholeFloorRead(w, now, exp)
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("read %d: the kept view differs from a whole read (-whole +kept):\n%s", read, diff)
	}
	// The planner shares the view's slices: it must not write into them.
	before := got
	before.DaemonSets = nil
	for _, ds := range got.DaemonSets {
		c := ds
		c.Nodes = nil
		for _, n := range ds.Nodes {
			n.Pods = append([]floor.Pod(nil), n.Pods...)
			c.Nodes = append(c.Nodes, n)
		}
		before.DaemonSets = append(before.DaemonSets, c)
	}
	floor.Compute(got)
	if diff := cmp.Diff(before, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("read %d: planning changed its input (-before +after):\n%s", read, diff)
	}
	if diff := cmp.Diff(wantDSS, gotDSS); diff != "" {
		t.Fatalf("read %d: DaemonSets (-whole +kept):\n%s", read, diff)
	}
	for _, ds := range want.DaemonSets {
		for _, n := range ds.Nodes {
			for _, p := range n.Pods {
				if g, w := kept.uid(ds.Key, p.Key), uids[p.Key]; g != w || w == "" {
					t.Fatalf("read %d: UID of %s = %q, a whole read says %q", read, p.Key, g, w)
				}
			}
		}
	}
}

// wholeFloorRead is the floor's read as it was before the view was kept:
// every node of every live DaemonSet, read afresh with the expectations.
func wholeFloorRead(w *oracle.World, now time.Time, exp floorExpectations) (floor.Input, map[string]*appsv1.DaemonSet, map[string]types.UID) {
	var in floor.Input
	dss := map[string]*appsv1.DaemonSet{}
	uids := map[string]types.UID{}
	for _, key := range w.DaemonSetKeys() {
		ds, _ := w.DaemonSet(key)
		if ds.DeletionTimestamp != nil {
			continue
		}
		dss[key] = ds
		hash, generation := oracle.CurrentHash(ds), ds.Annotations[appsv1.DeprecatedTemplateGeneration]
		minReady := time.Duration(ds.Spec.MinReadySeconds) * time.Second
		orphans := map[string][]*corev1.Pod{}
		for _, p := range w.Orphans(key) {
			if _, ok := exp.adopting[p.Namespace+"/"+p.Name]; !ok && p.Spec.NodeName != "" {
				orphans[p.Spec.NodeName] = append(orphans[p.Spec.NodeName], p)
			}
		}
		fd := floor.DaemonSet{Key: key, Strategy: ds.Spec.UpdateStrategy}
		for _, name := range w.NodeNames() {
			mustRun, mayRun, _ := w.Eligibility(key, name)
			pods, orph := w.PodsOn(key, name), orphans[name]
			if !mayRun && len(pods)+len(orph) == 0 {
				continue
			}
			_, creating := exp.creating[key+"|"+name]
			n := floor.Node{Name: name, MustRun: mustRun, MayRun: mayRun, Creating: creating}
			add := func(pk string, p *corev1.Pod, orphan bool) {
				uids[pk] = p.UID
				_, del := exp.deleting[pk]
				current := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash ||
					generation != "" && p.Labels["pod-template-generation"] == generation
				n.Pods = append(n.Pods, floor.Pod{Key: pk, Created: p.CreationTimestamp.Time, Current: current,
					Terminal:    p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded,
					Terminating: p.DeletionTimestamp != nil, Deleting: del,
					Ready: !w.PodReadySince(pk).IsZero(), Available: w.PodAvailable(pk, minReady, now), Orphan: orphan})
			}
			for _, p := range pods {
				add(p.Key, p.Pod, false)
			}
			for _, p := range orph {
				add(p.Namespace+"/"+p.Name, p, true)
			}
			fd.Nodes = append(fd.Nodes, n)
		}
		in.DaemonSets = append(in.DaemonSets, fd)
	}
	return in, dss, uids
}
