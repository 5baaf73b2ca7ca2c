package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeStatus stores want as the DaemonSet's status if it differs from what
// the cache holds. On a conflict it re-reads the DaemonSet and retries with
// the fresh object's conditions and collisionCount, which others may have
// written, and our computed counters.
func (c *Controller) writeStatus(ctx context.Context, ds *appsv1.DaemonSet, want appsv1.DaemonSetStatus) error {
	if apiequality.Semantic.DeepEqual(ds.Status, want) {
		return nil
	}
	client := c.client.AppsV1().DaemonSets(ds.Namespace)
	toUpdate := ds.DeepCopy()
	toUpdate.Status = *want.DeepCopy() // want may share slices with the cache
	for attempt := 0; ; attempt++ {
		_, err := client.UpdateStatus(ctx, toUpdate, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= statusUpdateRetries {
			return fmt.Errorf("updating status of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
		}
		fresh, err := client.Get(ctx, ds.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("re-reading DaemonSet %s/%s after a status conflict: %w", ds.Namespace, ds.Name, err)
		}
		if fresh.UID != ds.UID {
			return nil // replaced: its own sync will write its status
		}
		merged := mergeStatus(fresh.Status, want)
		if apiequality.Semantic.DeepEqual(fresh.Status, merged) {
			return nil
		}
		toUpdate = fresh
		toUpdate.Status = merged
	}
}

// mergeStatus is want with the fields the controller does not own taken
// from fresh: conditions, and a collisionCount that may only grow.
func mergeStatus(fresh, want appsv1.DaemonSetStatus) appsv1.DaemonSetStatus {
	out := want
	out.Conditions = fresh.Conditions
	if fresh.CollisionCount != nil && (want.CollisionCount == nil || *fresh.CollisionCount > *want.CollisionCount) {
		cc := *fresh.CollisionCount
		out.CollisionCount = &cc
	}
	return out
}
