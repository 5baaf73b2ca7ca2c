package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// nodeRoutingWorld: gpu-agent runs only on role=gpu nodes, agent everywhere
// (and has its pod on n1), tolerant tolerates the "maintenance" NoExecute
// taint.
func nodeRoutingWorld() (gpu, agent, tolerant *appsv1.DaemonSet, n1 *corev1.Node, objs []runtime.Object) {
	gpu = newDaemonSet("gpu-agent", withNodeSelector(map[string]string{"role": "gpu"}))
	agent = newDaemonSet("agent")
	tolerant = newDaemonSet("tolerant", func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists}}
	})
	n1 = newNode("n1", map[string]string{"role": "cpu"})
	objs = []runtime.Object{gpu, agent, tolerant, n1, newPodFor(agent, "agent-n1", "n1"), newPodFor(tolerant, "tolerant-n1", "n1")}
	return
}

func TestNodeUpdateRouting(t *testing.T) {
	gpu, agent, _, n1, objs := nodeRoutingWorld()
	tests := []struct {
		name   string
		mutate func(n *corev1.Node)
		want   []string
	}{
		{
			name: "heartbeat enqueues nothing",
			mutate: func(n *corev1.Node) {
				n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
				n.Status.Allocatable = corev1.ResourceList{}
			},
		},
		{
			name:   "annotation change enqueues nothing",
			mutate: func(n *corev1.Node) { n.Annotations = map[string]string{"note": "x"} },
		},
		{
			name:   "label change enqueues exactly the DaemonSet that becomes eligible",
			mutate: func(n *corev1.Node) { n.Labels["role"] = "gpu" },
			want:   []string{dsKey(gpu)},
		},
		{
			name:   "unrelated label change enqueues nothing",
			mutate: func(n *corev1.Node) { n.Labels["zone"] = "b" },
		},
		{
			name: "NoExecute taint enqueues the DaemonSets whose pods must go",
			mutate: func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}
			},
			want: []string{dsKey(agent)},
		},
		{
			name: "NoSchedule taint changes shouldRun of agent only (its desired count drops)",
			mutate: func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
			},
			want: []string{dsKey(agent)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := updateNodeAndRoute(t, objs, n1, tt.mutate, func(f *fixture, cur *corev1.Node) {
				if !eligibilityInputsChanged(n1, cur) && f.c.nodeQueue.Len() != 0 {
					t.Fatal("an update that changes no eligibility input reached the node queue")
				}
			})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("enqueued DaemonSets (-want +got):\n%s", diff)
			}
		})
	}
}

// A node update that leaves a DaemonSet's eligibility as it was does not
// wake it, as upstream, even where its pods disagree with that eligibility:
// that is its own sync's business (a create or delete in flight, a retry
// with backoff), and each such wake-up is a full sync for nothing.
func TestNodeUpdateWakesOnlyWhereEligibilityChanged(t *testing.T) {
	gpu, agent, _, n1, objs := nodeRoutingWorld()
	// missing should run on n1 and has no pod there yet; gpu-agent has a
	// pod on n1, which is no gpu node (its deletion is in flight).
	missing := newDaemonSet("missing")
	objs = append(objs, missing, newPodFor(gpu, "gpu-agent-n1", "n1"))
	tests := []struct {
		name   string
		mutate func(n *corev1.Node)
		want   []string
	}{
		{
			name:   "unrelated label change wakes nobody",
			mutate: func(n *corev1.Node) { n.Labels["zone"] = "b" },
		},
		{
			name: "tolerated taint wakes nobody",
			mutate: func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}
			},
		},
		{
			name: "NoSchedule taint wakes those whose shouldRun changes",
			mutate: func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
			},
			want: []string{dsKey(agent), dsKey(missing)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, updateNodeAndRoute(t, objs, n1, tt.mutate, nil)); diff != "" {
				t.Errorf("enqueued DaemonSets (-want +got):\n%s", diff)
			}
		})
	}
}

