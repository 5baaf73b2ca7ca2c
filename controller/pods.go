package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
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

// slowStartBatches splits n creates into batches of first, 2×first, ...
// up to maxBatch, then maxBatch each (the last one smaller), as upstream's
// slow start (which always starts at 1).
func slowStartBatches(n, maxBatch, first int) []int {
	var out []int
	for size := min(max(first, 1), maxBatch); n > 0; size = min(2*size, maxBatch) {
		b := min(size, n)
		out = append(out, b)
		n -= b
	}
	return out
}

// SlowStartMemory is how long a DaemonSet's next creates resume the slow
// start where its last creates, all successful, left it. Upstream restarts
// at a batch of one in every sync; in a rollout, where each sync creates
// the replacements of the pods that finished terminating since the last
// one, that cost a round trip per doubling (six for 35 creates) while the
// next terminated pods waited for the sync to end. A failure is remembered
// until creates succeed again, so a quota or a webhook that starts
// refusing costs at most one batch of the size reached, and the retries
// start at one, however long the backoff between them.
const SlowStartMemory = time.Minute

// DefaultSlowStartInitialBatch is the first batch of a DaemonSet's creates
// when nothing is remembered: upstream's SlowStartInitialBatchSize.
const DefaultSlowStartInitialBatch = 1

// slowStartResume is where a DaemonSet's slow start resumes.
type slowStartResume struct {
	size   int       // the first batch of the next creates
	at     time.Time // when the creates that proved it ended
	failed bool      // the last creates failed: resume at one until some succeed
}

// slowStartFirst returns the first batch size of key's next creates.
func (c *Controller) slowStartFirst(key string) int {
	c.slowStartMu.Lock()
	defer c.slowStartMu.Unlock()
	r, ok := c.slowStart[key]
	switch {
	case ok && r.failed:
		return 1
	case !ok || c.clock.Since(r.at) > SlowStartMemory:
		return c.slowStartInitial
	}
	return r.size
}

// rememberSlowStart records how key's creates ended: largest is the largest
// batch that succeeded entirely; 0, a failure, makes the next creates start
// at one until some succeed.
func (c *Controller) rememberSlowStart(key string, largest int) {
	if largest <= 0 {
		c.slowStartMu.Lock()
		defer c.slowStartMu.Unlock()
		c.slowStart[key] = slowStartResume{size: 1, at: c.clock.Now(), failed: true}
		return
	}
	c.resumeSlowStartAt(key, min(2*largest, c.maxCreateBatch))
}

// resumeSlowStartAt records that key's next creates, all of its last ones
// having succeeded, start at size.
func (c *Controller) resumeSlowStartAt(key string, size int) {
	c.slowStartMu.Lock()
	defer c.slowStartMu.Unlock()
	c.slowStart[key] = slowStartResume{size: size, at: c.clock.Now()}
}

// forgetSlowStart forgets key's slow start, when its DaemonSet is gone: a
// new DaemonSet of the same name starts at the initial batch.
func (c *Controller) forgetSlowStart(key string) {
	c.slowStartMu.Lock()
	defer c.slowStartMu.Unlock()
	delete(c.slowStart, key)
}

// capBurst applies Config.BurstReplicas (0: no cap) to n writes of one
// kind when inFlight of that kind are on their way: the cap bounds the
// writes outstanding, as upstream's expectations do with its burst.
func (c *Controller) capBurst(n, inFlight int) int {
	if c.burstReplicas > 0 {
		return min(n, max(c.burstReplicas-inFlight, 0))
	}
	return n
}

