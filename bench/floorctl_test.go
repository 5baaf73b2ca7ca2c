package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dsbench/dsbench/bench/floor"
	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/scenarios"
)

// One plan of the floor, issued by hand (no loop, no goroutines): it creates
// a bound pod per must-run node, issues none twice while the view does not
// show them, and forgets its expectations once it does.
func TestFloorExpectations(t *testing.T) {
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

	f := newFloorController(FloorConfig{}, client, clk, "", nil)

	step := func() []floorCall {
		in, dss, uids := f.input(w, clk.Now())
		var issued []floorCall
		for _, c := range f.planCalls(floor.Compute(in), dss, uids) {
			if f.expect(c, clk.Now()) {
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
		nodes = append(nodes, p.Spec.NodeName)
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
