package oracle_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dsbench/dsbench/bench/oracle"
)

// A controller that writes no status (the floor) is judged on everything
// else: SkipStatus silences StatusMismatch and StatusSettled waits for
// nothing, while a MissingPod is still reported.
func TestSkipStatus(t *testing.T) {
	ds := daemonSet("d")
	var tl timeline
	tl.add(0, node("n1")).add(0, node("n2")).add(0, ds).add(0, pod(ds, "a", "n1")).mod(2, pod(ds, "a", "n1", ready(at(2))))
	c := feed(t, oracle.Config{Grace: map[oracle.Kind]time.Duration{oracle.MissingPod: time.Second}, StatusLag: 10 * time.Second, SkipStatus: true}, tl)
	if !c.StatusSettled() {
		t.Error("StatusSettled false with SkipStatus")
	}
	var kinds []oracle.Kind
	for _, v := range c.Finish(at(30)) {
		kinds = append(kinds, v.Kind)
	}
	if diff := cmp.Diff([]oracle.Kind{oracle.MissingPod}, kinds); diff != "" {
		t.Errorf("violation kinds (-want +got):\n%s", diff)
	}
}

func TestWorldView(t *testing.T) {
	ds := daemonSet("d")
	w := oracle.NewWorld()
	for _, o := range []oracle.Event{
		{Time: at(0), Kind: oracle.Added, Object: node("n1")},
		{Time: at(0), Kind: oracle.Added, Object: node("n2", withTaint("k", "", corev1.TaintEffectNoSchedule))},
		{Time: at(0), Kind: oracle.Added, Object: ds},
		{Time: at(1), Kind: oracle.Added, Object: pod(ds, "b", "n1", ready(at(1)))},
		{Time: at(1), Kind: oracle.Added, Object: pod(ds, "a", "n1")},
		{Time: at(1), Kind: oracle.Added, Object: pod(ds, "o", "n2", orphaned)},
	} {
		if err := w.Apply(o); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, p := range w.PodsByNode(dsKey)["n1"] {
		ready := "not ready"
		if p.ReadySince.Equal(at(1)) {
			ready = "ready at 1"
		} else if !p.ReadySince.IsZero() {
			ready = "ready at " + p.ReadySince.String()
		}
		names = append(names, p.Key+" "+p.Pod.Name+" "+ready)
	}
	if diff := cmp.Diff([]string{"default/a a not ready", "default/b b ready at 1"}, names); diff != "" {
		t.Errorf("PodsByNode n1 (-want +got):\n%s", diff)
	}
	if must, may, ok := w.Eligibility(dsKey, "n2"); must || !may || !ok {
		t.Errorf("Eligibility n2 = %v, %v, %v; want false, true, true", must, may, ok)
	}
	if _, _, ok := w.Eligibility(dsKey, "gone"); ok {
		t.Error("Eligibility of an absent node is ok")
	}
	if !w.PodAvailable("default/b", 0, at(1)) || w.PodAvailable("default/b", 5*time.Second, at(3)) || w.PodAvailable("default/a", 0, at(9)) {
		t.Error("PodAvailable disagrees with readiness plus minReadySeconds")
	}
	if o := w.Orphans(dsKey); len(o) != 1 || o[0].Name != "o" {
		t.Errorf("Orphans = %v, want pod o", o)
	}
}
