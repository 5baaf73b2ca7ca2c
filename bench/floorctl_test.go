package bench

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dsbench/dsbench/bench/floor"
	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/scenarios"
)

// One plan of the floor, issued by hand (no loop, no goroutines): it creates
// a pod per must-run node, bound or pinned for kube-scheduler, issues none
// twice while the view does not show them, and forgets its expectations
// once it does, the pinned pods before any binding.
func TestFloorExpectations(t *testing.T) {
	for _, bind := range []floor.Binding{floor.BindNodeName, floor.BindScheduler} {
		t.Run(string(bind), func(t *testing.T) { testFloorExpectations(t, bind) })
	}
}

func testFloorExpectations(t *testing.T, bind floor.Binding) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	client := fake.NewClientset()
	n := 0
	client.PrependReactor("create", "pods", func(a core.Action) (bool, runtime.Object, error) {
		p := a.(core.CreateAction).GetObject().(*corev1.Pod)
		n++
		p.Name = fmt.Sprintf("%s%d", p.GenerateName, n)
		return false, nil, nil // the tracker stores it under that name
	})
	w := oracle.NewWorld()
	apply := func(kind oracle.EventKind, o runtime.Object) {
		t.Helper()
		if err := w.Apply(oracle.Event{Time: clk.Now(), Kind: kind, Object: o}); err != nil {
			t.Fatal(err)
		}
	}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "ds-uid"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}}}}}
	apply(oracle.Added, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	apply(oracle.Added, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}})
	apply(oracle.Added, ds)

	f := newFloorController(FloorConfig{Bind: bind}, client, clk, "", nil, nil)

	step := func() []floorCall {
		in, dss := f.input(w, clk.Now())
		var issued []floorCall
		for _, c := range f.planCalls(floor.Compute(in), dss) {
			if f.expect(c) {
				f.do(t.Context(), c)
				issued = append(issued, c)
			}
		}
		return issued
	}
	if got := len(step()); got != 2 {
		t.Fatalf("first plan issued %d calls, want 2 creates", got)
	}
	if got := step(); len(got) != 0 {
		t.Fatalf("second plan, nothing seen yet, issued %v", got)
	}
	list, err := client.CoreV1().Pods("ns").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for i := range list.Items {
		p := &list.Items[i]
		node := p.Spec.NodeName
		if bind == floor.BindScheduler {
			if node != "" || p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil {
				t.Fatalf("pod %s: nodeName %q, affinity %+v; want unbound and pinned", p.Name, node, p.Spec.Affinity)
			}
			node = p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
		}
		nodes = append(nodes, node)
		if got, want := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey], oracle.CurrentHash(ds); got != want {
			t.Errorf("pod %s has hash %q, want the DaemonSet's current %q", p.Name, got, want)
		}
		apply(oracle.Added, p)
	}
	if diff := cmp.Diff([]string{"n1", "n2"}, nodes); diff != "" {
		t.Errorf("pods' nodes (-want +got):\n%s", diff)
	}
	if got := step(); len(got) != 0 {
		t.Fatalf("plan after the pods were seen issued %v", got)
	}
	if len(f.creating) != 0 {
		t.Errorf("expectations left: %v", f.creating)
	}
	if reqs, _ := f.APIRequests(t.Context()); reqs["POST"] != 2 {
		t.Errorf("requests %v, want 2 POST", reqs)
	}
}

func TestFloorUnsupported(t *testing.T) {
	for _, tc := range []struct {
		name, want string // want: a part of the reason, "" for none
	}{
		{name: "bench-rollout"},
		{name: "bench-repair"},
		{name: "rollback-during-rollout", want: "rolls back"},
		{name: "many-daemonsets", want: "orphans pods"},
	} {
		sc, _, err := scenarios.LoadLibrary(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		got := floorUnsupported(sc)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: floorUnsupported = %q, want one with %q", tc.name, got, tc.want)
		}
	}
}

