package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writtenStatus is the object our last status write returned, and the
// versions of the DaemonSet older than it that the cache may still hold: for
// each of our writes since the cache last caught up, the cached version it
// was computed from, the version it went over and the one it made.
type writtenStatus struct {
	obj   *appsv1.DaemonSet
	older []string
}

// statusBase is what the next status write of key goes over: the object our
// last write returned while the cache still holds a version older than it,
// else the cached object. Syncs follow each other faster than the informer
// delivers our own writes; from the cache alone every such write would
// conflict (a PUT, a GET and a PUT) or repeat a status already stored.
func (c *Controller) statusBase(key string, cached *appsv1.DaemonSet) *appsv1.DaemonSet {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	w, ok := c.writtenStatus[key]
	if ok && w.obj.UID == cached.UID && slices.Contains(w.older, cached.ResourceVersion) {
		return w.obj
	}
	delete(c.writtenStatus, key)
	return cached
}

// maxOlderVersions bounds writtenStatus.older: an informer that lags this
// many of our writes is better trusted than outrun.
const maxOlderVersions = 8

// rememberStatus records written, which a write over the version over
// returned while the cache held cached. An entry still there is one that
// statusBase kept for this sync, so its versions are older too.
func (c *Controller) rememberStatus(key, cached, over string, written *appsv1.DaemonSet) {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	if written.ResourceVersion == "" { // a client that reports no versions
		delete(c.writtenStatus, key)
		return
	}
	var older []string
	if prev, ok := c.writtenStatus[key]; ok && len(prev.older) < maxOlderVersions {
		older = append(slices.Clone(prev.older), prev.obj.ResourceVersion)
	}
	for _, v := range []string{cached, over} {
		if !slices.Contains(older, v) {
			older = append(older, v)
		}
	}
	written.ManagedFields = nil // as in the cache (trimObject): the next write leaves them to the server
	c.writtenStatus[key] = writtenStatus{obj: written, older: older}
}

func (c *Controller) forgetStatus(key string) {
	c.statusMu.Lock()
	delete(c.writtenStatus, key)
	delete(c.statusWritten, key)
	delete(c.idle, key)
	delete(c.planCost, key)
	c.statusMu.Unlock()
}

// statusWait is how long the status write of want over base must wait for
// StatusInterval to pass since our last write of key's status; 0: now.
func (c *Controller) statusWait(key string, base appsv1.DaemonSetStatus, want appsv1.DaemonSetStatus) time.Duration {
	if want.ObservedGeneration != base.ObservedGeneration {
		return 0
	}
	return c.statusWritableIn(key)
}

// statusWritableIn is how long until StatusInterval has passed since our
// last write of key's status; 0: now.
func (c *Controller) statusWritableIn(key string) time.Duration {
	if c.statusInterval <= 0 {
		return 0
	}
	c.statusMu.Lock()
	last, ok := c.statusWritten[key]
	c.statusMu.Unlock()
	if !ok {
		return 0
	}
	return max(0, c.statusInterval-c.clock.Since(last))
}

func (c *Controller) noteStatusWritten(key string) {
	c.statusMu.Lock()
	c.statusWritten[key] = c.clock.Now()
	c.statusMu.Unlock()
}

// writeStatus stores want as the DaemonSet's status if it differs from the
// latest status we know (statusBase). On a conflict it re-reads the
// DaemonSet and retries with the fresh object's conditions and
// collisionCount, which others may have written, and our computed counters.
func (c *Controller) writeStatus(ctx context.Context, ds *appsv1.DaemonSet, want appsv1.DaemonSetStatus) error {
	key := ds.Namespace + "/" + ds.Name
	base := c.statusBase(key, ds)
	// A sync with outstanding expectations keeps the cached status's
	// observedGeneration, which may be older than what we wrote since.
	want.ObservedGeneration = max(want.ObservedGeneration, base.Status.ObservedGeneration)
	if apiequality.Semantic.DeepEqual(base.Status, want) {
		return nil
	}
	if wait := c.statusWait(key, base.Status, want); wait > 0 {
		// The sync then writes what is true at that time.
		c.queue.AddAfter(key, wait)
		c.metrics.statusDeferred.Inc()
		return nil
	}
	client := c.client.AppsV1().DaemonSets(ds.Namespace)
	toUpdate := base.DeepCopy()
	toUpdate.Status = *want.DeepCopy() // want may share slices with the cache
	for attempt := 0; ; attempt++ {
		written, err := client.UpdateStatus(ctx, toUpdate, metav1.UpdateOptions{})
		if err == nil {
			c.rememberStatus(key, ds.ResourceVersion, toUpdate.ResourceVersion, written)
			c.noteStatusWritten(key)
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
// from fresh: conditions, and a collisionCount and an observedGeneration that
// may only grow.
func mergeStatus(fresh, want appsv1.DaemonSetStatus) appsv1.DaemonSetStatus {
	out := want
	out.Conditions = fresh.Conditions
	out.ObservedGeneration = max(fresh.ObservedGeneration, want.ObservedGeneration)
	if fresh.CollisionCount != nil && (want.CollisionCount == nil || *fresh.CollisionCount > *want.CollisionCount) {
		cc := *fresh.CollisionCount
		out.CollisionCount = &cc
	}
	return out
}
