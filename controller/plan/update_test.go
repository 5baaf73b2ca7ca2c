package plan

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestUpdateLimits(t *testing.T) {
	pct := intstr.FromString
	num := intstr.FromInt32
	tests := []struct {
		name                string
		ds                  *appsv1.DaemonSet
		desired             int
		wantSurge, wantUnav int
		wantErr             bool
	}{
		{"int", newDaemonSet("ds", maxUnavailable(num(3))), 10, 0, 3, false},
		{"percent rounds up", newDaemonSet("ds", maxUnavailable(pct("25%"))), 10, 0, 3, false},
		{"percent of 1 node", newDaemonSet("ds", maxUnavailable(pct("1%"))), 1, 0, 1, false},
		{"100%", newDaemonSet("ds", maxUnavailable(pct("100%"))), 7, 0, 7, false},
		{"0 and 0 means maxUnavailable 1", newDaemonSet("ds", maxUnavailable(num(0))), 10, 0, 1, false},
		{"0% and 0 means maxUnavailable 1", newDaemonSet("ds", maxUnavailable(pct("0%"))), 10, 0, 1, false},
		{"0 and 0 with no nodes stays 0", newDaemonSet("ds", maxUnavailable(num(0))), 0, 0, 0, false},
		{"surge int", newDaemonSet("ds", maxSurge(num(2))), 10, 2, 0, false},
		{"surge percent rounds up", newDaemonSet("ds", maxSurge(pct("15%"))), 10, 2, 0, false},
		{"surge percent of no nodes", newDaemonSet("ds", maxSurge(pct("15%"))), 0, 0, 0, false},
		{"OnDelete", newDaemonSet("ds", onDelete), 10, 0, 1, false},
		{"bad percent", newDaemonSet("ds", maxUnavailable(pct("lots"))), 10, 0, 0, true},
		{"nil maxUnavailable", newDaemonSet("ds", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = nil }), 10, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, u, err := UpdateLimits(tt.ds, tt.desired)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if s != tt.wantSurge || u != tt.wantUnav {
				t.Errorf("UpdateLimits = surge %d, unavailable %d; want %d, %d", s, u, tt.wantSurge, tt.wantUnav)
			}
		})
	}
}

// oldPods returns one old, available pod per node, named after the node.
func oldPods(nodes []*corev1.Node, opts ...func(*corev1.Pod)) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, n := range nodes {
		pods = append(pods, newPod("p-"+n.Name, n.Name, append([]func(*corev1.Pod){old}, opts...)...))
	}
	return pods
}

func replace(pods []*corev1.Pod, p *corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, q := range pods {
		if q.Name != p.Name {
			out = append(out, q)
		}
	}
	return append(out, p)
}

func deletes(reason string, nodes ...string) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, fmt.Sprintf("%s/p-%s %s", n, n, reason))
	}
	return out
}

