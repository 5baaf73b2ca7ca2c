package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsbench/dsbench/kwok"
)

func TestPlanNodeReset(t *testing.T) {
	pool := kwok.NodePool{Prefix: "w", Count: 2, Labels: map[string]string{"disk": "ssd"},
		Taints: []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}}
	want := map[string]*corev1.Node{}
	for i := range pool.Count {
		want[pool.NodeName(i)] = pool.Node(i)
	}
	pools := []kwok.NodePool{pool}
	// existing is w-0 as a run left it: Ready, changed by edit.
	existing := func(edit func(n *corev1.Node)) corev1.Node {
		n := pool.Node(0).DeepCopy()
		n.Labels["beta.kubernetes.io/os"] = "linux" // the apiserver's own
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if edit != nil {
			edit(n)
		}
		return *n
	}
	restoreW0 := []string{"w-0"}
	tests := []struct {
		name        string
		edit        func(n *corev1.Node)
		wantRestore []string
		wantRemove  []string
	}{
		{name: "as declared", edit: nil},
		{name: "relabeled", edit: func(n *corev1.Node) { n.Labels["disk"] = "hdd" }, wantRestore: restoreW0},
		{name: "label added", edit: func(n *corev1.Node) { n.Labels["zone"] = "a" }, wantRestore: restoreW0},
		{name: "label removed", edit: func(n *corev1.Node) { delete(n.Labels, "disk") }, wantRestore: restoreW0},
		{name: "tainted", edit: func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "dsbench.dev/evict", Effect: corev1.TaintEffectNoExecute})
		}, wantRestore: restoreW0},
		{name: "taint value changed", edit: func(n *corev1.Node) { n.Spec.Taints[0].Value = "y" }, wantRestore: restoreW0},
		{name: "cordoned", edit: func(n *corev1.Node) { n.Spec.Unschedulable = true }, wantRestore: restoreW0},
		{name: "not ready", edit: func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, wantRemove: restoreW0},
		{name: "no conditions yet", edit: func(n *corev1.Node) { n.Status.Conditions = nil }, wantRemove: restoreW0},
		{name: "lifecycle taint", edit: func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute})
		}, wantRemove: restoreW0},
		{name: "other capacity", edit: func(n *corev1.Node) { n.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("4") }, wantRemove: restoreW0},
		{name: "being deleted", edit: func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{} }, wantRemove: restoreW0},
		{name: "not in the pools", edit: func(n *corev1.Node) { n.Name, n.Labels[kwok.PoolLabel] = "x-7", "x" }, wantRemove: []string{"x-7"}},
		{name: "a pool's prefix without its label", edit: func(n *corev1.Node) { delete(n.Labels, kwok.PoolLabel) }, wantRemove: restoreW0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planNodeReset([]corev1.Node{existing(tt.edit)}, pools)
			var restored []string
			for _, n := range got.Restore {
				restored = append(restored, n.Name)
				if d := cmp.Diff(want[n.Name], n); d != "" {
					t.Errorf("restore target of %s is not the pool's node (-want +got):\n%s", n.Name, d)
				}
			}
			if d := cmp.Diff(tt.wantRestore, restored); d != "" {
				t.Errorf("restore (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantRemove, got.Remove); d != "" {
				t.Errorf("remove (-want +got):\n%s", d)
			}
		})
	}
}

func TestPlanNodeResetIsSorted(t *testing.T) {
	pool := kwok.NodePool{Prefix: "w", Count: 12}
	want := map[string]*corev1.Node{}
	var have []corev1.Node
	for i := range pool.Count {
		want[pool.NodeName(i)] = pool.Node(i)
		n := pool.Node(i).DeepCopy()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		n.Spec.Unschedulable = true
		have = append(have, *n)
		gone := pool.Node(i).DeepCopy()
		gone.Name = "x-" + gone.Name
		have = append(have, *gone)
	}
	slices.Reverse(have)
	got := planNodeReset(have, []kwok.NodePool{pool})
	if len(got.Restore) != pool.Count || len(got.Remove) != pool.Count {
		t.Fatalf("restore %d and remove %d nodes, want %d each", len(got.Restore), len(got.Remove), pool.Count)
	}
	if !slices.IsSorted(got.Remove) || !slices.IsSortedFunc(got.Restore, func(a, b *corev1.Node) int {
		return strings.Compare(a.Name, b.Name)
	}) {
		t.Errorf("plan not sorted by name: remove %v", got.Remove)
	}
}

// A pool keeps its lowest-numbered reusable nodes, whatever their index,
// up to its count; new nodes get indices above every name seen, so that no
// name is used again (kwok v0.8.0 stalls pods on re-created names).
func TestPlanNodeResetKeepsAnyIndexAndNeverReusesANameSeen(t *testing.T) {
	pool := kwok.NodePool{Prefix: "w", Count: 2}
	node := func(i int, ready bool) corev1.Node {
		n := pool.Node(i).DeepCopy()
		status := corev1.ConditionTrue
		if !ready {
			status = corev1.ConditionFalse
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
		return *n
	}
	have := []corev1.Node{node(9, true), node(1, false), node(5, true), node(12, true)}
	got := planNodeReset(have, []kwok.NodePool{pool})
	if d := cmp.Diff(map[string][]string{"w": {"w-5", "w-9"}}, got.Keep); d != "" {
		t.Errorf("keep (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"w-1", "w-12"}, got.Remove); d != "" {
		t.Errorf("remove (-want +got):\n%s", d)
	}
	if got.Next["w"] != 13 {
		t.Errorf("next index %d, want 13 (above w-12, which is removed)", got.Next["w"])
	}
	empty := planNodeReset(nil, []kwok.NodePool{pool})
	if empty.Next["w"] != 2 || len(empty.Keep["w"]) != 0 {
		t.Errorf("an empty cluster: keep %v, next %d; want none and 2", empty.Keep, empty.Next["w"])
	}
}

func TestFreshNodeIndexNeverRepeats(t *testing.T) {
	first := freshNodeIndex("fresh-test", 5, 3)
	if first != 8 {
		t.Fatalf("first reservation ends at %d, want 8 (5, 6, 7)", first)
	}
	if next := freshNodeIndex("fresh-test", 0, 2); next != 10 {
		t.Errorf("a later reservation from 0 ends at %d, want 10: indices 5-7 are used", next)
	}
}