// updateNodeAndRoute updates n1 by mutate in a fixture of objs, routes the
// node event (after check, if any, has looked at the fixture before
// routing) and returns the DaemonSets it woke.
func updateNodeAndRoute(t *testing.T, objs []runtime.Object, n1 *corev1.Node, mutate func(*corev1.Node), check func(*fixture, *corev1.Node)) []string {
	f := newFixture(t, objs)
	cur := n1.DeepCopy()
	cur.ResourceVersion = "2"
	mutate(cur)
	f.addToCache(cur)
	f.c.updateNode(n1, cur)
	if check != nil {
		check(f, cur)
	}
	f.routeNodes()
	return f.queued()
}

func TestNodeTaintTimeAddedIsIgnored(t *testing.T) {
	old := newNode("n1", nil, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoExecute, TimeAdded: ptr.To(metav1.NewTime(t0))})
	cur := old.DeepCopy()
	cur.Spec.Taints[0].TimeAdded = ptr.To(metav1.NewTime(t0.Add(time.Second)))
	if eligibilityInputsChanged(old, cur) {
		t.Error("a TimeAdded-only change counts as an eligibility change")
	}
}

func TestNodeAddAndDeleteRouting(t *testing.T) {
	gpu, agent, tolerant, n1, objs := nodeRoutingWorld()

	t.Run("new gpu node wakes every DaemonSet that should run there", func(t *testing.T) {
		f := newFixture(t, objs)
		n2 := newNode("n2", map[string]string{"role": "gpu"})
		f.addToCache(n2)
		f.c.addNode(n2)
		f.routeNodes()
		if diff := cmp.Diff([]string{dsKey(agent), dsKey(gpu), dsKey(tolerant)}, f.queued()); diff != "" {
			t.Errorf("enqueued (-want +got):\n%s", diff)
		}
	})
	t.Run("new cpu node leaves gpu-agent alone", func(t *testing.T) {
		f := newFixture(t, objs)
		n2 := newNode("n2", map[string]string{"role": "cpu"})
		f.addToCache(n2)
		f.c.addNode(n2)
		f.routeNodes()
		if diff := cmp.Diff([]string{dsKey(agent), dsKey(tolerant)}, f.queued()); diff != "" {
			t.Errorf("enqueued (-want +got):\n%s", diff)
		}
	})
	t.Run("new node that is not ready yet wakes nobody", func(t *testing.T) {
		f := newFixture(t, objs)
		n2 := newNode("n2", map[string]string{"role": "gpu"}, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
		f.addToCache(n2)
		f.c.addNode(n2)
		f.routeNodes()
		if got := f.queued(); len(got) != 0 {
			t.Errorf("enqueued %v for a node no daemon pod may use yet", got)
		}
	})
	t.Run("deleted node wakes the DaemonSets with pods there", func(t *testing.T) {
		f := newFixture(t, objs)
		f.c.deleteNode(cache.DeletedFinalStateUnknown{Key: "n1", Obj: n1})
		if diff := cmp.Diff([]string{dsKey(agent), dsKey(tolerant)}, f.queued()); diff != "" {
			t.Errorf("enqueued (-want +got):\n%s", diff)
		}
		if f.c.nodeQueue.Len() != 0 {
			t.Error("a node delete went through the node queue")
		}
	})
	// A sync may act on a state the node passes through before its change is
	// routed: with A -> B -> A, a sync that saw B may have deleted the pod
	// or counted the node out of its status, so the DaemonSets whose
	// eligibility changed at any step are woken, as upstream's per-event
	// routing would.
	t.Run("coalesced updates wake whoever any step concerned, even when undone", func(t *testing.T) {
		f := newFixture(t, objs)
		mid := n1.DeepCopy()
		mid.ResourceVersion = "2"
		mid.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}
		last := n1.DeepCopy()
		last.ResourceVersion = "3"
		f.c.updateNode(n1, mid)
		f.c.updateNode(mid, last) // back to where it started
		f.addToCache(last)
		f.routeNodes()
		if diff := cmp.Diff([]string{dsKey(agent)}, f.queued()); diff != "" {
			t.Errorf("enqueued (-want +got):\n%s", diff)
		}
	})
	t.Run("coalesced updates that change nobody's eligibility wake nobody", func(t *testing.T) {
		f := newFixture(t, objs)
		mid := n1.DeepCopy()
		mid.ResourceVersion, mid.Labels = "2", map[string]string{"role": "cpu", "zone": "a"}
		last := mid.DeepCopy()
		last.ResourceVersion, last.Labels = "3", map[string]string{"role": "cpu", "zone": "b"}
		f.c.updateNode(n1, mid)
		f.c.updateNode(mid, last)
		f.addToCache(last)
		f.routeNodes()
		if got := f.queued(); len(got) != 0 {
			t.Errorf("enqueued %v for label changes no DaemonSet selects on", got)
		}
	})
	t.Run("a new node tainted before it is routed still wakes those that could run there", func(t *testing.T) {
		f := newFixture(t, objs)
		n2 := newNode("n2", map[string]string{"role": "gpu"})
		tainted := n2.DeepCopy()
		tainted.ResourceVersion = "2"
		tainted.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
		f.c.addNode(n2)
		f.c.updateNode(n2, tainted)
		f.addToCache(tainted)
		f.routeNodes()
		// A sync may have created pods on n2 while it was untainted.
		if diff := cmp.Diff([]string{dsKey(agent), dsKey(gpu), dsKey(tolerant)}, f.queued()); diff != "" {
			t.Errorf("enqueued (-want +got):\n%s", diff)
		}
	})
	t.Run("too many coalesced updates wake every DaemonSet", func(t *testing.T) {
		f := newFixture(t, objs)
		prev := n1
		for i := range maxNodeStatesBetween + 2 {
			cur := n1.DeepCopy()
			cur.ResourceVersion = fmt.Sprint(i + 2)
			cur.Labels["zone"] = fmt.Sprint(i)
			f.c.updateNode(prev, cur)
			prev = cur
		}
		f.addToCache(prev)
		f.routeNodes()
		if diff := cmp.Diff([]string{dsKey(agent), dsKey(gpu), dsKey(tolerant)}, f.queued()); diff != "" {
			t.Errorf("enqueued (-want +got):\n%s", diff)
		}
	})
}

