package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/dsbench/dsbench/controller/plan"
)

// claimer adopts orphans that match a DaemonSet's selector and releases
// owned objects that no longer match, as upstream's ControllerRefManager.
// Before the first adoption of a sync it re-reads the DaemonSet from the API
// server (a quorum read), so that a DaemonSet deleted since the cache saw it
// never adopts anything (upstream #42639).
type claimer struct {
	c        *Controller
	ds       *appsv1.DaemonSet
	selector labels.Selector
	// matchLabels is the selector when it has matchLabels only (the usual
	// one), which matches compares directly: labels.Selector goes through
	// an interface per requirement, a fifth slower for every pod of every
	// sync.
	matchLabels []labelPair
	onlyLabels  bool

	once     sync.Once
	adoptErr error
	// adopted holds the pods this sync adopted: the cache still files them
	// as orphans until our patch comes back.
	adopted map[types.UID]bool
}

type labelPair struct{ key, value string }

// newClaimer returns a claimer of ds, whose selector is selector.
func newClaimer(c *Controller, ds *appsv1.DaemonSet, selector labels.Selector) *claimer {
	m := &claimer{c: c, ds: ds, selector: selector}
	if sel := ds.Spec.Selector; sel != nil && len(sel.MatchExpressions) == 0 {
		m.onlyLabels = true
		for k, v := range sel.MatchLabels {
			m.matchLabels = append(m.matchLabels, labelPair{k, v})
		}
	}
	return m
}

// matches is m.selector.Matches(obj's labels).
func (m *claimer) matches(obj metav1.Object) bool {
	if !m.onlyLabels {
		return m.selector.Matches(labels.Set(obj.GetLabels()))
	}
	ls := obj.GetLabels()
	for _, l := range m.matchLabels {
		if v, ok := ls[l.key]; !ok || v != l.value {
			return false
		}
	}
	return true
}

func (m *claimer) canAdopt(ctx context.Context) error {
	m.once.Do(func() {
		fresh, err := m.c.client.AppsV1().DaemonSets(m.ds.Namespace).Get(ctx, m.ds.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			m.adoptErr = fmt.Errorf("rechecking DaemonSet %s/%s before adoption: %w", m.ds.Namespace, m.ds.Name, err)
		case fresh.UID != m.ds.UID:
			m.adoptErr = fmt.Errorf("rechecking DaemonSet %s/%s before adoption: it was replaced (uid %s, want %s)", m.ds.Namespace, m.ds.Name, fresh.UID, m.ds.UID)
		case fresh.DeletionTimestamp != nil:
			m.adoptErr = fmt.Errorf("rechecking DaemonSet %s/%s before adoption: it is being deleted", m.ds.Namespace, m.ds.Name)
		}
	})
	return m.adoptErr
}

// claimAction is what claim decided for one object.
type claimAction int

const (
	claimIgnore  claimAction = iota // not ours and not adoptable
	claimOwned                      // ours and matching: nothing to do
	claimAdopt                      // an orphan to adopt
	claimRelease                    // ours but no longer matching
)

// classify decides what to do with obj without doing it.
func (m *claimer) classify(obj metav1.Object) claimAction {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID != m.ds.UID {
			return claimIgnore
		}
		return m.classifyControlled(obj)
	}
	if m.ds.DeletionTimestamp != nil || obj.GetDeletionTimestamp() != nil || obj.GetNamespace() != m.ds.Namespace ||
		!m.matches(obj) {
		return claimIgnore
	}
	return claimAdopt
}

// classifyControlled is classify for an object whose ControllerRef is
// known to point to the DaemonSet's UID.
func (m *claimer) classifyControlled(obj metav1.Object) claimAction {
	return m.classifyControlledMatching(m.matches(obj))
}

// classifyControlledMatching is classifyControlled for an object whose
// labels match the selector or not.
func (m *claimer) classifyControlledMatching(matches bool) claimAction {
	switch {
	case matches:
		return claimOwned
	case m.ds.DeletionTimestamp != nil:
		return claimIgnore // never release while being deleted
	default:
		return claimRelease
	}
}

// adoptPatch sets us as the controller; metadata.uid makes the patch fail
// if the object was replaced by another of the same name.
func adoptPatch(ds *appsv1.DaemonSet, uid types.UID) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"uid":             uid,
			"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
	})
}

