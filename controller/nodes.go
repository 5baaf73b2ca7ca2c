package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/dsbench/dsbench/controller/plan"
)

// Node events are routed in two steps so that the informer goroutine never
// does O(#DS) work (upstream #121474):
//
//  1. The handler drops updates that change nothing eligibility depends on
//     (labels, taints; the name is immutable), which removes every
//     heartbeat and status-only update at the cost of two small compares.
//     For the rest it remembers the node as it was before the first
//     unprocessed event, and each state it passed through since, and adds
//     the node name to nodeQueue.
//  2. A node worker evaluates the predicates of every DaemonSet on that one
//     node, state after state, and enqueues only the DaemonSets whose
//     eligibility changed at some step.
//
// Deletes are cheap and handled inline: the DaemonSets with a pod on the
// node, found through the pod node index, are enqueued, so that their status
// stops counting the node at once and unbound pods pinned to it are deleted.
// Bound pods are left to the pod GC, as upstream (see plan.Compute).

// nodeChange is what a node worker compares the current node against.
type nodeChange struct {
	added bool         // the node is new to the controller: compare against "no node"
	old   *corev1.Node // the node before the first unprocessed update (read-only cache object)
	// between are the node's states between old and the one routed, one per
	// coalesced update (read-only cache objects). A sync may have acted on
	// any of them: with A -> B -> A, a sync that saw B deleted the pod, and
	// comparing A with A alone would wake nobody to create it again.
	between []*corev1.Node
	// overflow: more than maxNodeStatesBetween states were coalesced, and
	// the node wakes every DaemonSet.
	overflow bool
}

// maxNodeStatesBetween bounds what one pending node change keeps.
const maxNodeStatesBetween = 8

// coalesce records one more update of a node whose change is still pending:
// prev is the state that update replaced.
func (ch nodeChange) coalesce(prev *corev1.Node) nodeChange {
	if len(ch.between) >= maxNodeStatesBetween {
		ch.overflow = true
		return ch
	}
	ch.between = append(ch.between, prev)
	return ch
}

func (c *Controller) addNode(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	c.nodesVersion.Add(1)
	c.nodeMu.Lock()
	c.pendingNodes[node.Name] = nodeChange{added: true}
	c.nodeMu.Unlock()
	c.nodeQueue.Add(node.Name)
}

func (c *Controller) updateNode(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Node)
	cur, ok2 := curObj.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	// Also for a heartbeat: the shared node list holds no object the
	// cache has replaced.
	c.nodesVersion.Add(1)
	if !eligibilityInputsChanged(old, cur) {
		return
	}
	c.nodeMu.Lock()
	if change, pending := c.pendingNodes[cur.Name]; pending {
		c.pendingNodes[cur.Name] = change.coalesce(old)
	} else {
		c.pendingNodes[cur.Name] = nodeChange{old: old}
	}
	c.nodeMu.Unlock()
	c.nodeQueue.Add(cur.Name)
}

// eligibilityInputsChanged reports whether anything NodeShouldRunDaemonPod
// reads differs: labels (nodeSelector, node affinity) and taints. Taints are
// compared without TimeAdded, which the node lifecycle controller rewrites
// and no toleration reads.
func eligibilityInputsChanged(old, cur *corev1.Node) bool {
	if old.Name != cur.Name || !maps.Equal(old.Labels, cur.Labels) {
		return true
	}
	return !slices.EqualFunc(old.Spec.Taints, cur.Spec.Taints, func(a, b corev1.Taint) bool {
		return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
	})
}

func (c *Controller) deleteNode(obj any) {
	node := tombstone[corev1.Node](obj)
	if node == nil {
		return
	}
	c.nodesVersion.Add(1)
	c.nodeMu.Lock()
	delete(c.pendingNodes, node.Name)
	c.nodeMu.Unlock()
	for _, ds := range c.daemonSetsWithPodsOn(node.Name) {
		c.logger.V(4).Info("Node deleted, syncing DaemonSet with a pod on it", "node", klog.KObj(node), "daemonset", klog.KObj(ds))
		c.enqueue(ds)
	}
}

// daemonSetsWithPodsOn resolves the owners of the pods on (or pinned to) a
// node through the pod node index.
func (c *Controller) daemonSetsWithPodsOn(nodeName string) []*appsv1.DaemonSet {
	objs, err := c.podIndexer.ByIndex(podByNodeIndex, nodeName)
	if err != nil {
		return nil
	}
	seen := map[types.UID]bool{}
	var out []*appsv1.DaemonSet
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || ref.Kind != controllerKind.Kind || seen[ref.UID] {
			continue
		}
		seen[ref.UID] = true
		if ds := c.resolveControllerRef(pod.Namespace, ref); ds != nil {
			out = append(out, ds)
		}
	}
	return out
}