// applyPods starts the plan's creates and deletes and returns at once; the
// writes go on in the background (Controller.writes). Expectations are
// raised before any call and lowered at once for every call that fails or
// is skipped, so a failure never leaves a node waiting for the TTL; a
// failure requeues the DaemonSet with backoff (writeDone).
func (c *Controller) applyPods(ctx context.Context, ds *appsv1.DaemonSet, key, hash string, p plan.Plan, inFlight plan.InFlight) {
	creates := p.Creates[:c.capBurst(len(p.Creates), len(inFlight.Creates))]
	deletes := p.Deletes[:c.capBurst(len(p.Deletes), len(inFlight.Deletes))]
	if len(creates) == 0 && len(deletes) == 0 {
		return
	}
	creates = slices.Clone(creates) // the plan's slices may be pooled
	deletes = slices.Clone(deletes)
	delKeys := make([]string, len(deletes))
	for i, d := range deletes {
		delKeys[i] = d.Namespace + "/" + d.Name
	}
	c.expectations.ExpectCreates(key, hash, creates)
	c.expectations.ExpectDeletions(key, delKeys)
	c.startWrite(func() {
		c.writeDone(ctx, key, c.writePods(ctx, ds, key, hash, creates, deletes))
	})
}

// writePods issues creates and deletes and returns their errors.
func (c *Controller) writePods(ctx context.Context, ds *appsv1.DaemonSet, key, hash string, creates []string, deletes []plan.PodDeletion) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	// The deletes go beside the creates, not after them as upstream's: the
	// planner never deletes and creates on one node in the same sync (a
	// node's replacement waits for its old pod to be gone; a surge pod is
	// created before, and its predecessor deleted in a later sync), so their
	// order does not matter, and the deletes need not wait out a slow start.
	// They stream with at most maxCreateBatch in flight, as the creates past
	// their slow start: sent at once, three DaemonSets rolling on 5000 nodes
	// put 3000 deletes in flight, a goroutine and an HTTP/2 stream each, and
	// the controller's memory doubled for those seconds (bench/SCALE.md).
	// A failed delete stops none of the others.
	var wg sync.WaitGroup
	wg.Go(func() {
		streamCalls(len(deletes), c.maxCreateBatch, nil, func(i int) {
			if err := c.deletePodFor(ctx, ds, key, deletes[i]); err != nil {
				fail(err)
			}
		})
	})
	if c.slowStartWindow {
		c.createInWindow(ctx, ds, key, hash, creates, fail)
	} else {
		c.createInSlowStart(ctx, ds, key, hash, creates, fail)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// streamCalls calls call(i) for i from 0 below n with at most limit calls
// in flight, the next as soon as one returns. Once a call may start it asks
// stopped (nil: never stop) and, if told to, starts no more. It returns how
// many it started, when all of them have returned.
func streamCalls(n, limit int, stopped func() bool, call func(i int)) (started int) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(limit, 1))
	for i := range n {
		slots <- struct{}{}
		if stopped != nil && stopped() {
			break
		}
		started++
		wg.Go(func() {
			defer func() { <-slots }()
			call(i)
		})
	}
	wg.Wait()
	return started
}

// writeDone records how a DaemonSet's writes ended. A failure requeues it
// with backoff, and until writes succeed again its syncs do not reset that
// backoff (processNextWorkItem): a create refused by a quota is retried at
// a growing interval, not at every sync.
func (c *Controller) writeDone(ctx context.Context, key string, err error) {
	if !c.daemonSetExists(key) {
		err = nil // gone meanwhile: nothing to retry, and nothing to keep for it
		c.forgetSlowStart(key)
	}
	c.writeErrMu.Lock()
	if err != nil {
		c.writeErr[key] = err
	} else {
		delete(c.writeErr, key)
	}
	c.writeErrMu.Unlock()
	if err != nil && ctx.Err() == nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Writing DaemonSet pods failed, requeueing with backoff", "daemonset", key)
		requeueAfterError(c.queue, key)
	}
}

// daemonSetExists reports whether key's DaemonSet is in the cache.
func (c *Controller) daemonSetExists(key string) bool {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return false
	}
	_, err = c.dsLister.DaemonSets(namespace).Get(name)
	return err == nil
}

// writeFailure is the error of key's last writes, nil if they succeeded.
func (c *Controller) writeFailure(key string) error {
	c.writeErrMu.Lock()
	defer c.writeErrMu.Unlock()
	return c.writeErr[key]
}