func TestPodEventRouting(t *testing.T) {
	ds := newDaemonSet("agent", func(ds *appsv1.DaemonSet) { ds.Spec.MinReadySeconds = 10 })
	other := newDaemonSet("other")
	owned := newPodFor(ds, "agent-a", "n1")

	t.Run("owned pod add observes the creation", func(t *testing.T) {
		f := newFixture(t, []runtime.Object{ds, other})
		f.c.expectations.ExpectCreates(dsKey(ds), currentHash(ds), []string{"n1"})
		f.c.addPod(owned)
		if !f.c.expectations.Satisfied(dsKey(ds)) {
			t.Error("creation not observed")
		}
		if diff := cmp.Diff([]string{dsKey(ds)}, f.queued()); diff != "" {
			t.Errorf("enqueued (-want +got):\n%s", diff)
		}
	})
	t.Run("orphan add wakes the matching DaemonSets only", func(t *testing.T) {
		f := newFixture(t, []runtime.Object{ds, other})
		f.c.addPod(orphan(owned.DeepCopy()))
		if diff := cmp.Diff([]string{dsKey(ds)}, f.queued()); diff != "" {
			t.Errorf("enqueued (-want +got):\n%s", diff)
		}
	})
	t.Run("pod of an unknown owner is ignored", func(t *testing.T) {
		f := newFixture(t, []runtime.Object{other})
		f.c.addPod(owned)
		if got := f.queued(); len(got) != 0 {
			t.Errorf("enqueued %v", got)
		}
	})
	t.Run("resync update is ignored", func(t *testing.T) {
		f := newFixture(t, []runtime.Object{ds})
		f.c.updatePod(owned, owned)
		if got := f.queued(); len(got) != 0 {
			t.Errorf("enqueued %v", got)
		}
	})
	t.Run("becoming ready enqueues now and after minReadySeconds", func(t *testing.T) {
		f := newFixture(t, []runtime.Object{ds})
		notReady := owned.DeepCopy()
		notReady.Status.Conditions[0].Status = corev1.ConditionFalse
		ready := owned.DeepCopy()
		ready.ResourceVersion = "2"
		f.c.updatePod(notReady, ready)
		if diff := cmp.Diff([]string{dsKey(ds)}, f.queued()); diff != "" {
			t.Errorf("enqueued now (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{dsKey(ds) + " 11s"}, f.delayed.takeAfter()); diff != "" {
			t.Errorf("delayed (-want +got):\n%s", diff)
		}
	})
	// With PodUpdateBatch, a pod's events wait for the batch (the plan
	// counted its creation and deletion while they were in flight); an
	// adoption, which hands a pod over, does not.
	batched := func(c *Config) { c.PodUpdateBatch = 20 * time.Millisecond }
	t.Run("batched: an update wakes the sync after the batch", func(t *testing.T) {
		f := newFixture(t, []runtime.Object{ds}, batched)
		notReady := owned.DeepCopy()
		notReady.Status.Conditions[0].Status = corev1.ConditionFalse
		ready := owned.DeepCopy()
		ready.ResourceVersion = "2"
		f.c.updatePod(notReady, ready)
		if got := f.queued(); len(got) != 0 {
			t.Errorf("enqueued at once: %v", got)
		}
		if diff := cmp.Diff([]string{dsKey(ds) + " 20ms", dsKey(ds) + " 11s"}, f.delayed.takeAfter()); diff != "" {
			t.Errorf("delayed (-want +got):\n%s", diff)
		}
		f.clock.Step(20 * time.Millisecond)
		if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return f.c.queue.Len() == 1, nil
		}); err != nil {
			t.Errorf("not enqueued 20 ms later (queue length %d)", f.c.queue.Len())
		}
	})
	// Each event on its own fixture: the queue holds a key once, so three
	// events on one queue would pass if any one of them woke the DaemonSet.
	terminating := owned.DeepCopy()
	terminating.ResourceVersion = "2"
	terminating.DeletionTimestamp = &metav1.Time{Time: t0}
	adopted := owned.DeepCopy()
	adopted.ResourceVersion = "3"
	for _, tt := range []struct {
		name  string
		event func(c *Controller)
		now   bool // woken at once, else after the batch
	}{
		{"terminating", func(c *Controller) { c.updatePod(owned, terminating) }, false},
		{"deleted", func(c *Controller) { c.deletePod(owned) }, false},
		{"add", func(c *Controller) { c.addPod(owned) }, false},
		{"adoption", func(c *Controller) { c.updatePod(orphan(owned.DeepCopy()), adopted) }, true},
	} {
		t.Run("batched: "+tt.name, func(t *testing.T) {
			f := newFixture(t, []runtime.Object{ds}, batched)
			tt.event(f.c)
			wantNow, wantAfter := []string{dsKey(ds)}, []string(nil)
			if !tt.now {
				wantNow, wantAfter = nil, []string{dsKey(ds) + " 20ms"}
			}
			if diff := cmp.Diff(wantNow, f.queued(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantAfter, f.delayed.takeAfter(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("delayed (-want +got):\n%s", diff)
			}
		})
	}
}

// A DaemonSet whose plans take long waits longer after its pods' events:
// PodUpdateBatchCostFactor times the moving average of its plans' time,
// between PodUpdateBatch and maxPodUpdateBatch.
func TestPodUpdateBatchFollowsPlanCost(t *testing.T) {
	ds := newDaemonSet("agent")
	owned := newPodFor(ds, "agent-a", "n1")
	ms := time.Millisecond
	for _, tt := range []struct {
		name   string
		batch  time.Duration
		factor int
		plans  []time.Duration // plan times noted in order
		want   time.Duration
	}{
		{"no plan yet", 20 * ms, 40, nil, 20 * ms},
		{"cheap plans keep the batch", 20 * ms, 40, []time.Duration{ms / 4}, 20 * ms},
		{"a 2 ms plan stretches it to 80 ms", 20 * ms, 40, []time.Duration{2 * ms}, 80 * ms},
		{"a moving average, weight 1/4", 20 * ms, 40, []time.Duration{2 * ms, 6 * ms}, 120 * ms},
		{"at most maxPodUpdateBatch", 20 * ms, 40, []time.Duration{time.Second}, maxPodUpdateBatch},
		{"factor 0: the batch alone", 20 * ms, 0, []time.Duration{time.Second}, 20 * ms},
		{"batch 0: every event at once", 0, 40, []time.Duration{time.Second}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []runtime.Object{ds}, func(c *Config) {
				c.PodUpdateBatch, c.PodUpdateBatchCostFactor = tt.batch, tt.factor
			})
			for _, d := range tt.plans {
				f.c.notePlanCost(dsKey(ds), d)
			}
			f.c.addPod(owned)
			wantNow, wantAfter := []string(nil), []string{fmt.Sprintf("%s %v", dsKey(ds), tt.want)}
			if tt.want == 0 {
				wantNow, wantAfter = []string{dsKey(ds)}, nil
			}
			if diff := cmp.Diff(wantNow, f.queued(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantAfter, f.delayed.takeAfter(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("delayed (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a DaemonSet that is gone forgets its plans' time", func(t *testing.T) {
		f := newFixture(t, nil, func(c *Config) { c.PodUpdateBatch, c.PodUpdateBatchCostFactor = 20*ms, 40 })
		f.c.notePlanCost(dsKey(ds), 5*ms)
		if err := f.c.syncDaemonSet(context.Background(), dsKey(ds)); err != nil {
			t.Fatal(err)
		}
		if got := f.c.podUpdateBatchOf(dsKey(ds)); got != 20*ms {
			t.Errorf("batch after the DaemonSet is gone = %v, want 20ms", got)
		}
	})
}

func TestDaemonSetDeleteForgetsState(t *testing.T) {
	ds := newDaemonSet("agent")
	f := newFixture(t, []runtime.Object{ds})
	f.c.expectations.ExpectCreates(dsKey(ds), currentHash(ds), []string{"n1", "n2"})
	f.c.deleteDaemonSet(cache.DeletedFinalStateUnknown{Key: dsKey(ds), Obj: ds})
	if !f.c.expectations.Satisfied(dsKey(ds)) {
		t.Error("expectations survived the DaemonSet")
	}
	if diff := cmp.Diff([]string{dsKey(ds)}, f.queued()); diff != "" {
		t.Errorf("enqueued (-want +got):\n%s", diff)
	}
}

// Syncs share one list of the nodes until a node event, a heartbeat
// included, makes the next sync list them again.
func TestNodeListFollowsNodeEvents(t *testing.T) {
	n1 := newNode("n1", nil)
	f := newFixture(t, []runtime.Object{n1})
	store := f.factory.Core().V1().Nodes().Informer().GetIndexer()
	n1 = f.c.nodesOnly()[0]
	listed := func() map[string]*corev1.Node {
		out := map[string]*corev1.Node{}
		for _, n := range f.c.nodesOnly() {
			out[n.Name] = n
		}
		return out
	}
	if first, again := f.c.nodesOnly(), f.c.nodesOnly(); &first[0] != &again[0] {
		t.Error("the nodes were listed again without a node event")
	}

	// The informer updates its store, then calls the handler.
	n2 := newNode("n2", nil)
	if err := store.Add(n2); err != nil {
		t.Fatal(err)
	}
	f.c.addNode(n2)
	if got := listed(); len(got) != 2 || got["n2"] != n2 {
		t.Errorf("after adding n2, listed %v", got)
	}

	beat := n1.DeepCopy()
	beat.ResourceVersion = "2"
	if err := store.Update(beat); err != nil {
		t.Fatal(err)
	}
	f.c.updateNode(n1, beat)
	if got := listed(); got["n1"] != beat {
		t.Error("after a heartbeat the list still holds the node it replaced")
	}

	if err := store.Delete(n2); err != nil {
		t.Fatal(err)
	}
	f.c.deleteNode(n2)
	if got := listed(); len(got) != 1 || got["n1"] != beat {
		t.Errorf("after deleting n2, listed %v", got)
	}
}

// An update that can change only the status of an Idle DaemonSet (a pod
// becoming ready when every node runs a current pod) waits until the status
// may be written again; any other update, or an update of a DaemonSet with
// work left, waits for the batch only.
func TestPodStatusOnlyUpdateWaitsForStatusWrite(t *testing.T) {
	ds := newDaemonSet("agent")
	owned := newPodFor(ds, "agent-n1", "n1")
	notReady := owned.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	ready := func(mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := owned.DeepCopy()
		p.ResourceVersion = "2"
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	config := func(c *Config) {
		c.PodUpdateBatch = 20 * time.Millisecond
		c.StatusInterval = time.Second
	}
	tests := []struct {
		name string
		// nodes beyond n1: n2 has no pod, so the sync creates one
		extraNode bool
		cur       *corev1.Pod
		want      string
	}{
		{name: "becoming ready", cur: ready(), want: "700ms"},
		{name: "bound to its pinned node", cur: ready(func(p *corev1.Pod) { p.Spec.NodeName = "n1" }), want: "700ms"},
		{name: "new labels", cur: ready(func(p *corev1.Pod) { p.Labels["extra"] = "x" }), want: "20ms"},
		{name: "failed", cur: ready(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), want: "20ms"},
		{name: "DaemonSet with a node to fill", extraNode: true, cur: ready(), want: "20ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil), notReady}
			if tt.extraNode {
				objs = append(objs, newNode("n2", nil))
			}
			f := newFixture(t, objs, config)
			if err := f.sync(dsKey(ds)); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got := summarize(filterActions(f.actions(), "update daemonsets/status")); len(got) != 1 {
				t.Fatalf("the first sync wrote status %d times, want once", len(got))
			}
			f.delayed.takeAfter()
			f.clock.Step(300 * time.Millisecond)
			f.c.updatePod(notReady, tt.cur)
			if got := f.queued(); len(got) != 0 {
				t.Errorf("enqueued at once: %v", got)
			}
			if diff := cmp.Diff([]string{dsKey(ds) + " " + tt.want}, f.delayed.takeAfter()); diff != "" {
				t.Errorf("delayed (-want +got):\n%s", diff)
			}
		})
	}
}

// A sync that stops before it plans (here: the new template's
// ControllerRevision cannot be created) leaves the DaemonSet not idle, so
// readiness updates go back to the batch.
func TestSyncStoppedEarlyIsNotIdle(t *testing.T) {
	ds := newDaemonSet("agent")
	owned := newPodFor(ds, "agent-n1", "n1")
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil), owned}, func(c *Config) {
		c.PodUpdateBatch = 20 * time.Millisecond
		c.StatusInterval = time.Second
	})
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if !f.c.isIdle(dsKey(ds)) {
		t.Fatal("a DaemonSet whose only node runs its current pod is not idle")
	}
	updated := ds.DeepCopy()
	updated.Generation = 2
	updated.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.11"
	f.addToCache(updated)
	f.client.PrependReactor("create", "controllerrevisions", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is sad")
	})
	if err := f.sync(dsKey(ds)); err == nil {
		t.Fatal("sync succeeded without its ControllerRevision")
	}
	if f.c.isIdle(dsKey(ds)) {
		t.Error("still idle after a sync that stopped before planning")
	}
}
