package controller

import (
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/dsbench/dsbench/controller/plan"
)

// controllerKind is the GroupVersionKind of our ControllerRefs.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// tombstone unwraps a DeletedFinalStateUnknown; it returns nil if obj is
// not a T.
func tombstone[T any](obj any) *T {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	t, _ := obj.(*T)
	return t
}

func (c *Controller) addDaemonSet(obj any) {
	ds, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return
	}
	c.logger.V(4).Info("Adding DaemonSet", "daemonset", klog.KObj(ds))
	c.enqueue(ds)
}

func (c *Controller) updateDaemonSet(oldObj, curObj any) {
	old, ok1 := oldObj.(*appsv1.DaemonSet)
	cur, ok2 := curObj.(*appsv1.DaemonSet)
	if !ok1 || !ok2 {
		return
	}
	if old.UID != cur.UID {
		// Deleted and re-created between two events: forget the old one.
		c.deleteDaemonSet(cache.DeletedFinalStateUnknown{Key: cur.Namespace + "/" + cur.Name, Obj: old})
	}
	c.logger.V(4).Info("Updating DaemonSet", "daemonset", klog.KObj(cur))
	c.enqueue(cur)
}

func (c *Controller) deleteDaemonSet(obj any) {
	ds := tombstone[appsv1.DaemonSet](obj)
	if ds == nil {
		return
	}
	c.logger.V(4).Info("Deleting DaemonSet", "daemonset", klog.KObj(ds))
	key := ds.Namespace + "/" + ds.Name
	// A new DaemonSet of the same name must not inherit our state.
	c.expectations.Delete(key)
	c.forgetBackoff(key)
	c.forgetSlowStart(key)
	c.forgetWrites(key)
	c.forgetPodMemo(key)
	c.revisionDataMu.Lock()
	delete(c.revisionDataOf, ds.UID)
	c.revisionDataMu.Unlock()
	c.queue.Add(key)
}

// resolveControllerRef returns the DaemonSet a ControllerRef points to, or
// nil if it is of another kind or no longer exists with that UID.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.DaemonSet {
	// The UID check below is what matters; Kind only saves a lookup.
	if ref == nil || ref.Kind != controllerKind.Kind {
		return nil
	}
	ds, err := c.dsLister.DaemonSets(namespace).Get(ref.Name)
	if err != nil || ds.UID != ref.UID {
		return nil
	}
	return ds
}

func (c *Controller) daemonSetsForPod(pod *corev1.Pod) []*appsv1.DaemonSet {
	sets, err := c.dsLister.GetPodDaemonSets(pod)
	if err != nil {
		return nil
	}
	return sets
}

func (c *Controller) addRevision(obj any) {
	cr, ok := obj.(*appsv1.ControllerRevision)
	if !ok {
		return
	}
	if cr.DeletionTimestamp != nil {
		c.deleteRevision(cr)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(cr); ref != nil {
		if ds := c.resolveControllerRef(cr.Namespace, ref); ds != nil {
			c.enqueue(ds)
		}
		return
	}
	// An orphan: wake every DaemonSet that may adopt it.
	sets, err := c.dsLister.GetHistoryDaemonSets(cr)
	if err != nil {
		return
	}
	for _, ds := range sets {
		c.enqueue(ds)
	}
}

func (c *Controller) updateRevision(oldObj, curObj any) {
	old, ok1 := oldObj.(*appsv1.ControllerRevision)
	cur, ok2 := curObj.(*appsv1.ControllerRevision)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !apiequality.Semantic.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if ds := c.resolveControllerRef(old.Namespace, oldRef); ds != nil {
			c.enqueue(ds)
		}
	}
	if curRef != nil {
		if ds := c.resolveControllerRef(cur.Namespace, curRef); ds != nil {
			c.enqueue(ds)
		}
		return
	}
	if refChanged || !apiequality.Semantic.DeepEqual(old.Labels, cur.Labels) {
		if sets, err := c.dsLister.GetHistoryDaemonSets(cur); err == nil {
			for _, ds := range sets {
				c.enqueue(ds)
			}
		}
	}
}