// The external controller refuses, naming the scenario and the step, what
// needs its process (controller steps, killStorm, slowAPI, a bound on its
// API calls) or an owned API server (apiServerRestart); what only writes
// through the API plays.
func TestExternalUnsupported(t *testing.T) {
	inline := func(steps ...scenarios.Step) *scenarios.Scenario {
		return &scenarios.Scenario{Metadata: scenarios.Metadata{Name: "inline"}, Steps: steps}
	}
	reject := func(bound float64) scenarios.Step {
		return scenarios.Step{Path: "steps[0]", Fault: &scenarios.FaultStep{RejectCreates: &scenarios.RejectCreates{MaxCallsPerMinute: bound}}}
	}
	for _, tc := range []struct {
		name string
		sc   *scenarios.Scenario // nil: the library's scenario of that name
		want string              // a part of the reason, "" for none
	}{
		{name: "bench-rollout"},
		{name: "rollback-during-rollout"},
		{name: "many-daemonsets"},
		{name: "chaos-conflicting-writers"},
		{name: "controller-restart", want: "scenario controller-restart kills the controller (step controller, steps[4])"},
		{name: "chaos-kill-storm", want: "scenario chaos-kill-storm kills the controller (killStorm) (step fault, steps[2].parallel[0][0])"},
		{name: "chaos-slow-api", want: "latency proxy"},
		{name: "chaos-write-timeouts", want: "to time out its writes (writeTimeouts) (step fault, steps[0].parallel[0][0])"},
		{name: "chaos-apiserver-restart", want: "apiServerRestart"},
		{name: "chaos-reject-creates", want: "maxCallsPerMinute"},
		{name: "rejectCreates without a bound", sc: inline(reject(0))},
		{name: "rejectCreates with a bound", sc: inline(reject(600)), want: "(step fault, steps[0])"},
		{name: "a restart in a parallel branch", want: "restarts the controller (step again, steps[0].parallel[1][0])", sc: inline(scenarios.Step{Path: "steps[0]",
			Parallel: [][]scenarios.Step{{{Pause: &scenarios.Duration{}}}, {{Name: "again", Path: "steps[0].parallel[1][0]",
				Controller: &scenarios.ControllerStep{Action: scenarios.ControllerRestart}}}}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := tc.sc
			if sc == nil {
				var err error
				if sc, _, err = scenarios.LoadLibrary(tc.name); err != nil {
					t.Fatal(err)
				}
			}
			got := externalUnsupported(sc)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("externalUnsupported = %q, want one with %q", got, tc.want)
			}
			if got != "" && !strings.Contains(got, "scenario "+sc.Metadata.Name) {
				t.Errorf("externalUnsupported = %q: want the scenario named", got)
			}
		})
	}
}

// A create still in flight never expires: on a saturated API server one can
// wait in its queue past the TTL and still succeed, and a second create for
// the node then made two pods (115 nodes at 5000, 2026-11-30). Once answered,
// or timed out, the view has the TTL to show it; a create it never shows is
// issued again.
func TestFloorExpectationsInFlight(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var fail error
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", func(core.Action) (bool, runtime.Object, error) {
		if fail != nil {
			return true, nil, fail
		}
		return false, nil, nil
	})
	w := oracle.NewWorld()
	for _, o := range []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "ds-uid"},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: "agent-", Labels: map[string]string{"app": "agent"}}}}},
	} {
		if err := w.Apply(oracle.Event{Time: clk.Now(), Kind: oracle.Added, Object: o}); err != nil {
			t.Fatal(err)
		}
	}
	f := newFloorController(FloorConfig{Bind: floor.BindScheduler}, client, clk, "", nil, nil)
	// plan returns the creates the next plan would issue, recording them as
	// under way (not calling the API).
	plan := func() []floorCall {
		in, dss := f.input(w, clk.Now())
		var issued []floorCall
		for _, c := range f.planCalls(floor.Compute(in), dss) {
			if f.expect(c) {
				issued = append(issued, c)
			}
		}
		return issued
	}

	first := plan()
	if len(first) != 1 || first[0].kind != floorCreate {
		t.Fatalf("first plan issued %+v, want one create", first)
	}
	clk.Step(10 * floorExpectTTL) // the create waits in the API server's queue
	if got := plan(); len(got) != 0 {
		t.Fatalf("a create in flight for %v was issued again: %+v", 10*floorExpectTTL, got)
	}
	f.do(t.Context(), first[0]) // it answers; the view has not shown the pod yet
	clk.Step(floorExpectTTL)
	if got := plan(); len(got) != 0 {
		t.Fatalf("a create answered %v ago was issued again: %+v", floorExpectTTL, got)
	}
	clk.Step(time.Second)
	retry := plan()
	if len(retry) != 1 {
		t.Fatalf("a create the view never showed, %v after its answer, was not issued again: %+v", floorExpectTTL+time.Second, retry)
	}

	// A create that timed out may still happen: it waits as an answered one.
	fail = apierrors.NewTimeoutError("request did not complete within the allotted timeout", 1)
	f.do(t.Context(), retry[0])
	if got := plan(); len(got) != 0 {
		t.Fatalf("a create that timed out was issued again at once: %+v", got)
	}
	clk.Step(floorExpectTTL + time.Second)
	refused := plan()
	if len(refused) != 1 {
		t.Fatalf("a timed-out create the view never showed was not issued again after the TTL: %+v", refused)
	}
	// A refused one is forgotten at once.
	fail = apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("no"))
	f.do(t.Context(), refused[0])
	if got := plan(); len(got) != 1 {
		t.Fatalf("a refused create was not issued again at once: %+v", got)
	}
}