// processNextNodeEvent routes one node's pending change; false means the
// queue is shut down.
func (c *Controller) processNextNodeEvent(ctx context.Context) bool {
	name, quit := c.nodeQueue.Get()
	if quit {
		return false
	}
	defer c.nodeQueue.Done(name)
	if err := c.routeNodeChange(name); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Routing node event failed, requeueing with backoff", "node", name)
		c.nodeQueue.AddRateLimited(name)
		return true
	}
	c.nodeQueue.Forget(name)
	return true
}

// routeNodeChange enqueues the DaemonSets affected by the pending change of
// one node: O(#DS) predicate evaluations on this node only.
func (c *Controller) routeNodeChange(name string) error {
	c.nodeMu.Lock()
	change, ok := c.pendingNodes[name]
	delete(c.pendingNodes, name)
	c.nodeMu.Unlock()
	if !ok {
		// Already routed by an earlier pass (the queue re-adds a key that
		// was added while it was being processed).
		return nil
	}
	node, err := c.nodeLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil // deleteNode has done the routing
	}
	if err != nil {
		return fmt.Errorf("getting node %s from cache: %w", name, err)
	}
	sets, err := c.dsLister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing DaemonSets from cache: %w", err)
	}
	for _, ds := range c.affectedDaemonSets(node, change, sets) {
		c.logger.V(4).Info("Node changed, syncing affected DaemonSet", "node", klog.KObj(node), "daemonset", klog.KObj(ds))
		c.enqueue(ds)
	}
	return nil
}

// affectedDaemonSets picks the DaemonSets a node change concerns: those whose
// (shouldRun, shouldContinueRunning) on the node changed, as upstream, from
// one state to the next of every state the change went through (a sync may
// have acted on any of them). For a new node the first comparison is with
// "no node": any DaemonSet that should run there or already has a pod there
// (a node re-created under its name). A DaemonSet whose eligibility never
// changed needs no sync: neither its plan nor its status can differ, and a
// pod missing or left over there is already its own sync's business.
func (c *Controller) affectedDaemonSets(node *corev1.Node, change nodeChange, sets []*appsv1.DaemonSet) []*appsv1.DaemonSet {
	var hasPod map[types.UID]bool
	if change.added {
		hasPod = c.daemonSetUIDsWithPodsOn(node.Name)
	}
	states := append(slices.Clone(change.between), node)
	var out []*appsv1.DaemonSet
	for _, ds := range sets {
		if ds.DeletionTimestamp != nil {
			continue
		}
		if change.overflow || eligibilityChanged(plan.NewEligibility(ds), change, states, hasPod[ds.UID]) {
			out = append(out, ds)
		}
	}
	return out
}

// eligibilityChanged says whether elig's verdict differs between any two
// consecutive states of a node change (states: those after change.old, the
// current one last).
func eligibilityChanged(elig plan.Eligibility, change nodeChange, states []*corev1.Node, hasPod bool) bool {
	var prevRun, prevCont bool
	if change.added {
		// Compared with "no node". A new node's not-ready:NoSchedule
		// taint makes run false, so node creation bursts wake nobody
		// until the node is ready.
		run, cont := elig.Check(states[0])
		if run || hasPod {
			return true
		}
		prevRun, prevCont, states = run, cont, states[1:]
	} else {
		prevRun, prevCont = elig.Check(change.old)
	}
	for _, s := range states {
		run, cont := elig.Check(s)
		if run != prevRun || cont != prevCont {
			return true
		}
		prevRun, prevCont = run, cont
	}
	return false
}

// daemonSetUIDsWithPodsOn returns the controller UIDs of the pods on (or
// pinned to) a node that are not being deleted.
func (c *Controller) daemonSetUIDsWithPodsOn(nodeName string) map[types.UID]bool {
	hasPod := map[types.UID]bool{}
	if objs, err := c.podIndexer.ByIndex(podByNodeIndex, nodeName); err == nil {
		for _, obj := range objs {
			pod := obj.(*corev1.Pod)
			if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && pod.DeletionTimestamp == nil {
				hasPod[ref.UID] = true
			}
		}
	}
	return hasPod
}