func (c *Controller) deleteRevision(obj any) {
	cr := tombstone[appsv1.ControllerRevision](obj)
	if cr == nil {
		return
	}
	if ds := c.resolveControllerRef(cr.Namespace, metav1.GetControllerOfNoCopy(cr)); ds != nil {
		c.enqueue(ds)
	}
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

func (c *Controller) addPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen for the first time already terminating (e.g. after a
		// restart): that is a deletion, not a creation to observe.
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		ds := c.resolveControllerRef(pod.Namespace, ref)
		if ds == nil {
			return
		}
		c.logger.V(4).Info("Pod added", "pod", klog.KObj(pod), "daemonset", klog.KObj(ds))
		if node, ok := plan.TargetNodeName(pod); ok {
			c.expectations.CreationObserved(ds.Namespace+"/"+ds.Name, node)
		}
		// The plan counted it while in flight: only the status changes.
		c.enqueuePodUpdate(ds)
		return
	}
	// An orphan: never a creation we wait for, but someone may adopt it.
	for _, ds := range c.daemonSetsForPod(pod) {
		c.enqueue(ds)
	}
}

func (c *Controller) updatePod(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		// Graceful deletion has begun: count the deletion now, so that a
		// replacement is not held back for the grace period.
		c.deletePod(cur)
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !apiequality.Semantic.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if ds := c.resolveControllerRef(old.Namespace, oldRef); ds != nil {
			c.enqueue(ds)
		}
	}
	if curRef != nil {
		ds := c.resolveControllerRef(cur.Namespace, curRef)
		if ds == nil {
			return
		}
		key := ds.Namespace + "/" + ds.Name
		switch {
		case refChanged:
			c.enqueue(ds) // adopted: at once, as a create would
		case statusOnlyUpdate(old, cur) && c.isIdle(key):
			c.enqueueStatusUpdate(key)
		default:
			c.enqueuePodUpdate(ds)
		}
		// Availability is reached minReadySeconds after readiness, and no
		// event marks that moment; +1s absorbs clock skew as upstream.
		if !plan.IsPodReady(old) && plan.IsPodReady(cur) && ds.Spec.MinReadySeconds > 0 {
			c.enqueueAfter(ds, time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if refChanged || !apiequality.Semantic.DeepEqual(old.Labels, cur.Labels) {
		for _, ds := range c.daemonSetsForPod(cur) {
			c.enqueue(ds)
		}
	}
}

// statusOnlyUpdate says whether a pod update that keeps its owner and is not
// a deletion leaves everything but readiness as the planner reads it: the
// labels (the template hash), the node it is for (a binding to its pinned
// node keeps it), and a phase that is not terminal (a Failed pod is
// replaced). Of an Idle DaemonSet, such an update changes only the status.
func statusOnlyUpdate(old, cur *corev1.Pod) bool {
	if cur.Status.Phase == corev1.PodFailed || cur.Status.Phase == corev1.PodSucceeded || !maps.Equal(old.Labels, cur.Labels) {
		return false
	}
	oldNode, oldOK := plan.TargetNodeName(old)
	curNode, curOK := plan.TargetNodeName(cur)
	return oldOK == curOK && oldNode == curNode
}

func (c *Controller) deletePod(obj any) {
	pod := tombstone[corev1.Pod](obj)
	if pod == nil {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	ds := c.resolveControllerRef(pod.Namespace, ref)
	if ds == nil {
		if ref != nil && ref.Kind == controllerKind.Kind {
			// The garbage collector deleting a pod of a deleted DaemonSet:
			// a new one that selects it may be holding its node for it
			// (staleOwnerOn).
			for _, ds := range c.daemonSetsForPod(pod) {
				c.enqueue(ds)
			}
		}
		return
	}
	c.logger.V(4).Info("Pod deleted", "pod", klog.KObj(pod), "daemonset", klog.KObj(ds))
	c.expectations.DeletionObserved(ds.Namespace+"/"+ds.Name, podKey(pod))
	// Within the batch, not at once: while a rollout's pods go by the
	// hundred a second, the ones that finish in a batch share one sync.
	c.enqueuePodUpdate(ds)
}