// forgetWrites forgets key's last write error, when its DaemonSet is gone.
func (c *Controller) forgetWrites(key string) {
	c.writeErrMu.Lock()
	defer c.writeErrMu.Unlock()
	delete(c.writeErr, key)
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

// createInSlowStart creates a pod on each node, in slow-start batches that
// double and each wait for the one before, as upstream's, while they are
// smaller than maxCreateBatch; the rest then streams with maxCreateBatch in
// flight, a new create as soon as one returns, instead of waiting for the
// slowest of each batch. The first batch is where key's last creates left
// the slow start (slowStartFirst). The first failure stops both: the
// creates not sent are no longer expected, and the requeue retries the
// slow start from one.
func (c *Controller) createInSlowStart(ctx context.Context, ds *appsv1.DaemonSet, key, hash string, nodes []string, fail func(error)) {
	if len(nodes) == 0 {
		return
	}
	skip := func(sent int) { c.skipCreates(ds, key, nodes, sent) }
	var failed atomic.Bool
	// streamed: a create of the stream, which is not sent once a failure is
	// known; a slow-start batch is sent whole, as upstream's.
	create := func(node string, streamed bool) {
		if streamed && failed.Load() {
			// Launched before the failure was known: not sent.
			c.expectations.CreationObserved(key, node)
			return
		}
		if err := c.createPod(ctx, ds, key, hash, node); err != nil {
			fail(err)
			failed.Store(true)
		}
	}
	pos, largest := 0, 0
	for _, size := range slowStartBatches(len(nodes), c.maxCreateBatch, c.slowStartFirst(key)) {
		if size == c.maxCreateBatch {
			break
		}
		var wg sync.WaitGroup
		for _, node := range nodes[pos : pos+size] {
			wg.Go(func() { create(node, false) })
		}
		wg.Wait()
		pos += size
		if failed.Load() {
			skip(pos)
			return
		}
		largest = size
	}
	if pos == len(nodes) {
		c.rememberSlowStart(key, largest)
		return
	}
	rest := nodes[pos:]
	if sent := streamCalls(len(rest), c.maxCreateBatch, failed.Load, func(i int) { create(rest[i], true) }); sent < len(rest) {
		skip(pos + sent)
		return
	}
	if failed.Load() {
		c.rememberSlowStart(key, 0)
		return
	}
	c.rememberSlowStart(key, c.maxCreateBatch)
}

// skipCreates ends key's creates after a failure: nodes[sent:] were not
// sent, and are no longer awaited; the next creates start at one.
func (c *Controller) skipCreates(ds *appsv1.DaemonSet, key string, nodes []string, sent int) {
	c.rememberSlowStart(key, 0)
	if skipped := len(nodes) - sent; skipped > 0 {
		// Likely the same error for all (quota, admission): do not
		// spam the API server.
		c.logger.V(2).Info("Slow-start failure, skipping remaining creates", "daemonset", klog.KObj(ds), "skipped", skipped)
		for _, node := range nodes[sent:] {
			c.expectations.CreationObserved(key, node)
		}
	}
}

// createInWindow creates a pod on each node with at most a window of
// creates in flight (Config.SlowStartWindow). The window starts where the
// batches would (slowStartFirst) and grows by one with each create that
// succeeds, up to maxCreateBatch: it doubles in a round trip, as the
// batches do, but a create is sent as soon as one returns, never after the
// slowest of a batch. The first failure stops the sending, with at most
// the window sent past it (a batch sends its whole size); the creates not
// sent are not awaited, and the next creates start at one.
func (c *Controller) createInWindow(ctx context.Context, ds *appsv1.DaemonSet, key, hash string, nodes []string, fail func(error)) {
	if len(nodes) == 0 {
		return // a sync of deletes only: the slow start stays as it was
	}
	sent, window, failed := windowed(len(nodes), c.slowStartFirst(key), c.maxCreateBatch, func(i int) error {
		err := c.createPod(ctx, ds, key, hash, nodes[i])
		if err != nil {
			fail(err)
		}
		return err
	})
	if failed {
		c.skipCreates(ds, key, nodes, sent)
		return
	}
	c.resumeSlowStartAt(key, window)
}

// windowed calls call(0), call(1), ... call(n-1) in order, each in a
// goroutine of its own, with at most window calls in flight: window starts
// at first (at least 1, at most maxWindow) and grows by one with each call
// that returns nil, up to maxWindow. After a call fails no more are made.
// It returns when every call made has returned: how many were made, the
// window reached, and whether one failed.
func windowed(n, first, maxWindow int, call func(i int) error) (sent, window int, failed bool) {
	var (
		mu       sync.Mutex
		returned = sync.NewCond(&mu)
		inFlight int
		wg       sync.WaitGroup
	)
	window = max(min(first, maxWindow), 1)
	for i := range n {
		mu.Lock()
		for inFlight >= window && !failed {
			returned.Wait()
		}
		if failed {
			mu.Unlock()
			break
		}
		inFlight++
		mu.Unlock()
		sent++
		wg.Go(func() {
			err := call(i)
			mu.Lock()
			inFlight--
			if err != nil {
				failed = true
			} else if window < maxWindow {
				window++
			}
			mu.Unlock()
			returned.Broadcast()
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return sent, window, failed
}

func (c *Controller) createPod(ctx context.Context, ds *appsv1.DaemonSet, key, hash, node string) error {
	ds, hash = createTemplate(key, ds, hash, node)
	pod := plan.NewPod(ds, hash, node, c.bindMode)
	if c.createLimiter != nil {
		if err := c.createLimiter.Acquire(ctx); err != nil {
			c.expectations.CreationObserved(key, node)
			return fmt.Errorf("waiting to create a pod on node %s: %w", node, err)
		}
	}
	if err := c.acquirePodWrite(ctx); err != nil {
		if c.createLimiter != nil {
			c.createLimiter.Release(0, false)
		}
		c.expectations.CreationObserved(key, node)
		return fmt.Errorf("waiting to create a pod on node %s: %w", node, err)
	}
	start := c.clock.Now()
	created, err := c.podWriteClient.CoreV1().Pods(ds.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	c.releasePodWrite()
	if c.createLimiter != nil {
		c.createLimiter.Release(c.clock.Since(start), err == nil)
		c.metrics.createLimit.Set(float64(c.createLimiter.Limit()))
	}
	if err != nil {
		if mayHaveLanded(err) {
			// The pod may exist: a second create now could put two on
			// the node. Wait a while longer for the informer to say.
			c.expectations.CreationUncertain(key, node)
		} else {
			// The informer will never see this pod: stop waiting for it now.
			c.expectations.CreationObserved(key, node)
		}
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
		err = c.podWriteClient.CoreV1().Pods(d.Namespace).Delete(ctx, d.Name, opts)
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
		if mayHaveLanded(err) {
			// The pod may be terminating already: counted as available
			// meanwhile, a rollout would delete another past its budget.
			c.expectations.DeletionUncertain(key, d.Namespace+"/"+d.Name)
		} else {
			c.expectations.DeletionObserved(key, d.Namespace+"/"+d.Name)
		}
		c.metrics.podErrors.WithLabelValues("delete").Inc()
		c.recorder.Eventf(ds, corev1.EventTypeWarning, FailedDeleteReason, "Error deleting: %v", err)
		return fmt.Errorf("deleting pod %s/%s: %w", d.Namespace, d.Name, err)
	}
}

// writeMayHaveLanded says whether a pod write that returned err may have
// been applied all the same. kube-apiserver answers Timeout when its own
// deadline passes while the handler still runs (the write may commit
// after the answer), and an internal error or a server timeout may hide
// an etcd write that timed out after it was sent; an error with no answer
// at all (a broken connection, a client timeout) may come after the
// request was sent. Any other answer refused the write.
func writeMayHaveLanded(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsInternalError(err) {
		return true
	}
	var status apierrors.APIStatus
	return !errors.As(err, &status)
}
