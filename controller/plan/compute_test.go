package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestComputeManage covers the per-node rules (upstream manage and
// podsShouldBeOnNode) with OnDelete, so no rolling update interferes.
func TestComputeManage(t *testing.T) {
	ds := newDaemonSet("ds", onDelete)
	surgeDS := newDaemonSet("ds", maxSurge(intstr.FromInt32(1)))
	tests := []struct {
		name  string
		ds    *appsv1.DaemonSet
		nodes []*corev1.Node
		pods  []*corev1.Pod
		want  summary
	}{
		{name: "creates on every eligible node, sorted", ds: ds,
			nodes: []*corev1.Node{newNode("c"), newNode("a"), newNode("b")},
			want:  summary{Creates: []string{"a", "b", "c"}}},
		{name: "no create where a pod runs", ds: ds,
			nodes: []*corev1.Node{newNode("a"), newNode("b")},
			pods:  []*corev1.Pod{newPod("p-a", "a")},
			want:  summary{Creates: []string{"b"}}},
		{name: "a pinned pod counts for its node", ds: ds,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-a", "a", pinned, notReady)}},
		{name: "a pod with no node target is ignored", ds: ds,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("stray", "")},
			want:  summary{Creates: []string{"a"}}},
		{name: "nodeSelector picks nodes", ds: newDaemonSet("ds", onDelete, nodeSelector("role", "edge")),
			nodes: []*corev1.Node{newNode("a", nodeLabels("role", "edge")), newNode("b"), newNode("c", nodeLabels("role", "core"))},
			want:  summary{Creates: []string{"a"}}},
		{name: "label removed: pod deleted", ds: newDaemonSet("ds", onDelete, nodeSelector("role", "edge")),
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-a", "a")},
			want:  summary{Deletes: []string{"a/p-a NodeNotEligible"}}},
		{name: "cordoned node gets a pod", ds: ds,
			nodes: []*corev1.Node{newNode("a", cordon)},
			want:  summary{Creates: []string{"a"}}},
		{name: "not-ready node gets a pod", ds: ds,
			nodes: []*corev1.Node{newNode("a", taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute))},
			want:  summary{Creates: []string{"a"}}},
		{name: "NoSchedule taint: no new pod, existing pod stays", ds: ds,
			nodes: []*corev1.Node{newNode("a", taint("dedicated", corev1.TaintEffectNoSchedule)), newNode("b", taint("dedicated", corev1.TaintEffectNoSchedule))},
			pods:  []*corev1.Pod{newPod("p-a", "a")}},
		{name: "NoSchedule taint: duplicates and failed pods still cleaned", ds: ds,
			nodes: []*corev1.Node{newNode("a", taint("dedicated", corev1.TaintEffectNoSchedule))},
			pods:  []*corev1.Pod{newPod("p1", "a"), newPod("p2", "a", created(t0)), newPod("p3", "a", phase(corev1.PodSucceeded))},
			want: summary{Deletes: []string{"a/p2 DuplicateDaemonPod", "a/p3 SucceededDaemonPod"},
				Events: []string{"Normal SucceededDaemonPod"}}},
		{name: "NoExecute taint: all pods deleted, terminating ones left alone", ds: ds,
			nodes: []*corev1.Node{newNode("a", taint("dedicated", corev1.TaintEffectNoExecute))},
			pods:  []*corev1.Pod{newPod("p1", "a"), newPod("p2", "a", phase(corev1.PodFailed)), newPod("p3", "a", terminating)},
			want:  summary{Deletes: []string{"a/p1 NodeNotEligible", "a/p2 NodeNotEligible"}}},
		{name: "node deleted: a pinned, never bound pod is deleted; a bound one is left to the pod GC", ds: ds,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-a", "a"), newPod("p-gone", "gone"), newPod("p-gone2", "gone2", pinned), newPod("p-gone3", "gone3", terminating)},
			want:  summary{Deletes: []string{"gone2/p-gone2 NodeNotFound"}}},
		{name: "duplicates: keep the scheduled one", ds: ds,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p1", "a", pinned, created(t0.Add(-2*time.Hour))), newPod("p2", "a")},
			want:  summary{Deletes: []string{"a/p1 DuplicateDaemonPod"}}},
		{name: "duplicates: keep the oldest, then by name", ds: ds,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p3", "a", created(t0.Add(-time.Minute))), newPod("p2", "a"), newPod("p1", "a")},
			want:  summary{Deletes: []string{"a/p2 DuplicateDaemonPod", "a/p3 DuplicateDaemonPod"}}},
		{name: "duplicates: terminating pods are not deleted again", ds: ds,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p1", "a", terminating), newPod("p2", "a", created(t0))}},
		{name: "failed pod deleted with event and backoff", ds: ds,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-a", "a", phase(corev1.PodFailed))},
			want:  summary{Deletes: []string{"a/p-a FailedDaemonPod"}, Events: []string{"Warning FailedDaemonPod"}}},
		{name: "succeeded pod deleted with event", ds: ds,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-a", "a", phase(corev1.PodSucceeded))},
			want:  summary{Deletes: []string{"a/p-a SucceededDaemonPod"}, Events: []string{"Normal SucceededDaemonPod"}}},
		{name: "terminating pod blocks the create", ds: ds,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-a", "a", terminating)}},
		{name: "terminal terminating pod is ignored", ds: ds,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-a", "a", phase(corev1.PodFailed), terminating)},
			want:  summary{Creates: []string{"a"}}},
		{name: "surge: create next to a terminating pod", ds: surgeDS,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-a", "a", terminating)},
			want:  summary{Creates: []string{"a"}}},
		{name: "surge: old not ready next to new is deleted", ds: surgeDS,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-old", "a", old, notReady), newPod("p-new", "a", notReady, created(t0))},
			want:  summary{Deletes: []string{"a/p-old SurgeReplaced"}}},
		{name: "surge: old deleted once new is available", ds: surgeDS,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-old", "a", old), newPod("p-new", "a", created(t0))},
			want:  summary{Deletes: []string{"a/p-old SurgeReplaced"}}},
		{name: "surge: old kept while new is not ready", ds: surgeDS,
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-old", "a", old), newPod("p-new", "a", notReady, created(t0))}},
		{name: "surge: minReadySeconds pending requeues", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1)), minReady(30)),
			nodes: []*corev1.Node{newNode("a")},
			pods:  []*corev1.Pod{newPod("p-old", "a", old), newPod("p-new", "a", ready(t0.Add(-10*time.Second)), created(t0))},
			want:  summary{RequeueAfter: 20 * time.Second}},
		{name: "surge: extra pods of each kind pruned, oldest kept", ds: surgeDS,
			nodes: []*corev1.Node{newNode("a")},
			pods: []*corev1.Pod{newPod("old1", "a", old, created(t0.Add(-3*time.Hour))), newPod("old2", "a", old),
				newPod("new1", "a", notReady, created(t0.Add(-time.Minute))), newPod("new2", "a", notReady, created(t0))},
			want: summary{Deletes: []string{"a/new2 DuplicateDaemonPod", "a/old2 DuplicateDaemonPod"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(input(tt.ds, tt.nodes, tt.pods...))
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeFailedPodBackoff(t *testing.T) {
	ds := newDaemonSet("ds", onDelete)
	nodes := []*corev1.Node{newNode("a")}
	key := BackoffKey{Node: "a", Generation: 1}
	failed := newPod("p-a", "a", phase(corev1.PodFailed))
	entry := func(d time.Duration, at time.Time) Backoff {
		return Backoff{Entries: map[BackoffKey]BackoffEntry{key: {Delay: d, LastUpdate: at}}}
	}
	tests := []struct {
		name        string
		ds          *appsv1.DaemonSet // nil: OnDelete
		pods        []*corev1.Pod
		backoff     Backoff
		now         time.Time
		want        summary
		wantBackoff Backoff
	}{
		{name: "first failure starts at 1s", pods: []*corev1.Pod{failed}, now: t0,
			want:        summary{Deletes: []string{"a/p-a FailedDaemonPod"}, Events: []string{"Warning FailedDaemonPod"}},
			wantBackoff: entry(time.Second, t0)},
		{name: "failed pod kept while in backoff", pods: []*corev1.Pod{failed}, backoff: entry(4*time.Second, t0), now: t0.Add(time.Second),
			want: summary{RequeueAfter: 3 * time.Second}, wantBackoff: entry(4*time.Second, t0)},
		{name: "the replacement is created while the backoff runs", backoff: entry(4*time.Second, t0), now: t0.Add(time.Second),
			want: summary{Creates: []string{"a"}}, wantBackoff: entry(4*time.Second, t0)},
		{name: "under surge a failed pod held by its backoff gets a replacement beside it", pods: []*corev1.Pod{failed},
			ds:      newDaemonSet("ds", maxSurge(intstr.FromInt32(1)), maxUnavailable(intstr.FromInt32(0))),
			backoff: entry(4*time.Second, t0), now: t0.Add(time.Second),
			want: summary{Creates: []string{"a"}, RequeueAfter: 3 * time.Second}, wantBackoff: entry(4*time.Second, t0)},
		{name: "create once the backoff has passed", backoff: entry(4*time.Second, t0), now: t0.Add(4 * time.Second),
			want: summary{Creates: []string{"a"}}, wantBackoff: entry(4*time.Second, t0)},
		{name: "the next failure doubles the delay", pods: []*corev1.Pod{failed}, backoff: entry(4*time.Second, t0), now: t0.Add(5 * time.Second),
			want:        summary{Deletes: []string{"a/p-a FailedDaemonPod"}, Events: []string{"Warning FailedDaemonPod"}},
			wantBackoff: entry(8*time.Second, t0.Add(5*time.Second))},
		{name: "the delay is capped at 15m", pods: []*corev1.Pod{failed}, backoff: entry(10*time.Minute, t0), now: t0.Add(11 * time.Minute),
			want:        summary{Deletes: []string{"a/p-a FailedDaemonPod"}, Events: []string{"Warning FailedDaemonPod"}},
			wantBackoff: entry(15*time.Minute, t0.Add(11*time.Minute))},
		{name: "after 30m quiet the delay restarts at 1s", pods: []*corev1.Pod{failed}, backoff: entry(15*time.Minute, t0), now: t0.Add(31 * time.Minute),
			want:        summary{Deletes: []string{"a/p-a FailedDaemonPod"}, Events: []string{"Warning FailedDaemonPod"}},
			wantBackoff: entry(time.Second, t0.Add(31*time.Minute))},
		{name: "expired entries are dropped", pods: []*corev1.Pod{newPod("p-a", "a")}, backoff: entry(time.Second, t0), now: t0.Add(31 * time.Minute)},
		{name: "entries of a previous generation are dropped", pods: []*corev1.Pod{failed},
			backoff: Backoff{Entries: map[BackoffKey]BackoffEntry{{Node: "a", Generation: 0}: {Delay: time.Minute, LastUpdate: t0}}}, now: t0,
			want:        summary{Deletes: []string{"a/p-a FailedDaemonPod"}, Events: []string{"Warning FailedDaemonPod"}},
			wantBackoff: entry(time.Second, t0)},
		{name: "entries of deleted nodes are dropped",
			backoff: Backoff{Entries: map[BackoffKey]BackoffEntry{{Node: "gone", Generation: 1}: {Delay: time.Minute, LastUpdate: t0}}}, now: t0,
			want: summary{Creates: []string{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ds
			if tt.ds != nil {
				d = tt.ds
			}
			in := input(d, nodes, tt.pods...)
			in.Backoff, in.Now = tt.backoff, tt.now
			before := Backoff{Entries: map[BackoffKey]BackoffEntry{}}
			for k, v := range tt.backoff.Entries {
				before.Entries[k] = v
			}
			got := Compute(in)
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBackoff, got.Backoff); diff != "" {
				t.Errorf("backoff (-want +got):\n%s", diff)
			}
			if len(tt.backoff.Entries) > 0 {
				if diff := cmp.Diff(before, tt.backoff); diff != "" {
					t.Errorf("input backoff mutated (-before +after):\n%s", diff)
				}
			}
		})
	}
}

// TestBackoffGrowth drives one node through repeated failures, sync by sync:
// the failed pod's deletion waits out a doubling delay, its replacement never
// waits (upstream's podsShouldBeOnNode backs off only the deletion).
func TestBackoffGrowth(t *testing.T) {
	ds := newDaemonSet("ds", onDelete)
	nodes := []*corev1.Node{newNode("a")}
	var b Backoff
	now := t0
	var held []time.Duration
	for i := range 12 {
		// The pod has just failed.
		in := input(ds, nodes, newPod("p", "a", phase(corev1.PodFailed)))
		in.Backoff, in.Now = b, now
		p := Compute(in)
		var wait time.Duration
		if len(p.Deletes) == 0 {
			wait = p.RequeueAfter
			if wait == 0 {
				t.Fatalf("sync %d: failed pod neither deleted nor requeued: %+v", i, summarize(p))
			}
			now = now.Add(wait)
			in.Now = now
			p = Compute(in)
		}
		held = append(held, wait)
		if len(p.Deletes) != 1 {
			t.Fatalf("sync %d: want the failed pod deleted once its backoff passed, got %+v", i, summarize(p))
		}
		b = p.Backoff
		// Its deletion observed, the replacement is created at once.
		in = input(ds, nodes)
		in.Backoff, in.Now = b, now
		if p := Compute(in); len(p.Creates) != 1 || p.RequeueAfter != 0 {
			t.Fatalf("sync %d: want the replacement created at once, got %+v", i, summarize(p))
		}
	}
	want := []time.Duration{0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900}
	for i := range want {
		want[i] *= time.Second
	}
	if diff := cmp.Diff(want, held); diff != "" {
		t.Errorf("how long each failed pod was held (-want +got):\n%s", diff)
	}
}

func TestComputeStatus(t *testing.T) {
	conds := []appsv1.DaemonSetCondition{{Type: "Custom", Status: corev1.ConditionTrue, Reason: "SetByOthers"}}
	ds := newDaemonSet("ds", onDelete, minReady(10), nodeSelector("ds", "yes"), func(ds *appsv1.DaemonSet) {
		ds.Generation = 3
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: 2, CollisionCount: ptr.To(int32(4)), Conditions: conds}
	})
	eligible := nodeLabels("ds", "yes")
	nodes := []*corev1.Node{
		newNode("a", eligible), // ready, available, updated
		newNode("b", eligible), // ready, not yet available (minReadySeconds), old
		newNode("c", eligible), // not ready; its newer duplicate is ready but does not count
		newNode("d", eligible), // no pod
		newNode("e", eligible), // only a terminating pod: scheduled, counted by that pod
		newNode("f"),           // misscheduled
		newNode("g"),           // not eligible, no pod
		newNode("h", eligible, taint("x", corev1.TaintEffectNoSchedule)), // not desired, pod stays: misscheduled
		newNode("i", eligible), // updated by pod-template-generation label only
	}
	pods := []*corev1.Pod{
		newPod("p-a", "a"),
		newPod("p-b", "b", old, ready(t0.Add(-4*time.Second))),
		newPod("p-c1", "c", notReady), newPod("p-c2", "c", created(t0)),
		newPod("p-e", "e", terminating),
		newPod("p-f", "f"),
		newPod("p-h", "h"),
		newPod("p-i", "i", hash("other"), func(p *corev1.Pod) { p.Labels[TemplateGenerationLabelKey] = "1" }),
		newPod("p-x", "gone"),
	}
	want := appsv1.DaemonSetStatus{
		DesiredNumberScheduled: 6, // a b c d e i
		CurrentNumberScheduled: 5, // a b c e i
		NumberMisscheduled:     2, // f h
		NumberReady:            4, // a b e i
		NumberAvailable:        3, // a e i
		NumberUnavailable:      3,
		UpdatedNumberScheduled: 4, // a c e i
		ObservedGeneration:     3,
		CollisionCount:         ptr.To(int32(4)),
		Conditions:             conds,
	}
	got := Compute(input(ds, nodes, pods...))
	if diff := cmp.Diff(want, got.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if got.RequeueAfter != 6*time.Second {
		t.Errorf("RequeueAfter = %v, want 6s (p-b becomes available)", got.RequeueAfter)
	}
}

func TestComputeSkips(t *testing.T) {
	status := appsv1.DaemonSetStatus{DesiredNumberScheduled: 7, ObservedGeneration: 1}
	backoff := Backoff{Entries: map[BackoffKey]BackoffEntry{{Node: "a", Generation: 1}: {Delay: time.Second, LastUpdate: t0}}}
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		want summary
	}{
		{"empty selector warns and does nothing else", newDaemonSet("ds", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} }),
			summary{Events: []string{"Warning SelectingAll"}}},
		{"nil selector is treated as empty", newDaemonSet("ds", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = nil }),
			summary{Events: []string{"Warning SelectingAll"}}},
		{"DaemonSet being deleted", newDaemonSet("ds", func(ds *appsv1.DaemonSet) { ds.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }),
			summary{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.ds.Status = status
			in := input(tt.ds, []*corev1.Node{newNode("a"), newNode("b")}, newPod("p", "a", phase(corev1.PodFailed)))
			in.Backoff = backoff
			got := Compute(in)
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(status, got.Status); diff != "" {
				t.Errorf("status must stay as it was (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(backoff, got.Backoff); diff != "" {
				t.Errorf("backoff must carry over (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeDoesNotMutateInput(t *testing.T) {
	ds := newDaemonSet("ds", maxSurge(intstr.FromInt32(1)))
	nodes := addNodes(4, cordon)
	pods := []*corev1.Pod{newPod("b", "node-0", old), newPod("a", "node-0", old, created(t0)), newPod("c", "node-1", phase(corev1.PodFailed))}
	in := input(ds, nodes, pods...)
	before := Input{DaemonSet: ds.DeepCopy(), Hash: in.Hash, Now: t0}
	for _, n := range nodes {
		before.Nodes = append(before.Nodes, n.DeepCopy())
	}
	for _, p := range pods {
		before.Pods = append(before.Pods, p.DeepCopy())
	}
	Compute(in)
	if diff := cmp.Diff(before, in); diff != "" {
		t.Errorf("input mutated (-before +after):\n%s", diff)
	}
}

// Idle tells the controller that a pod's readiness can change only the
// status: nothing to create or delete, and no pod on another template that a
// rolling update would wait on.
func TestComputeIdle(t *testing.T) {
	nodes := []*corev1.Node{newNode("a"), newNode("b")}
	tests := []struct {
		name     string
		ds       *appsv1.DaemonSet
		pods     []*corev1.Pod
		inFlight InFlight
		want     bool
	}{
		{name: "every node runs a current pod", ds: newDaemonSet("ds"),
			pods: []*corev1.Pod{newPod("p-a", "a"), newPod("p-b", "b")}, want: true},
		{name: "current pods not ready yet", ds: newDaemonSet("ds"),
			pods: []*corev1.Pod{newPod("p-a", "a", notReady), newPod("p-b", "b", phase(corev1.PodPending))}, want: true},
		{name: "pinned, not bound yet", ds: newDaemonSet("ds"),
			pods: []*corev1.Pod{newPod("p-a", "a", pinned), newPod("p-b", "b")}, want: true},
		{name: "an old pod being replaced beside a current one", ds: newDaemonSet("ds"),
			pods: []*corev1.Pod{newPod("p-a", "a"), newPod("p-a-old", "a", old, terminating), newPod("p-b", "b")}, want: true},
		{name: "a node without its pod", ds: newDaemonSet("ds"),
			pods: []*corev1.Pod{newPod("p-a", "a")}},
		{name: "a deletion in flight", ds: newDaemonSet("ds"), inFlight: InFlight{Deletes: map[string]struct{}{"p-x": {}}},
			pods: []*corev1.Pod{newPod("p-a", "a"), newPod("p-b", "b")}},
		{name: "a rollout waits on an unready pod", ds: newDaemonSet("ds"),
			pods: []*corev1.Pod{newPod("p-a", "a", notReady), newPod("p-b", "b", old)}},
		{name: "maxSurge: old and new pod on one node", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1))),
			pods: []*corev1.Pod{newPod("p-a", "a", old), newPod("p-a-new", "a", notReady), newPod("p-b", "b")}},
		{name: "OnDelete with an old pod", ds: newDaemonSet("ds", onDelete),
			pods: []*corev1.Pod{newPod("p-a", "a", old), newPod("p-b", "b")}},
		{name: "a failed pod to replace", ds: newDaemonSet("ds"),
			pods: []*corev1.Pod{newPod("p-a", "a", phase(corev1.PodFailed)), newPod("p-b", "b")}},
		{name: "a pod on a node that is gone", ds: newDaemonSet("ds"),
			pods: []*corev1.Pod{newPod("p-a", "a"), newPod("p-b", "b"), newPod("p-c", "c", pinned)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(tt.ds, nodes, tt.pods...)
			in.InFlight = tt.inFlight
			if got := Compute(in); got.Idle != tt.want {
				t.Errorf("Idle = %v, want %v (plan %+v)", got.Idle, tt.want, summarize(got))
			}
		})
	}
}