// Without a pacing given, the floor's grows with the nodes: a tenth of them
// as a power of two, never under 32; a search adds a quarter of that.
func TestFloorPacingByNodes(t *testing.T) {
	for _, tc := range []struct {
		nodes  int
		pacing int
		search []int
	}{
		{1, 32, []int{32}},
		{100, 32, []int{32}},
		{320, 32, []int{32}},
		{500, 64, []int{32, 64}},
		{1000, 128, []int{32, 128}},
		{2000, 256, []int{64, 256}},
		{5000, 512, []int{128, 512}},
		{10000, 1024, []int{256, 1024}},
		{100000, 8192, []int{2048, 8192}},
	} {
		if got := FloorPacing(tc.nodes); got != tc.pacing {
			t.Errorf("FloorPacing(%d) = %d, want %d", tc.nodes, got, tc.pacing)
		}
		if got := FloorPacings(tc.nodes); !slices.Equal(got, tc.search) {
			t.Errorf("FloorPacings(%d) = %v, want %v", tc.nodes, got, tc.search)
		}
	}
}

// BenchmarkFloorInput is the floor's read of the oracle's view before each
// plan, at 5000 nodes with one DaemonSet whose pods are all Ready and
// current: the snapshot the floor takes on the goroutine that feeds the
// oracle, as often as every 20 ms. whole reads every node (the first read,
// and every read before the view was kept); touched=N after N pods' status
// changed, as kwok changes them while it starts pods (the events' own cost
// is not counted).
func BenchmarkFloorInput(b *testing.B) {
	const nodes = 5000
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := oracle.NewWorld()
	apply := func(o runtime.Object) {
		if err := w.Apply(oracle.Event{Time: t0, Kind: oracle.Added, Object: o}); err != nil {
			b.Fatal(err)
		}
	}
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "ds-uid"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}}}}
	apply(ds)
	hash := oracle.CurrentHash(ds)
	var pods []*corev1.Pod
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		apply(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent-" + name, UID: types.UID("uid-" + name),
				Labels:          map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: hash},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}},
			Spec: corev1.PodSpec{NodeName: name},
			Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
		apply(pods[i])
	}
	f := newFloorController(FloorConfig{}, fake.NewClientset(), clocktesting.NewFakeClock(t0), "", nil, nil)
	in, _ := f.input(w, t0)
	if len(in.DaemonSets) != 1 || len(in.DaemonSets[0].Nodes) != nodes {
		b.Fatalf("input has %d DaemonSets, want one with %d nodes", len(in.DaemonSets), nodes)
	}
	for _, n := range in.DaemonSets[0].Nodes {
		if len(n.Pods) != 1 || !n.Pods[0].Ready || !n.Pods[0].Current || !n.MustRun {
			b.Fatalf("node %s: %+v, want one Ready, current pod where it must run", n.Name, n)
		}
	}
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.view = floorView{}
			f.input(w, t0)
		}
	})
	// The plan made of the read, for scale: both run for every plan.
	b.Run("plan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			floor.Compute(in)
		}
	})
	for _, touched := range []int{1, 50} {
		b.Run(fmt.Sprintf("touched=%d", touched), func(b *testing.B) {
			b.ReportAllocs()
			next := 0
			for b.Loop() {
				b.StopTimer()
				for range touched {
					p := pods[next%nodes].DeepCopy()
					p.ResourceVersion = strconv.Itoa(next)
					next++
					if err := w.Apply(oracle.Event{Time: t0, Kind: oracle.Modified, Object: p}); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				f.input(w, t0)
			}
		})
	}
}
