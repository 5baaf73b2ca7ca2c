package plan

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Writes in flight are laid over the pods: a create is a new, unavailable
// pod on its node, a deleted pod is terminating. The plan neither repeats
// them nor spends the rolling update's budget twice, and the status counts
// only the pods that exist.
func TestInFlightWrites(t *testing.T) {
	num := intstr.FromInt32
	nodes := addNodes(4) // node-0 .. node-3
	creates := func(kv ...string) map[string]string { return labelMap(kv...) }
	deleting := func(names ...string) map[string]struct{} {
		m := map[string]struct{}{}
		for _, n := range names {
			m[n] = struct{}{}
		}
		return m
	}
	tests := []struct {
		name     string
		ds       *appsv1.DaemonSet
		nodes    []*corev1.Node
		pods     []*corev1.Pod
		inFlight InFlight
		want     summary
		// wantCurrent is the status's currentNumberScheduled: pods that exist.
		wantCurrent int32
	}{
		{
			name:        "no second create beside one in flight",
			ds:          newDaemonSet("ds"),
			nodes:       nodes[:2],
			inFlight:    InFlight{Creates: creates("node-0", curHash)},
			want:        summary{Creates: []string{"node-1"}},
			wantCurrent: 0,
		},
		{
			name:        "a create for a node that is gone is ignored",
			ds:          newDaemonSet("ds"),
			nodes:       nodes[:1],
			inFlight:    InFlight{Creates: creates("node-9", curHash)},
			want:        summary{Creates: []string{"node-0"}},
			wantCurrent: 0,
		},
		{
			// Seen between the caller's reading of its writes and of its
			// cache: the pod is there and in flight; it is one pod, not a
			// duplicate whose pruning would hold the rolling update back.
			name:  "a create already seen is not doubled",
			ds:    newDaemonSet("ds", maxUnavailable(num(2))),
			nodes: nodes,
			pods: append(oldPods(nodes[1:]),
				newPod("new-node-0", "node-0", pinned, notReady, created(t0))),
			inFlight:    InFlight{Creates: creates("node-0", curHash)},
			want:        summary{Deletes: deletes(RollingUpdateReason, "node-1")},
			wantCurrent: 4,
		},
		{
			// maxUnavailable 2, and two deletions in flight: the budget is spent.
			name:        "deletions in flight spend the budget",
			ds:          newDaemonSet("ds", maxUnavailable(num(2))),
			nodes:       nodes,
			pods:        oldPods(nodes),
			inFlight:    InFlight{Deletes: deleting("p-node-0", "p-node-1")},
			want:        summary{},
			wantCurrent: 4,
		},
		{
			name:        "one deletion in flight leaves one of two",
			ds:          newDaemonSet("ds", maxUnavailable(num(2))),
			nodes:       nodes,
			pods:        oldPods(nodes),
			inFlight:    InFlight{Deletes: deleting("p-node-0")},
			want:        summary{Deletes: deletes(RollingUpdateReason, "node-1")},
			wantCurrent: 4,
		},
		{
			// node-0's old pod is gone and its replacement in flight:
			// that node is unavailable, so one more old pod may go.
			name:        "a replacement in flight counts as unavailable",
			ds:          newDaemonSet("ds", maxUnavailable(num(2))),
			nodes:       nodes,
			pods:        oldPods(nodes[1:]),
			inFlight:    InFlight{Creates: creates("node-0", curHash)},
			want:        summary{Deletes: deletes(RollingUpdateReason, "node-1")},
			wantCurrent: 3,
		},
		{
			// maxSurge 1 and a surge pod in flight on node-0: no other surge.
			name:        "a surge create in flight spends maxSurge",
			ds:          newDaemonSet("ds", maxSurge(num(1))),
			nodes:       nodes,
			pods:        oldPods(nodes),
			inFlight:    InFlight{Creates: creates("node-0", curHash)},
			want:        summary{},
			wantCurrent: 4,
		},
		{
			// node-0 no longer qualifies; the pod in flight is not deleted
			// before it exists, and the rolling update waits for it.
			name:  "a create in flight on a node that no longer qualifies is held",
			ds:    newDaemonSet("ds", maxUnavailable(num(2)), nodeSelector("role", "worker")),
			nodes: []*corev1.Node{newNode("node-0"), newNode("node-1", nodeLabels("role", "worker"))},
			pods: []*corev1.Pod{
				newPod("p-node-1", "node-1", old),
			},
			inFlight:    InFlight{Creates: creates("node-0", curHash)},
			want:        summary{},
			wantCurrent: 1,
		},
		{
			// A pod being deleted on a node the DaemonSet left is not
			// deleted again.
			name:        "a deletion in flight is not repeated",
			ds:          newDaemonSet("ds", nodeSelector("role", "worker")),
			nodes:       nodes[:1],
			pods:        []*corev1.Pod{newPod("p-node-0", "node-0")},
			inFlight:    InFlight{Deletes: deleting("p-node-0")},
			want:        summary{},
			wantCurrent: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(tt.ds, tt.nodes, tt.pods...)
			in.InFlight = tt.inFlight
			p := Compute(in)
			if diff := cmp.Diff(tt.want, summarize(p), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if p.Status.CurrentNumberScheduled != tt.wantCurrent {
				t.Errorf("currentNumberScheduled = %d, want %d (pods that exist)", p.Status.CurrentNumberScheduled, tt.wantCurrent)
			}
			if p.Idle {
				t.Error("Idle with writes in flight")
			}
		})
	}
}

