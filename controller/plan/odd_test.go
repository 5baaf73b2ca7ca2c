package plan

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DaemonSets that are odd but valid (issue 13): no node to run on, and
// maxUnavailable 100%. A selector that other controllers' pods also match
// never reaches the planner, whose Input.Pods are the DaemonSet's own after
// adoption: claiming is tested in the controller package.

// TestComputeZeroEligibleNodes: a DaemonSet that no node admits plans
// nothing, and its status is a fixed point: written back and planned again it
// is the same, so that the sync its own status write causes writes nothing.
func TestComputeZeroEligibleNodes(t *testing.T) {
	nowhere := nodeSelector("pool", "nowhere")
	tests := []struct {
		name  string
		ds    *appsv1.DaemonSet
		nodes []*corev1.Node
	}{
		{"no nodes at all", newDaemonSet("ds"), nil},
		{"nodeSelector matches no node", newDaemonSet("ds", nowhere), addNodes(5, nodeLabels("pool", "elsewhere"))},
		{"every node tainted NoSchedule", newDaemonSet("ds"), addNodes(3, taint("dedicated", corev1.TaintEffectNoSchedule))},
		{"maxUnavailable 100%", newDaemonSet("ds", nowhere, maxUnavailable(intstr.FromString("100%"))), addNodes(3)},
		{"maxUnavailable 0 and maxSurge 0", newDaemonSet("ds", nowhere, maxUnavailable(intstr.FromInt32(0))), addNodes(3)},
		{"maxSurge 100%", newDaemonSet("ds", nowhere, maxSurge(intstr.FromString("100%"))), addNodes(3)},
		{"OnDelete", newDaemonSet("ds", nowhere, onDelete), addNodes(3)},
		{"minReadySeconds", newDaemonSet("ds", nowhere, minReady(30)), addNodes(3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := tt.ds
			ds.Generation = 2 // the status has not seen it yet
			got := Compute(input(ds, tt.nodes))
			if diff := cmp.Diff(summary{}, summarize(got)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			want := appsv1.DaemonSetStatus{ObservedGeneration: 2}
			if diff := cmp.Diff(want, got.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}

			written := ds.DeepCopy()
			written.Status = got.Status
			again := Compute(input(written, tt.nodes))
			if diff := cmp.Diff(summary{}, summarize(again)); diff != "" {
				t.Errorf("plan after the status write (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got.Status, again.Status); diff != "" {
				t.Errorf("status after the status write changed (-first +second): the controller would write it again:\n%s", diff)
			}
		})
	}
}

// TestRollingUpdateMaxUnavailable100Percent: every old pod may go at once,
// as upstream, and none is replaced twice.
func TestRollingUpdateMaxUnavailable100Percent(t *testing.T) {
	all := maxUnavailable(intstr.FromString("100%"))
	nodes := addNodes(10)
	names := func(from, to int) []string {
		var out []string
		for _, n := range nodes[from:to] {
			out = append(out, n.Name)
		}
		return out
	}
	partly := oldPods(nodes)
	for _, n := range nodes[:4] {
		partly = replace(partly, newPod("p-"+n.Name, n.Name))
	}
	unready := oldPods(nodes)
	for _, n := range nodes[7:] {
		unready = replace(unready, newPod("p-"+n.Name, n.Name, old, notReady))
	}
	terminatingOld := oldPods(nodes)
	for _, n := range nodes[:5] {
		terminatingOld = replace(terminatingOld, newPod("p-"+n.Name, n.Name, old, terminating))
	}
	tests := []struct {
		name  string
		nodes []*corev1.Node
		pods  []*corev1.Pod
		want  summary
	}{
		{name: "every old pod at once", nodes: nodes, pods: oldPods(nodes),
			want: summary{Deletes: deletes(RollingUpdateReason, names(0, 10)...)}},
		{name: "updated nodes are left alone", nodes: nodes, pods: partly,
			want: summary{Deletes: deletes(RollingUpdateReason, names(4, 10)...)}},
		{name: "unavailable old pods go with the available ones", nodes: nodes, pods: unready,
			want: summary{Deletes: deletes(RollingUpdateReason, names(0, 10)...)}},
		{name: "terminating pods are not deleted again", nodes: nodes, pods: terminatingOld,
			want: summary{Deletes: deletes(RollingUpdateReason, names(5, 10)...)}},
		{name: "the emptied nodes all get their new pod", nodes: nodes,
			want: summary{Creates: names(0, 10)}},
		{name: "new pods not yet ready: nothing to do", nodes: nodes, pods: func() []*corev1.Pod {
			var pods []*corev1.Pod
			for _, n := range nodes {
				pods = append(pods, newPod("p-"+n.Name, n.Name, notReady, created(t0)))
			}
			return pods
		}()},
		{name: "a single node", nodes: nodes[:1], pods: oldPods(nodes[:1]),
			want: summary{Deletes: deletes(RollingUpdateReason, names(0, 1)...)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(input(newDaemonSet("ds", all), tt.nodes, tt.pods...))
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRolloutMaxUnavailable100Percent follows a whole rollout sync by sync:
// all old pods go in the first sync, every node gets its new pod in the next,
// no node ever holds two pods, and the settled plan is empty.
func TestRolloutMaxUnavailable100Percent(t *testing.T) {
	const n = 10
	c := &cluster{ds: newDaemonSet("ds", maxUnavailable(intstr.FromString("100%"))), nodes: addNodes(n), now: t0,
		healthy: func(*corev1.Pod) bool { return true }}
	for range 3 {
		c.sync(oldHash)
	}
	if total, avail := c.count(oldHash); total != n || avail != n {
		t.Fatalf("initial rollout: %d pods, %d available; want %d, %d", total, avail, n, n)
	}
	var steps []string
	for i := range 10 {
		p := c.sync(curHash)
		steps = append(steps, fmt.Sprintf("%d creates, %d deletes", len(p.Creates), len(p.Deletes)))
		perNode := map[string]int{}
		for _, pod := range c.pods {
			perNode[pod.Spec.NodeName]++
		}
		for node, k := range perNode {
			if k > 1 {
				t.Fatalf("sync %d: node %s holds %d pods", i, node, k)
			}
		}
		if total, avail := c.count(curHash); total == n && avail == n && len(c.pods) == n {
			if p := c.sync(curHash); len(p.Creates)+len(p.Deletes) > 0 {
				t.Errorf("settled plan not empty: %+v", summarize(p))
			}
			// Delete all, create all, wait while the new pods become ready.
			want := []string{"0 creates, 10 deletes", "10 creates, 0 deletes", "0 creates, 0 deletes"}
			if diff := cmp.Diff(want, steps); diff != "" {
				t.Errorf("rollout steps (-want +got):\n%s", diff)
			}
			return
		}
	}
	t.Fatalf("rollout did not complete: %v", steps)
}
