package oracle_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dsbench/dsbench/bench/oracle"
)

// world builds a World from objects all added at t0.
func world(t *testing.T, objs ...runtime.Object) *oracle.World {
	t.Helper()
	w := oracle.NewWorld()
	for _, o := range objs {
		if err := w.Apply(oracle.Event{Time: t0, Kind: oracle.Added, Object: o}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func TestEvaluate(t *testing.T) {
	ds := daemonSet("d")
	old := daemonSet("d")
	upd := daemonSet("d", image("pause:2", 2))
	od := daemonSet("d", onDelete, image("pause:2", 2))
	surge := daemonSet("d", image("pause:2", 2), maxSurge(intstr.FromInt32(1)), maxUnavailable(intstr.FromInt32(0)))
	slow := daemonSet("d", minReady(10))
	r := ready(t0)
	n1, n2 := node("n1"), node("n2")
	tests := []struct {
		name string
		objs []runtime.Object
		now  time.Time
		want oracle.Verdict
	}{
		{
			name: "converged",
			objs: []runtime.Object{n1, n2, ds, pod(ds, "a", "n1", r), pod(ds, "b", "n2", r)},
			want: oracle.Verdict{Exists: true, Converged: true, MustRun: 2, MaxUnavailable: 1},
		},
		{
			name: "missing and not ready",
			objs: []runtime.Object{n1, n2, ds, pod(ds, "b", "n2", notReady)},
			want: oracle.Verdict{Exists: true, MustRun: 2, MaxUnavailable: 1, Unavailable: 2, Missing: []string{"n1"}, NotAvailable: []string{"n2"}},
		},
		{
			name: "pinned pod counts on its node",
			objs: []runtime.Object{n1, ds, pod(ds, "a", "n1", r, pinned)},
			want: oracle.Verdict{Exists: true, Converged: true, MustRun: 1, MaxUnavailable: 1},
		},
		{
			name: "old revision under RollingUpdate",
			objs: []runtime.Object{n1, n2, upd, pod(upd, "a", "n1", r, oldRev(old)), pod(upd, "b", "n2", r)},
			want: oracle.Verdict{Exists: true, MustRun: 2, MaxUnavailable: 1, Outdated: []string{"n1"}, NotAvailable: []string{"n1"}},
		},
		{
			name: "old revision with matching template generation is current",
			objs: []runtime.Object{n1, upd, pod(upd, "a", "n1", r, oldRev(old), genLabel("2"))},
			want: oracle.Verdict{Exists: true, Converged: true, MustRun: 1, MaxUnavailable: 1},
		},
		{
			name: "OnDelete does not need the current revision",
			objs: []runtime.Object{n1, od, pod(od, "a", "n1", r, oldRev(old))},
			want: oracle.Verdict{Exists: true, Converged: true, MustRun: 1},
		},
		{
			name: "duplicates",
			objs: []runtime.Object{n1, ds, pod(ds, "a", "n1", r), pod(ds, "b", "n1", r)},
			want: oracle.Verdict{Exists: true, MustRun: 1, MaxUnavailable: 1, Duplicates: []string{"n1"}},
		},
		{
			name: "two current pods are duplicates even when surging",
			objs: []runtime.Object{n1, surge, pod(surge, "a", "n1", r), pod(surge, "b", "n1")},
			want: oracle.Verdict{Exists: true, MustRun: 1, MaxSurge: 1, Duplicates: []string{"n1"}},
		},
		{
			name: "surge pair is a rollout in progress, not a duplicate",
			objs: []runtime.Object{n1, surge, pod(surge, "a", "n1", r, oldRev(old)), pod(surge, "b", "n1")},
			want: oracle.Verdict{Exists: true, MustRun: 1, MaxSurge: 1, Outdated: []string{"n1"}, NotAvailable: []string{"n1"}},
		},
		{
			name: "pod on a node it may not run on",
			objs: []runtime.Object{n1, node("n2", withTaint("evict", "", corev1.TaintEffectNoExecute)), ds,
				pod(ds, "a", "n1", r), pod(ds, "b", "n2", r)},
			want: oracle.Verdict{Exists: true, MustRun: 1, MaxUnavailable: 1, Ineligible: []string{"n2"}},
		},
		{
			name: "pod may stay on a NoSchedule node; no pod needed there either",
			objs: []runtime.Object{node("n1", withTaint("x", "", corev1.TaintEffectNoSchedule)), node("n2", withTaint("x", "", corev1.TaintEffectNoSchedule)),
				ds, pod(ds, "a", "n1", r)},
			want: oracle.Verdict{Exists: true, Converged: true, MaxUnavailable: 1},
		},
		{
			name: "old pod left on a NoSchedule node is outdated",
			objs: []runtime.Object{node("n1", withTaint("x", "", corev1.TaintEffectNoSchedule)), upd, pod(upd, "a", "n1", r, oldRev(old))},
			want: oracle.Verdict{Exists: true, MaxUnavailable: 1, Outdated: []string{"n1"}},
		},
		{
			name: "pod on a deleted node",
			objs: []runtime.Object{n1, ds, pod(ds, "a", "n1", r), pod(ds, "b", "gone", r)},
			want: oracle.Verdict{Exists: true, MustRun: 1, MaxUnavailable: 1, OnDeletedNodes: []string{"gone"}},
		},
		{
			name: "terminating pods block nothing but count as missing",
			objs: []runtime.Object{n1, n2, node("n3", withTaint("evict", "", corev1.TaintEffectNoExecute)), ds,
				pod(ds, "a", "n1", r, terminating), pod(ds, "b", "n2", r), pod(ds, "c", "n3", r, terminating), pod(ds, "d", "gone", terminating)},
			want: oracle.Verdict{Exists: true, MustRun: 2, MaxUnavailable: 1, Unavailable: 1, Missing: []string{"n1"},
				Terminating: []string{"default/a", "default/c", "default/d"}},
		},
		{
			name: "failed pod",
			objs: []runtime.Object{n1, ds, pod(ds, "a", "n1", failed)},
			want: oracle.Verdict{Exists: true, MustRun: 1, MaxUnavailable: 1, Unavailable: 1, Missing: []string{"n1"}, Failed: []string{"n1"}},
		},
		{
			name: "minReadySeconds not yet",
			objs: []runtime.Object{n1, slow, pod(slow, "a", "n1", r)},
			now:  at(9.999),
			want: oracle.Verdict{Exists: true, MustRun: 1, MaxUnavailable: 1, Unavailable: 1, NotAvailable: []string{"n1"}},
		},
		{
			name: "minReadySeconds reached",
			objs: []runtime.Object{n1, slow, pod(slow, "a", "n1", r)},
			now:  at(10),
			want: oracle.Verdict{Exists: true, Converged: true, MustRun: 1, MaxUnavailable: 1},
		},
		{
			name: "pod without a node",
			objs: []runtime.Object{n1, ds, pod(ds, "a", "n1", r), pod(ds, "b", "")},
			want: oracle.Verdict{Exists: true, MustRun: 1, MaxUnavailable: 1, Unplaced: []string{"default/b"}},
		},
		{
			name: "orphans are listed, not blocking",
			objs: []runtime.Object{n1, ds, pod(ds, "a", "n1", r), pod(ds, "o", "n1", r, orphaned), pod(daemonSet("other"), "x", "n1", orphaned)},
			want: oracle.Verdict{Exists: true, Converged: true, MustRun: 1, MaxUnavailable: 1, Orphans: []string{"default/o"}},
		},
		{
			name: "pods of another DaemonSet do not count",
			objs: []runtime.Object{n1, ds, pod(daemonSet("other"), "x", "n1", r)},
			want: oracle.Verdict{Exists: true, MustRun: 1, MaxUnavailable: 1, Unavailable: 1, Missing: []string{"n1"}},
		},
		{
			name: "absent DaemonSet never seen",
			objs: []runtime.Object{n1},
			want: oracle.Verdict{Converged: true},
		},
		{
			name: "DaemonSet being deleted: leftover pods",
			objs: []runtime.Object{n1, daemonSet("d", deleting), pod(ds, "a", "n1", r), pod(ds, "b", "n1", terminating)},
			want: oracle.Verdict{Leftover: []string{"default/a"}},
		},
		{
			name: "percentages round up",
			objs: []runtime.Object{n1, n2, node("n3"), daemonSet("d", maxUnavailable(intstr.FromString("34%")), maxSurge(intstr.FromString("10%")))},
			want: oracle.Verdict{Exists: true, MustRun: 3, MaxUnavailable: 2, MaxSurge: 1, Unavailable: 3, Missing: []string{"n1", "n2", "n3"}},
		},
		{
			name: "both limits zero means maxUnavailable 1",
			objs: []runtime.Object{n1, daemonSet("d", maxUnavailable(intstr.FromString("0%"))), pod(ds, "a", "n1", r)},
			want: oracle.Verdict{Exists: true, Converged: true, MustRun: 1, MaxUnavailable: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := world(t, tc.objs...)
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			tc.want.DaemonSet = "default/d"
			got := oracle.Evaluate(w, "default/d", now)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(oracle.Verdict{}, "Hash"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Evaluate (-want +got):\n%s", diff)
			}
			if got.Exists && got.Hash != oracle.CurrentHash(mustDS(t, w, "default/d")) {
				t.Errorf("Hash = %q, want the current hash", got.Hash)
			}
		})
	}
}

func mustDS(t *testing.T, w *oracle.World, key string) *appsv1.DaemonSet {
	t.Helper()
	ds, ok := w.DaemonSet(key)
	if !ok {
		t.Fatalf("no DaemonSet %s", key)
	}
	return ds
}

func TestWorldApply(t *testing.T) {
	w := oracle.NewWorld()
	if err := w.Apply(oracle.Event{Time: t0, Kind: oracle.Added, Object: &corev1.ConfigMap{}}); err == nil {
		t.Error("Apply(ConfigMap) succeeded, want ErrUnsupportedObject")
	}
	ds := daemonSet("d")
	evs := []oracle.Event{
		{Time: at(5), Kind: oracle.Added, Object: node("n1")},
		{Time: at(6), Kind: oracle.Added, Object: pod(ds, "a", "n1")},
		{Time: at(7), Kind: oracle.Modified, Object: pod(ds, "a", "n1", ready(at(6.5)))},
		{Time: at(3), Kind: oracle.Added, Object: pod(ds, "b", "n1", ready(at(2)))}, // late: clamped to 7
		{Time: at(8), Kind: oracle.Added, Object: pod(ds, "c", "n1", ready(at(9)))}, // condition in the future
		{Time: at(9), Kind: oracle.Modified, Object: node("n1", withLabels("x", "y"))},
	}
	for _, ev := range evs {
		if err := w.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	added, _ := w.NodeAddedAt("n1")
	got := map[string]any{
		"now":     w.Now(),
		"clamped": w.Clamped(),
		"added":   added,
		"a ready": w.PodReadySince("default/a"), // its condition's transition, before the event
		"b ready": w.PodReadySince("default/b"), // first seen Ready: its condition
		"c ready": w.PodReadySince("default/c"), // condition after the event: the event
	}
	want := map[string]any{"now": at(9), "clamped": 1, "added": at(5), "a ready": at(6.5), "b ready": at(2), "c ready": at(8)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("World (-want +got):\n%s", diff)
	}
}

func TestVerdictProblems(t *testing.T) {
	tests := []struct {
		name string
		v    oracle.Verdict
		want string
	}{
		{"converged", oracle.Verdict{DaemonSet: "ns/d", Exists: true, Converged: true}, ""},
		{
			"several kinds, truncated",
			oracle.Verdict{DaemonSet: "ns/d", Exists: true, Missing: []string{"a", "b", "c"}, NotAvailable: []string{"d"}, Unplaced: []string{"ns/p"}},
			"ns/d: 3 nodes missing a pod (a, b, ...), 1 node with a pod not (current and) available (d), 1 pod without a target node (ns/p)",
		},
		{"deleted with leftovers", oracle.Verdict{DaemonSet: "ns/d", Leftover: []string{"ns/p1"}}, "ns/d: deleted, 1 pod left (ns/p1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.Problems(2); got != tt.want {
				t.Errorf("Problems(2) =\n  %q\nwant\n  %q", got, tt.want)
			}
		})
	}
}

func TestCheckerExplainsPendingBarrier(t *testing.T) {
	ds := daemonSet("d")
	c := oracle.NewChecker(oracle.Config{})
	for _, o := range []runtime.Object{node("n1"), node("n2"), ds, pod(ds, "a", "n1", ready(t0))} {
		if err := c.Apply(oracle.Event{Time: t0, Kind: oracle.Added, Object: o}); err != nil {
			t.Fatal(err)
		}
	}
	key := ds.Namespace + "/" + ds.Name
	id := c.AddBarrier(oracle.Barrier{Name: "join", DaemonSet: key, Start: t0})
	if got, want := c.Explain(id), key+": 1 node missing a pod (n2)"; got != want {
		t.Errorf("Explain = %q, want %q", got, want)
	}
	hidden := c.AddBarrier(oracle.Barrier{Name: "join", DaemonSet: key, Start: t0, Visible: oracle.NodesPresent("n3")})
	if got := c.Explain(hidden); got != key+": the step's writes never reached the oracle's watch" {
		t.Errorf("Explain of an invisible step = %q", got)
	}
}