// withInFlight adds random writes in flight to in: creates on some of its
// node names (some that do not exist) with the current or an old hash, and
// deletions of some of its pods.
func withInFlight(in Input, c *choices) Input {
	for range c.intn(4) {
		if in.InFlight.Creates == nil {
			in.InFlight.Creates = map[string]string{}
		}
		h := curHash
		if c.intn(4) == 0 {
			h = oldHash
		}
		in.InFlight.Creates[fmt.Sprintf("n%d", c.intn(10))] = h
	}
	for _, pod := range in.Pods {
		if c.intn(5) == 0 {
			if in.InFlight.Deletes == nil {
				in.InFlight.Deletes = map[string]struct{}{}
			}
			in.InFlight.Deletes[pod.Name] = struct{}{}
		}
	}
	return in
}

const inFlightPrefix = "zz-in-flight-"

// seen is in as it will be once its writes in flight are seen: each create
// a pending pod pinned to its node (unless the node is gone or already holds
// a live pod of the hash), each deleted pod terminating.
func seen(in Input) Input {
	out := in
	out.InFlight = InFlight{}
	out.Pods = nil
	live := map[string]bool{} // node/hash of live pods
	for _, pod := range in.Pods {
		if _, ok := in.InFlight.Deletes[pod.Name]; ok && !isTerminating(pod) {
			pod = pod.DeepCopy()
			terminating(pod)
		}
		if target, ok := TargetNodeName(pod); ok && !isTerminating(pod) {
			live[target+"/"+pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] = true
		}
		out.Pods = append(out.Pods, pod)
	}
	exists := map[string]bool{}
	for _, n := range in.Nodes {
		exists[n.Name] = true
	}
	for node, h := range in.InFlight.Creates {
		if !exists[node] || live[node+"/"+h] {
			continue
		}
		// Its name sorts last: of pods created in the same second, the
		// one in flight is taken as the youngest (the planner cannot know
		// its generated name).
		p := newPod(inFlightPrefix+node, node, hash(h), pinned, notReady, created(in.Now))
		p.Status.Phase = corev1.PodPending
		out.Pods = append(out.Pods, p)
	}
	return out
}

// The plan with writes in flight is the plan of the world once they are
// seen, except that a pod in flight is never deleted: where that world
// would delete one, the plan holds back that deletion and the rolling
// update. Its status counts the pods that exist, as without the writes.
func TestInFlightIsTheWorldAsSeen(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	compared := 0
	for i := range 5000 {
		b := make([]byte, 160)
		r.Read(b)
		c := &choices{data: b}
		base := scenario(c)
		in := withInFlight(base, c)
		got := Compute(in)
		want := Compute(seen(in))
		if diff := cmp.Diff(Compute(base).Status, got.Status); diff != "" {
			t.Fatalf("case %d: status with writes in flight differs (-without +with):\n%s", i, diff)
		}
		for _, d := range got.Deletes {
			if _, ok := in.InFlight.Deletes[d.Name]; ok {
				t.Fatalf("case %d: deletes %s, whose deletion is in flight", i, d.Name)
			}
		}
		holds := slices.ContainsFunc(want.Deletes, func(d PodDeletion) bool { return strings.HasPrefix(d.Name, inFlightPrefix) })
		if holds {
			// Held: nothing the seen world would not do.
			for _, d := range got.Deletes {
				if !slices.Contains(want.Deletes, d) {
					t.Fatalf("case %d: deletes %s/%s, which the world as seen does not", i, d.Node, d.Name)
				}
			}
			for _, n := range got.Creates {
				if !slices.Contains(want.Creates, n) {
					t.Fatalf("case %d: creates on %s, which the world as seen does not", i, n)
				}
			}
			continue
		}
		compared++
		// A pod being deleted may still have asked for a requeue (when it
		// would become available): a spare sync, not a decision.
		gotSum, wantSum := summarize(got), summarize(want)
		gotSum.RequeueAfter, wantSum.RequeueAfter = 0, 0
		if diff := cmp.Diff(wantSum, gotSum, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("case %d: plan with writes in flight differs from the world as seen (-seen +in flight):\n%s", i, diff)
		}
	}
	if compared < 3000 {
		t.Errorf("only %d of 5000 cases compared in full", compared)
	}
}