func TestRollingUpdateWithoutSurge(t *testing.T) {
	nodes := addNodes(5)
	ten := addNodes(10)
	tests := []struct {
		name    string
		ds      *appsv1.DaemonSet
		nodes   []*corev1.Node
		pods    []*corev1.Pod
		backoff Backoff
		want    summary
	}{
		{name: "maxUnavailable 2: first two by node name", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(2))),
			nodes: nodes, pods: oldPods(nodes),
			want: summary{Deletes: deletes("RollingUpdate", "node-0", "node-1")}},
		{name: "25% of 10 rounds up to 3", ds: newDaemonSet("ds", maxUnavailable(intstr.FromString("25%"))),
			nodes: ten, pods: oldPods(ten),
			want: summary{Deletes: deletes("RollingUpdate", "node-0", "node-1", "node-2")}},
		{name: "0 and 0 behave as maxUnavailable 1", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(0))),
			nodes: nodes, pods: oldPods(nodes),
			want: summary{Deletes: deletes("RollingUpdate", "node-0")}},
		{name: "unavailable old pods always go, and use up the budget", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(2))),
			nodes: nodes, pods: replace(replace(replace(oldPods(nodes), newPod("p-node-4", "node-4", old, notReady)), newPod("p-node-3", "node-3", old, notReady)), newPod("p-node-2", "node-2", old, notReady)),
			want: summary{Deletes: deletes("RollingUpdate", "node-2", "node-3", "node-4")}},
		{name: "an unavailable new pod counts against the budget", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(2))),
			nodes: nodes, pods: replace(oldPods(nodes), newPod("p-node-0", "node-0", notReady)),
			want: summary{Deletes: deletes("RollingUpdate", "node-1")}},
		{name: "a new pod within minReadySeconds is unavailable", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(1)), minReady(60)),
			nodes: nodes, pods: replace(oldPods(nodes), newPod("p-node-0", "node-0", ready(t0.Add(-20*time.Second)))),
			want: summary{RequeueAfter: 40 * time.Second}},
		{name: "a terminating pod counts as unavailable", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(2))),
			nodes: nodes, pods: replace(oldPods(nodes), newPod("p-node-0", "node-0", old, terminating)),
			want: summary{Deletes: deletes("RollingUpdate", "node-1")}},
		{name: "a terminating pod on a deleted node does not count (upstream counts it)", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(2))),
			nodes: nodes, pods: append(oldPods(nodes), newPod("p-gone", "gone", old, terminating)),
			want: summary{Deletes: deletes("RollingUpdate", "node-0", "node-1")}},
		{name: "a terminating pod on a node that no longer qualifies counts as unavailable", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(2))),
			nodes: append(addNodes(5), newNode("tainted", taint("x", corev1.TaintEffectNoExecute))), pods: append(oldPods(nodes), newPod("p-t", "tainted", old, terminating)),
			want: summary{Deletes: deletes("RollingUpdate", "node-0")}},
		{name: "an updated node is skipped", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(1))),
			nodes: nodes, pods: replace(oldPods(nodes), newPod("p-node-0", "node-0")),
			want: summary{Deletes: deletes("RollingUpdate", "node-1")}},
		{name: "pod-template-generation marks a pod updated", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(1))),
			nodes: nodes, pods: replace(oldPods(nodes), newPod("p-node-0", "node-0", old, func(p *corev1.Pod) { p.Labels[TemplateGenerationLabelKey] = "1" })),
			want: summary{Deletes: deletes("RollingUpdate", "node-1")}},
		{name: "the rollout waits while manage deletes", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(5))),
			nodes: nodes, pods: append(oldPods(nodes), newPod("dup", "node-0", old, created(t0))),
			want: summary{Deletes: []string{"node-0/dup DuplicateDaemonPod"}}},
		{name: "creates do not hold the rollout back; the empty node counts as unavailable", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(3))),
			nodes: append(addNodes(4), newNode("node-9")), pods: oldPods(addNodes(4)),
			want: summary{Creates: []string{"node-9"}, Deletes: deletes("RollingUpdate", "node-0", "node-1")}},
		{name: "OnDelete never deletes old pods", ds: newDaemonSet("ds", onDelete),
			nodes: nodes, pods: oldPods(nodes)},
		{name: "an old pod on a NoSchedule-tainted node is replaced, not recreated (upstream)", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(1))),
			nodes: []*corev1.Node{newNode("node-0", taint("x", corev1.TaintEffectNoSchedule)), newNode("node-1")}, pods: oldPods(addNodes(2)),
			want: summary{Deletes: deletes("RollingUpdate", "node-0")}},
		{name: "invalid maxUnavailable: warn, skip", ds: newDaemonSet("ds", maxUnavailable(intstr.FromString("x%"))),
			nodes: nodes, pods: oldPods(nodes),
			want: summary{Events: []string{"Warning InvalidUpdateStrategy"}}},
		{name: "a failed old pod is replaced at once (upstream ignores its backoff here)", ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(1))),
			nodes: nodes[:2], pods: replace(oldPods(nodes[:2]), newPod("p-node-1", "node-1", old, phase(corev1.PodFailed))),
			backoff: Backoff{Entries: map[BackoffKey]BackoffEntry{{Node: "node-1", Generation: 1}: {Delay: 2 * time.Second, LastUpdate: t0.Add(-time.Second)}}},
			want:    summary{Deletes: deletes("RollingUpdate", "node-1"), RequeueAfter: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(tt.ds, tt.nodes, tt.pods...)
			in.Backoff = tt.backoff
			got := Compute(in)
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRollingUpdateWithSurge(t *testing.T) {
	nodes := addNodes(4)
	tests := []struct {
		name    string
		ds      *appsv1.DaemonSet
		nodes   []*corev1.Node
		pods    []*corev1.Pod
		backoff Backoff
		want    summary
	}{
		{name: "maxSurge 1: one node at a time, by name", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1))),
			nodes: nodes, pods: oldPods(nodes),
			want: summary{Creates: []string{"node-0"}}},
		{name: "maxSurge 50% of 4", ds: newDaemonSet("ds", maxSurge(intstr.FromString("50%"))),
			nodes: nodes, pods: oldPods(nodes),
			want: summary{Creates: []string{"node-0", "node-1"}}},
		{name: "a surge in flight uses the budget", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1))),
			nodes: nodes, pods: append(oldPods(nodes), newPod("n-node-2", "node-2", notReady, created(t0))),
			want: summary{}},
		{name: "an unavailable old pod gets its replacement at once", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1))),
			nodes: nodes, pods: replace(oldPods(nodes), newPod("p-node-3", "node-3", old, notReady)),
			want: summary{Creates: []string{"node-0", "node-3"}}},
		{name: "old pod deleted once the new one is available", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1)), minReady(10)),
			nodes: nodes[:1], pods: append(oldPods(nodes[:1]), newPod("n-node-0", "node-0", ready(t0.Add(-10*time.Second)), created(t0))),
			want: summary{Deletes: []string{"node-0/p-node-0 SurgeReplaced"}}},
		{name: "minReadySeconds pending: keep old, requeue", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1)), minReady(10)),
			nodes: nodes[:1], pods: append(oldPods(nodes[:1]), newPod("n-node-0", "node-0", ready(t0.Add(-4*time.Second)), created(t0))),
			want: summary{RequeueAfter: 6 * time.Second}},
		{name: "old pod on an ineligible node: kept until another pod is available", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1)), nodeSelector("ds", "yes")),
			nodes: []*corev1.Node{newNode("node-0", taint("x", corev1.TaintEffectNoSchedule), nodeLabels("ds", "yes")), newNode("node-1", nodeLabels("ds", "yes"))},
			pods:  []*corev1.Pod{newPod("p-node-0", "node-0", old)},
			want:  summary{Creates: []string{"node-1"}}},
		{name: "old pod on an ineligible node: deleted when more are available than desired", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1)), nodeSelector("ds", "yes")),
			nodes: []*corev1.Node{newNode("node-0", taint("x", corev1.TaintEffectNoSchedule), nodeLabels("ds", "yes")), newNode("node-1", nodeLabels("ds", "yes"))},
			pods:  []*corev1.Pod{newPod("p-node-0", "node-0", old), newPod("p-node-1", "node-1")},
			want:  summary{Deletes: deletes("RollingUpdate", "node-0")}},
		{name: "unavailable old pod on an ineligible node is deleted", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1))),
			nodes: []*corev1.Node{newNode("node-0", taint("x", corev1.TaintEffectNoSchedule))},
			pods:  []*corev1.Pod{newPod("p-node-0", "node-0", old, notReady)},
			want:  summary{Deletes: deletes("RollingUpdate", "node-0")}},
		{name: "terminating copies are ignored: still a surge candidate", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1))),
			nodes: nodes[:2], pods: append(oldPods(nodes[:2]), newPod("p2-node-0", "node-0", old, terminating), newPod("p3-node-0", "node-0", hash("older"), terminating)),
			want: summary{Creates: []string{"node-0"}}},
		{name: "two old pods (one failed, backing off) count as a surge in flight", ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1))),
			nodes: nodes[:2], pods: append(oldPods(nodes[:2]), newPod("p2-node-0", "node-0", old, phase(corev1.PodFailed))),
			backoff: Backoff{Entries: map[BackoffKey]BackoffEntry{{Node: "node-0", Generation: 1}: {Delay: 2 * time.Second, LastUpdate: t0}}},
			want:    summary{RequeueAfter: 2 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(tt.ds, tt.nodes, tt.pods...)
			in.Backoff = tt.backoff
			got := Compute(in)
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// cluster is a tiny simulation: it applies plans like a controller plus a
// kubelet would, so tests can follow a rollout over many syncs.
type cluster struct {
	ds    *appsv1.DaemonSet
	nodes []*corev1.Node
	pods  []*corev1.Pod
	now   time.Time
	seq   int
	// healthy decides whether a newly created pod ever becomes ready.
	healthy func(*corev1.Pod) bool
	backoff Backoff
	gens    []string // hashes in the order they were rolled out
}

// sync runs Compute and applies the plan: deletions finish at once, new pods
// start unready and become ready after one more step if healthy.
func (c *cluster) sync(hash string) Plan {
	if len(c.gens) == 0 || c.gens[len(c.gens)-1] != hash {
		// A template change: the apiserver bumps both generations.
		c.gens = append(c.gens, hash)
		c.ds = c.ds.DeepCopy()
		c.ds.Generation = int64(len(c.gens))
		c.ds.Annotations[appsv1.DeprecatedTemplateGeneration] = fmt.Sprint(len(c.gens))
	}
	in := Input{DaemonSet: c.ds, Nodes: c.nodes, Pods: c.pods, Hash: hash, Backoff: c.backoff, Now: c.now}
	p := Compute(in)
	c.backoff = p.Backoff
	gone := map[string]bool{}
	for _, d := range p.Deletes {
		gone[d.Name] = true
	}
	var next []*corev1.Pod
	for _, pod := range c.pods {
		if gone[pod.Name] {
			continue
		}
		// Pods created in the previous step become ready now, if healthy.
		if !IsPodReady(pod) && pod.Status.Phase == corev1.PodRunning && c.healthy(pod) {
			pod = pod.DeepCopy()
			ready(c.now)(pod)
		}
		next = append(next, pod)
	}
	for _, node := range p.Creates {
		c.seq++
		pod := NewPod(c.ds, hash, node, BindDirect)
		pod.Name = fmt.Sprintf("ds-%d", c.seq)
		pod.UID = types.UID("uid-" + pod.Name)
		pod.CreationTimestamp.Time = c.now
		pod.Status.Phase = corev1.PodRunning
		next = append(next, pod)
	}
	c.pods = next
	c.now = c.now.Add(time.Second)
	return p
}

func (c *cluster) count(hash string) (total, available int) {
	for _, p := range c.pods {
		if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash {
			continue
		}
		total++
		if ok, _ := availableIn(p, c.ds.Spec.MinReadySeconds, c.now); ok {
			available++
		}
	}
	return total, available
}

func TestRolloutWithBrokenRevisionStaysWithinMaxUnavailable(t *testing.T) {
	for _, mu := range []int32{1, 3} {
		t.Run(fmt.Sprintf("maxUnavailable %d", mu), func(t *testing.T) {
			c := &cluster{ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(mu))), nodes: addNodes(10), now: t0,
				healthy: func(p *corev1.Pod) bool { return p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != "broken" }}
			for range 3 {
				c.sync(oldHash)
			}
			if total, avail := c.count(oldHash); total != 10 || avail != 10 {
				t.Fatalf("initial rollout: %d pods, %d available; want 10, 10", total, avail)
			}
			for i := range 30 {
				c.sync("broken")
				_, avail := c.count(oldHash)
				if unavailable := 10 - avail; unavailable > int(mu) {
					t.Fatalf("sync %d: %d nodes without an available pod, maxUnavailable %d", i, unavailable, mu)
				}
			}
			if total, _ := c.count("broken"); total != int(mu) {
				t.Errorf("broken pods = %d, want exactly maxUnavailable (%d): the rollout must stall there", total, mu)
			}
		})
	}
}