// releasePatch removes our ownerReference (strategic merge by uid).
func releasePatch(ds *appsv1.DaemonSet, uid types.UID) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"uid":             uid,
			"ownerReferences": []map[string]string{{"$patch": "delete", "uid": string(ds.UID)}},
		},
	})
}

// claimPods appends to pods the pods the DaemonSet controls after adopting
// and releasing, and to facts their plan.PodFacts; it reads only the
// DaemonSet's own pods and the orphans of its namespace from the index, and
// what it read of its own pods before from memo. On error the caller must
// not act on the result: a pod it failed to adopt would look like a missing
// pod. The claimer it returns says which orphans arrived after the claim
// (orphanArrivedOn).
func (c *Controller) claimPods(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector, memo *podMemo, pods []*corev1.Pod, facts []plan.PodFacts) ([]*corev1.Pod, []plan.PodFacts, *claimer, error) {
	owned, err := c.podIndexer.ByIndex(podByOwnerIndex, ownerIndexKey(ds.Namespace, ds.UID))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing pods of DaemonSet from cache: %w", err)
	}
	orphans, err := c.podIndexer.ByIndex(podByOwnerIndex, orphanIndexKey(ds.Namespace))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing orphan pods from cache: %w", err)
	}
	m := newClaimer(c, ds, selector)
	pods = slices.Grow(pods, len(owned))
	facts = slices.Grow(facts, len(owned))
	var errs []error
	matches := func(pod *corev1.Pod) bool { return m.matches(pod) }
	for _, obj := range owned {
		// The owner index filed it under our UID: its ControllerRef is
		// ours, and reading it again costs a cache miss per pod.
		pod := obj.(*corev1.Pod)
		e := memo.entry(pod, matches)
		keep, err := m.claimPod(ctx, pod, m.classifyControlledMatching(e.matches))
		if keep {
			pods = append(pods, pod)
			facts = append(facts, e.facts)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, obj := range orphans {
		pod := obj.(*corev1.Pod)
		keep, err := m.claimPod(ctx, pod, m.classify(pod))
		if keep {
			pods = append(pods, pod)
			facts = append(facts, plan.ReadPodFacts(pod))
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return pods, facts, m, errors.Join(errs...)
}

// orphanArrivedOn says whether the cache now holds, on or pinned to node, an
// orphan the DaemonSet would adopt that it did not adopt in this sync. Its
// pods were read before the adoptions, which take a request each (16 s for
// 1000 orphans under load); the orphans the garbage collector released
// meanwhile (a DaemonSet deleted with cascade orphan and created again)
// arrive in the cache during them. A pod created beside one is a second
// daemon on that node until the next sync deletes one of the two.
func (m *claimer) orphanArrivedOn(node string) bool {
	objs, err := m.c.podIndexer.ByIndex(podByNodeIndex, node)
	if err != nil {
		return false
	}
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		// skipAdoption last: the no-adoption mutant records it as its first
		// wrong action, which only an adoptable orphan is.
		if !m.adopted[pod.UID] && metav1.GetControllerOfNoCopy(pod) == nil && m.classify(pod) == claimAdopt && !skipAdoption(pod) {
			return true
		}
	}
	return false
}

// staleOwnerHold bounds how long after its creation a DaemonSet waits for
// the cache to show the release or deletion of a matching pod whose
// controller, a DaemonSet, is gone (staleOwnerOn). It is a little more than
// the lag of the pod watch behind the DaemonSet watch; after it the
// DaemonSet creates beside such a pod, as upstream does at once (the
// garbage collector may not be running at all).
const staleOwnerHold = 5 * time.Second

// staleOwnerOn says whether the cache holds, on or pinned to node, an active
// pod of the DaemonSet's namespace that its selector matches and whose
// controller is a DaemonSet that is no longer in the cache (or is being
// deleted with its pods orphaned), while the DaemonSet is younger than
// staleOwnerHold. Such a pod is, in etcd, most likely already released to
// be adopted by us: a DaemonSet deleted with cascade orphan is gone only
// after the garbage collector released every pod, and its successor of the
// same name can only be created after that. Until the pod watch shows the
// release, a pod created beside it is a second daemon on the node
// (upstream created 164 of them in one run of many-daemonsets at 1000
// nodes). The second result is how long the hold may still last.
func (m *claimer) staleOwnerOn(node string, now time.Time) (bool, time.Duration) {
	left := staleOwnerHold - now.Sub(m.ds.CreationTimestamp.Time)
	if left <= 0 || left > staleOwnerHold+time.Minute {
		// Too old, or created "in the future" by more than clock skew
		// explains: no hold.
		return false, 0
	}
	objs, err := m.c.podIndexer.ByIndex(podByNodeIndex, node)
	if err != nil {
		return false, 0
	}
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || ref.UID == m.ds.UID || ref.Kind != controllerKind.Kind || !isAppsGroup(ref.APIVersion) ||
			pod.Namespace != m.ds.Namespace || pod.DeletionTimestamp != nil ||
			pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded || !m.matches(pod) {
			continue
		}
		owner := m.c.resolveControllerRef(pod.Namespace, ref)
		if owner == nil || (owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerOrphanDependents)) {
			return true, min(left, staleOwnerHold)
		}
	}
	return false, 0
}

