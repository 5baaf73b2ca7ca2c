package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/dsbench/dsbench/controller/plan"
)

// syncDaemonSet brings one DaemonSet closer to its plan: claim pods and
// revisions, write history, compute the plan, apply creates and deletes,
// write status. A DaemonSet that no longer exists is not an error.
func (c *Controller) syncDaemonSet(ctx context.Context, key string) (err error) {
	start := c.clock.Now()
	logger := klog.FromContext(ctx).WithValues("daemonset", key)
	ctx = klog.NewContext(ctx, logger)
	defer func() {
		result := "success"
		if err != nil {
			result = "error"
		}
		elapsed := c.clock.Since(start)
		c.metrics.syncDuration.WithLabelValues(result).Observe(elapsed.Seconds())
		logger.V(4).Info("Finished syncing DaemonSet", "duration", elapsed, "result", result)
	}()

	if c.syncDelay > 0 {
		select {
		case <-c.clock.After(c.syncDelay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a malformed key never becomes valid: do not retry
	}
	ds, err := c.dsLister.DaemonSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(3).Info("DaemonSet has been deleted")
		c.expectations.Delete(key)
		c.forgetBackoff(key)
		c.forgetSlowStart(key)
		c.forgetWrites(key)
		c.forgetStatus(key)
		c.forgetPodMemo(key)
		c.metrics.deleteDaemonSetSeries(namespace, name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting DaemonSet %s from cache: %w", key, err)
	}
	c.metrics.dsSyncs.WithLabelValues(namespace, name).Inc()
	// Idle only when this sync gets to plan and finds nothing to do: a sync
	// that stops early leaves readiness updates on the usual batch.
	idle := false
	defer func() { c.setIdle(key, idle) }()
	// Being deleted: the garbage collector removes its pods and revisions,
	// and its status cannot be computed reliably (as upstream).
	if ds.DeletionTimestamp != nil {
		return nil
	}
	if plan.SelectsAll(ds.Spec.Selector) {
		c.recorder.Event(ds, corev1.EventTypeWarning, plan.SelectingAllReason, plan.SelectingAllMessage)
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		c.recorder.Eventf(ds, corev1.EventTypeWarning, InvalidSelectorReason, "Invalid selector: %v", err)
		return nil // only a spec change can fix it, and that enqueues again
	}

	// Take the writes in flight before reading the cache, as upstream checks
	// its expectations: the informer updates its store before the handler
	// lowers them, so every write missing from what we take is in what we
	// read next. Read first and taken second, a pod that arrives in between
	// is both missing from our view and no longer in flight: a duplicate.
	inFlight, expired := c.expectations.InFlight(key)
	if expired > 0 {
		logger.V(2).Info("Writes unobserved past the expectations TTL, acting anyway", "writes", expired)
	}
	nodes, nodeIndex := c.listNodes()
	lists := listsPool.Get().(*syncLists)
	defer lists.put()
	memo := c.podMemoFor(key)
	memo.begin(ds.UID, selector.String())
	pods, facts, claims, err := c.claimPods(ctx, ds, selector, memo, lists.pods[:0], lists.facts[:0])
	memo.end()
	lists.pods, lists.facts = pods, facts
	if err != nil {
		return fmt.Errorf("claiming pods: %w", err)
	}
	revisions, err := c.claimRevisions(ctx, ds, selector)
	if err != nil {
		return fmt.Errorf("claiming ControllerRevisions: %w", err)
	}

	claimed := pods
	hp, pods, err := c.syncHistory(ctx, ds, revisions, pods)
	if err != nil {
		return fmt.Errorf("constructing history: %w", err)
	}
	facts = readReplacedFacts(claimed, pods, facts)
	hash := hp.Hash

	planStart := c.clock.Now()
	p := computePlan(key, plan.Input{
		DaemonSet: ds,
		Nodes:     nodes,
		NodeIndex: nodeIndex,
		Pods:      pods,
		Facts:     facts,
		Hash:      hash,
		InFlight:  inFlight,
		Backoff:   c.getBackoff(key),
		Now:       c.clock.Now(),
	})
	batch := c.notePlanCost(key, c.clock.Since(planStart))
	c.metrics.dsBatch.WithLabelValues(namespace, name).Set(batch.Seconds())
	c.setBackoff(key, p.Backoff)
	for _, e := range p.Events {
		c.recorder.Event(ds, e.Type, e.Reason, e.Message)
	}

	held := holdCreates(claims, &p, c.clock.Now())
	if held.orphans > 0 {
		// The next sync adopts them; the pod events that made them
		// orphans enqueue it too, unless they came before the DaemonSet.
		logger.V(2).Info("Orphans arrived while claiming; their nodes wait for the next sync", "nodes", held.orphans)
		c.queue.Add(key)
	}
	if held.staleOwner > 0 {
		// Their release or deletion enqueues us (updatePod, deletePod);
		// the hold's end does if neither comes.
		logger.V(2).Info("Pods of a deleted DaemonSet that the selector matches are on nodes; they wait for the garbage collector's release",
			"nodes", held.staleOwner, "atMost", held.staleOwnerLeft)
		c.queue.AddAfter(key, held.staleOwnerLeft)
	}

	// The writes go on without us: the next sync, woken by their events or
	// by a pod that finished terminating meanwhile, plans with them in
	// flight. A failure requeues with backoff (writeDone).
	c.applyPods(ctx, ds, key, hash, p, inFlight)
	var errs []error
	if inFlight.Empty() {
		// As upstream, old revisions go only when the pods are in sync
		// with what we last did: a revision a pod uses is never deleted.
		if err := c.cleanupHistory(ctx, ds, hp.Deletes); err != nil {
			errs = append(errs, err)
		}
	}
	// The informers have no periodic resync: this makes sure a lost watch
	// event cannot stall the DaemonSet past the TTL.
	if left := c.expectations.ExpiresIn(key); left > 0 {
		c.queue.AddAfter(key, left)
	}
	// The status counts what exists even when pod writes fail.
	podErr := c.writeFailure(key)
	if !skipStatusAfterPodError(podErr) {
		if err := c.writeStatus(ctx, ds, p.Status); err != nil {
			errs = append(errs, err)
		}
	}
	idle = p.Idle && podErr == nil
	c.metrics.setDaemonSetGauges(namespace, name, p.Status.DesiredNumberScheduled, p.Status.UpdatedNumberScheduled, p.Status.NumberAvailable)
	if p.RequeueAfter > 0 {
		c.queue.AddAfter(key, p.RequeueAfter)
	}
	return errors.Join(errs...)
}

// heldCreates counts the nodes holdCreates dropped from a plan's creates.
type heldCreates struct {
	orphans    int // an orphan arrived after the claim
	staleOwner int // a matching pod's controller is a deleted DaemonSet
	// staleOwnerLeft is the longest the stale-owner hold may still last.
	staleOwnerLeft time.Duration
}

// holdCreates drops from p's creates the nodes where an orphan arrived
// after the claim (orphanArrivedOn) or where a matching pod of a deleted
// DaemonSet may already be an orphan (staleOwnerOn): the next sync adopts
// it rather than running a second daemon beside it.
func holdCreates(claims *claimer, p *plan.Plan, now time.Time) heldCreates {
	var kept []string // nil until a node is held: the plan's own slice is not ours to change
	var held heldCreates
	for i, node := range p.Creates {
		hold := claims.orphanArrivedOn(node)
		if hold {
			held.orphans++
		} else if stale, left := claims.staleOwnerOn(node, now); stale {
			hold = true
			held.staleOwner++
			held.staleOwnerLeft = max(held.staleOwnerLeft, left)
		}
		switch {
		case hold:
			if kept == nil {
				kept = append(make([]string, 0, len(p.Creates)), p.Creates[:i]...)
			}
		case kept != nil:
			kept = append(kept, node)
		}
	}
	if kept != nil {
		p.Creates = kept
	}
	return held
}

// listNodes returns every node in the cache; callers must not modify the
// list. It is listed again only after a node event, and shared by the syncs
// in between: at 10k nodes, a list for every sync was most of what a sync
// allocated. A sync that runs between a node's arrival in the cache and its
// event sees the nodes as they were just before, as if it had run earlier.
// The list comes with plan.NodeIndexOf it, made and shared with it.
func (c *Controller) listNodes() ([]*corev1.Node, map[string]int) {
	version := c.nodesVersion.Load()
	c.nodesMu.Lock()
	defer c.nodesMu.Unlock()
	if c.nodes != nil && c.nodesListed == version {
		return c.nodes, c.nodeIndex
	}
	objs := c.nodeStore.List()
	nodes := make([]*corev1.Node, len(objs))
	for i, obj := range objs {
		nodes[i] = obj.(*corev1.Node)
	}
	c.nodes, c.nodeIndex, c.nodesListed = nodes, plan.NodeIndexOf(nodes), version
	return nodes, c.nodeIndex
}

// readReplacedFacts returns facts (of claimed) for pods, which history
// may have made of claimed by replacing some pods with relabelled copies:
// those are read again.
func readReplacedFacts(claimed, pods []*corev1.Pod, facts []plan.PodFacts) []plan.PodFacts {
	if len(pods) != len(claimed) {
		return nil // the plan reads every pod
	}
	for i := range pods {
		if pods[i] != claimed[i] {
			facts[i] = plan.ReadPodFacts(pods[i])
		}
	}
	return facts
}

// syncLists holds a sync's lists of pods and their facts for the syncs
// after it: at 10k nodes they are 80 KB and 800 KB a sync for the garbage
// collector. Nothing a sync leaves behind (plan, backoff, status) points
// into them.
type syncLists struct {
	pods  []*corev1.Pod
	facts []plan.PodFacts
}

var listsPool = sync.Pool{New: func() any { return new(syncLists) }}

// put empties l, so that it keeps no cached object alive, and returns it to
// the pool.
func (l *syncLists) put() {
	clear(l.pods)
	l.pods = l.pods[:0]
	clear(l.facts)
	l.facts = l.facts[:0]
	listsPool.Put(l)
}

func (c *Controller) getBackoff(key string) plan.Backoff {
	c.backoffMu.Lock()
	defer c.backoffMu.Unlock()
	return c.backoff[key]
}

func (c *Controller) setBackoff(key string, b plan.Backoff) {
	c.backoffMu.Lock()
	defer c.backoffMu.Unlock()
	if len(b.Entries) == 0 {
		delete(c.backoff, key)
		return
	}
	c.backoff[key] = b
}

func (c *Controller) forgetBackoff(key string) {
	c.backoffMu.Lock()
	defer c.backoffMu.Unlock()
	delete(c.backoff, key)
}