func TestRolloutCompletes(t *testing.T) {
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
	}{
		{"maxUnavailable 2", newDaemonSet("ds", maxUnavailable(intstr.FromInt32(2)))},
		{"maxSurge 2", newDaemonSet("ds", maxSurge(intstr.FromInt32(2)))},
		{"maxSurge 100% with minReadySeconds", newDaemonSet("ds", maxSurge(intstr.FromString("100%")), minReady(2))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cluster{ds: tt.ds, nodes: addNodes(7), now: t0, healthy: func(*corev1.Pod) bool { return true }}
			for range 5 {
				c.sync(oldHash)
			}
			surge := tt.ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge.IntValue() > 0 || tt.ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge.Type == intstr.String
			for i := range 100 {
				c.sync(curHash)
				if surge {
					// Surge promises that every node keeps an available pod.
					byNode := map[string]bool{}
					for _, p := range c.pods {
						if ok, _ := availableIn(p, c.ds.Spec.MinReadySeconds, c.now); ok {
							byNode[p.Spec.NodeName] = true
						}
					}
					if len(byNode) != 7 {
						t.Fatalf("sync %d: only %d nodes have an available pod under surge", i, len(byNode))
					}
				}
				if total, avail := c.count(curHash); total == 7 && avail == 7 && len(c.pods) == 7 {
					t.Logf("settled after %d syncs", i+1)
					p := c.sync(curHash)
					if diff := cmp.Diff(summary{}, summarize(p)); diff != "" {
						t.Errorf("settled plan not empty (-want +got):\n%s", diff)
					}
					if p.Status.UpdatedNumberScheduled != 7 || p.Status.NumberAvailable != 7 {
						t.Errorf("status %+v, want 7 updated and available", p.Status)
					}
					return
				}
			}
			t.Fatalf("rollout did not complete: %d pods", len(c.pods))
		})
	}
}

func TestFirstByName(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	id := func(s string) string { return s }
	for _, n := range []int{0, 1, 2, 3, 16, 17, 40, 300, 2000} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("node-%06d", r.Intn(1_000_000)*n+i) // distinct
		}
		sorted := slices.Sorted(slices.Values(names))
		reversed := slices.Clone(sorted)
		slices.Reverse(reversed)
		organ := append(slices.Clone(sorted[n/2:]), reversed[n-n/2:]...) // up, then down
		orders := map[string][]string{"random": names, "sorted": sorted, "reversed": reversed, "organ": organ}
		for name, order := range orders {
			for _, k := range []int{0, min(1, n), n / 10, n / 2, max(n-1, 0), n} {
				s := slices.Clone(order)
				firstByName(s, k, id)
				got := slices.Sorted(slices.Values(s[:k]))
				if !slices.Equal(got, sorted[:k]) {
					t.Fatalf("%s n=%d k=%d: first %v, want %v", name, n, k, got, sorted[:k])
				}
				if !slices.Equal(slices.Sorted(slices.Values(s)), sorted) {
					t.Fatalf("%s n=%d k=%d: elements lost", name, n, k)
				}
			}
		}
	}
}
