package oracle_test

import (
	"maps"
	"slices"
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
	for _, p := range w.PodsOn(dsKey, "n1") {
		ready := "not ready"
		if p.ReadySince.Equal(at(1)) {
			ready = "ready at 1"
		} else if !p.ReadySince.IsZero() {
			ready = "ready at " + p.ReadySince.String()
		}
		names = append(names, p.Key+" "+p.Pod.Name+" "+ready)
	}
	if diff := cmp.Diff([]string{"default/a a not ready", "default/b b ready at 1"}, names); diff != "" {
		t.Errorf("PodsOn n1 (-want +got):\n%s", diff)
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
	if got := w.PodsOn(dsKey, "n2"); len(got) != 0 {
		t.Errorf("PodsOn n2 = %v, want none (its pod is an orphan)", got)
	}
	if got := w.PodsOn("default/none", "n1"); got != nil {
		t.Errorf("PodsOn of an absent DaemonSet = %v", got)
	}
}

// TestWorldChanges: after the first TakeChanges, each call returns the nodes
// and DaemonSets that events touched since the previous one, a pod's target
// node before and after it moved included.
func TestWorldChanges(t *testing.T) {
	ds := daemonSet("d")
	w := oracle.NewWorld()
	apply := func(evs ...oracle.Event) {
		t.Helper()
		for _, ev := range evs {
			if err := w.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	take := func() (nodes, dss []string, ok bool) {
		cs, ok := w.TakeChanges()
		return slices.Sorted(maps.Keys(cs.Nodes)), slices.Sorted(maps.Keys(cs.DaemonSets)), ok
	}
	apply(oracle.Event{Time: at(0), Kind: oracle.Added, Object: node("n0")})
	if _, _, ok := take(); ok {
		t.Fatal("the first TakeChanges is ok: nothing was recorded before it")
	}
	moved := pod(ds, "p", "n2")
	apply(
		oracle.Event{Time: at(1), Kind: oracle.Added, Object: node("n1")},
		oracle.Event{Time: at(1), Kind: oracle.Added, Object: ds},
		oracle.Event{Time: at(1), Kind: oracle.Added, Object: pod(ds, "p", "n1")},
		oracle.Event{Time: at(2), Kind: oracle.Modified, Object: moved},
		oracle.Event{Time: at(2), Kind: oracle.Added, Object: pod(ds, "q", "n3", orphaned)},
	)
	nodes, dss, ok := take()
	if !ok || !slices.Equal(nodes, []string{"n1", "n2", "n3"}) || !slices.Equal(dss, []string{dsKey}) {
		t.Errorf("TakeChanges = %v, %v, %v; want [n1 n2 n3], [%s], true", nodes, dss, ok, dsKey)
	}
	if nodes, dss, ok := take(); !ok || len(nodes)+len(dss) != 0 {
		t.Errorf("TakeChanges with no event since = %v, %v, %v; want nothing, ok", nodes, dss, ok)
	}
	apply(oracle.Event{Time: at(3), Kind: oracle.Deleted, Object: moved},
		oracle.Event{Time: at(3), Kind: oracle.Deleted, Object: node("n0")},
		oracle.Event{Time: at(3), Kind: oracle.Deleted, Object: ds})
	if nodes, dss, _ := take(); !slices.Equal(nodes, []string{"n0", "n2"}) || !slices.Equal(dss, []string{dsKey}) {
		t.Errorf("TakeChanges after deletes = %v, %v; want [n0 n2], [%s]", nodes, dss, dsKey)
	}
}