// isAppsGroup says whether apiVersion is of the apps group (any version).
func isAppsGroup(apiVersion string) bool {
	group, _, found := strings.Cut(apiVersion, "/")
	return found && group == appsv1.GroupName
}

// claimPod carries out action on pod; keep says whether the DaemonSet
// controls the pod afterwards.
func (m *claimer) claimPod(ctx context.Context, pod *corev1.Pod, action claimAction) (keep bool, err error) {
	c, ds := m.c, m.ds
	switch action {
	case claimOwned:
		return true, nil
	case claimAdopt:
		if skipAdoption(pod) {
			return false, nil
		}
		if err := m.canAdopt(ctx); err != nil {
			return false, err
		}
		patch, err := adoptPatch(ds, pod.UID)
		if err == nil {
			_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		}
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			c.metrics.podErrors.WithLabelValues("patch").Inc()
			return false, fmt.Errorf("adopting pod %s: %w", podKey(pod), err)
		}
		c.logger.V(2).Info("Adopted orphan pod", "pod", klog.KObj(pod), "daemonset", klog.KObj(ds))
		if m.adopted == nil {
			m.adopted = map[types.UID]bool{}
		}
		m.adopted[pod.UID] = true
		return true, nil
	case claimRelease:
		patch, err := releasePatch(ds, pod.UID)
		if err == nil {
			_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		}
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsInvalid(err):
			// Gone, or already released / replaced: nothing to do.
		case err != nil:
			c.metrics.podErrors.WithLabelValues("patch").Inc()
			return false, fmt.Errorf("releasing pod %s: %w", podKey(pod), err)
		default:
			c.logger.V(2).Info("Released pod that no longer matches the selector", "pod", klog.KObj(pod), "daemonset", klog.KObj(ds))
		}
	}
	return false, nil
}

// claimRevisions is claimPods for ControllerRevisions. All revisions of the
// namespace are read, so that an owned revision whose labels no longer
// match is released.
func (c *Controller) claimRevisions(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	all, err := c.crLister.ControllerRevisions(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions from cache: %w", err)
	}
	m := newClaimer(c, ds, selector)
	var out []*appsv1.ControllerRevision
	var errs []error
	for _, cr := range all {
		switch m.classify(cr) {
		case claimOwned:
			out = append(out, cr)
		case claimAdopt:
			if err := m.canAdopt(ctx); err != nil {
				errs = append(errs, err)
				continue
			}
			patch, err := adoptPatch(ds, cr.UID)
			if err == nil {
				_, err = c.client.AppsV1().ControllerRevisions(cr.Namespace).Patch(ctx, cr.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			}
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				errs = append(errs, fmt.Errorf("adopting ControllerRevision %s/%s: %w", cr.Namespace, cr.Name, err))
			default:
				out = append(out, cr)
			}
		case claimRelease:
			patch, err := releasePatch(ds, cr.UID)
			if err == nil {
				_, err = c.client.AppsV1().ControllerRevisions(cr.Namespace).Patch(ctx, cr.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
				errs = append(errs, fmt.Errorf("releasing ControllerRevision %s/%s: %w", cr.Namespace, cr.Name, err))
			}
		}
	}
	return out, errors.Join(errs...)
}
