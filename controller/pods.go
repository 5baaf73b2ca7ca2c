package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/dsbench/dsbench/controller/plan"
)

// createReason labels pods_created_total: the planner creates a pod only
// where an eligible node lacks a current one.
const createReason = "daemon_pod_missing"

// DefaultMaxCreateBatch is the default cap on creates in flight at once.
// Upstream sends at most 250 creates per sync; on a real API server, with
// admission webhooks and an image registry behind it, a batch of thousands
// at once (slow start reaches 2048 on 5000 nodes) is a risk. The batches go
// on at this size within the sync, so a large cluster is not held back.
const DefaultMaxCreateBatch = 250

// slowStartBatches splits n creates into batches of 1, 2, 4, ... up to
// maxBatch, then maxBatch each (the last one smaller), as upstream's slow
// start.
func slowStartBatches(n, maxBatch int) []int {
	var out []int
	for size := 1; n > 0; size = min(2*size, maxBatch) {
		b := min(size, n)
		out = append(out, b)
		n -= b
	}
	return out
}

// capBurst applies Config.BurstReplicas (0: no cap).
func (c *Controller) capBurst(n int) int {
	if c.burstReplicas > 0 {
		return min(n, c.burstReplicas)
	}
	return n
}

// applyPods issues the plan's creates and deletes. Expectations are raised
// before any call and lowered at once for every call that fails or is
// skipped, so a failure never leaves the DaemonSet waiting for the TTL; the
// returned error makes the caller requeue with backoff.
func (c *Controller) applyPods(ctx context.Context, ds *appsv1.DaemonSet, key, hash string, p plan.Plan) error {
	creates := p.Creates[:c.capBurst(len(p.Creates))]
	deletes := p.Deletes[:c.capBurst(len(p.Deletes))]
	if len(creates) == 0 && len(deletes) == 0 {
		return nil
	}
	delKeys := make([]string, len(deletes))
	for i, d := range deletes {
		delKeys[i] = d.Namespace + "/" + d.Name
	}
	c.expectations.Expect(key, len(creates), delKeys)

	var (
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}

	c.createInSlowStart(ctx, ds, key, hash, creates, fail)

	var wg sync.WaitGroup
	for _, d := range deletes {
		wg.Go(func() {
			if err := c.deletePodFor(ctx, ds, key, d); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// acquirePodWrite waits for a slot under Config.MaxPodWritesInFlight.
func (c *Controller) acquirePodWrite(ctx context.Context) error {
	if c.podWrites == nil {
		return nil
	}
	return c.podWrites.Acquire(ctx, 1)
}

func (c *Controller) releasePodWrite() {
	if c.podWrites != nil {
		c.podWrites.Release(1)
	}
}

// createInSlowStart creates a pod on each node, in slow-start batches of 1,
// 2, 4, ... that each wait for the one before, as upstream's, while they are
// smaller than maxCreateBatch; the rest then streams with maxCreateBatch in
// flight, a new create as soon as one returns, instead of waiting for the
// slowest of each batch. The first failure stops both: the creates not sent
// are no longer expected, and the requeue retries the slow start.
func (c *Controller) createInSlowStart(ctx context.Context, ds *appsv1.DaemonSet, key, hash string, nodes []string, fail func(error)) {
	skip := func(sent int) {
		if skipped := len(nodes) - sent; skipped > 0 {
			// Likely the same error for all (quota, admission): do not
			// spam the API server.
			c.logger.V(2).Info("Slow-start failure, skipping remaining creates", "daemonset", klog.KObj(ds), "skipped", skipped)
			c.expectations.CreationObserved(key, skipped)
		}
	}
	var failed atomic.Bool
	create := func(node string) {
		if err := c.createPod(ctx, ds, key, hash, node); err != nil {
			fail(err)
			failed.Store(true)
		}
	}
	pos := 0
	for _, size := range slowStartBatches(len(nodes), c.maxCreateBatch) {
		if size == c.maxCreateBatch {
			break
		}
		var wg sync.WaitGroup
		for _, node := range nodes[pos : pos+size] {
			wg.Go(func() { create(node) })
		}
		wg.Wait()
		pos += size
		if failed.Load() {
			skip(pos)
			return
		}
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, c.maxCreateBatch)
	defer wg.Wait()
	for i, node := range nodes[pos:] {
		slots <- struct{}{}
		if failed.Load() {
			skip(pos + i)
			return
		}
		wg.Go(func() {
			defer func() { <-slots }()
			create(node)
		})
	}
}

func (c *Controller) createPod(ctx context.Context, ds *appsv1.DaemonSet, key, hash, node string) error {
	ds, hash = createTemplate(key, ds, hash, node)
	pod := plan.NewPod(ds, hash, node, c.bindMode)
	if c.createLimiter != nil {
		if err := c.createLimiter.Acquire(ctx); err != nil {
			c.expectations.CreationObserved(key, 1)
			return fmt.Errorf("waiting to create a pod on node %s: %w", node, err)
		}
	}
	if err := c.acquirePodWrite(ctx); err != nil {
		if c.createLimiter != nil {
			c.createLimiter.Release(0, false)
		}
		c.expectations.CreationObserved(key, 1)
		return fmt.Errorf("waiting to create a pod on node %s: %w", node, err)
	}
	start := c.clock.Now()
	created, err := c.client.CoreV1().Pods(ds.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	c.releasePodWrite()
	if c.createLimiter != nil {
		c.createLimiter.Release(c.clock.Since(start), err == nil)
		c.metrics.createLimit.Set(float64(c.createLimiter.Limit()))
	}
	if err != nil {
		// The informer will never see this pod: stop waiting for it now.
		c.expectations.CreationObserved(key, 1)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil // every create will fail until the namespace is gone
		}
		c.metrics.podErrors.WithLabelValues("create").Inc()
		c.recorder.Eventf(ds, corev1.EventTypeWarning, FailedCreateReason, "Error creating: %v", err)
		return fmt.Errorf("creating pod on node %s: %w", node, err)
	}
	c.metrics.podsCreated.WithLabelValues(createReason).Inc()
	c.recorder.Eventf(ds, corev1.EventTypeNormal, SuccessfulCreateReason, "Created pod: %s", created.Name)
	c.logger.V(4).Info("Created daemon pod", "pod", klog.KObj(created), "node", node, "daemonset", klog.KObj(ds))
	return nil
}

func (c *Controller) deletePodFor(ctx context.Context, ds *appsv1.DaemonSet, key string, d plan.PodDeletion) error {
	opts := metav1.DeleteOptions{}
	if d.UID != "" {
		// Never delete a same-named replacement of the pod we decided on.
		opts.Preconditions = &metav1.Preconditions{UID: &d.UID}
	}
	err := c.acquirePodWrite(ctx)
	if err == nil {
		err = c.client.CoreV1().Pods(d.Namespace).Delete(ctx, d.Name, opts)
		c.releasePodWrite()
	}
	switch {
	case err == nil:
		c.metrics.podsDeleted.WithLabelValues(d.Reason).Inc()
		c.recorder.Eventf(ds, corev1.EventTypeNormal, SuccessfulDeleteReason, "Deleted pod: %s", d.Name)
		c.logger.V(4).Info("Deleted daemon pod", "pod", klog.KRef(d.Namespace, d.Name), "node", d.Node, "reason", d.Reason, "daemonset", klog.KObj(ds))
		return nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// Already gone, or the name now belongs to another pod (UID
		// precondition): the pod we meant is gone either way.
		c.expectations.DeletionObserved(key, d.Namespace+"/"+d.Name)
		return nil
	default:
		c.expectations.DeletionObserved(key, d.Namespace+"/"+d.Name)
		c.metrics.podErrors.WithLabelValues("delete").Inc()
		c.recorder.Eventf(ds, corev1.EventTypeWarning, FailedDeleteReason, "Error deleting: %v", err)
		return fmt.Errorf("deleting pod %s/%s: %w", d.Namespace, d.Name, err)
	}
}
