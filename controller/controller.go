package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/dsbench/dsbench/controller/internal/eventsink"
	"github.com/dsbench/dsbench/controller/internal/pacing"
	"github.com/dsbench/dsbench/controller/plan"
)

// ComponentName is the event source and the default field manager / user
// agent suffix, as upstream's "daemonset-controller".
const ComponentName = "daemonset-controller"

// DefaultWorkers is the default number of DaemonSets synced in parallel.
// Upstream uses 2, so that two DaemonSets waiting on a large burst of
// creates block every other DaemonSet (#128442). A sync is I/O bound (API
// round trips under the client's rate limiter) and a worker is only a
// goroutine, so more workers cost little and remove that head-of-line
// blocking; the workqueue still syncs one key at a time.
const DefaultWorkers = 10

// nodeWorkers route node events to DaemonSets; each event costs O(#DS)
// predicate evaluations on one node, so two are plenty.
const nodeWorkers = 2

// DefaultStatusInterval is the binary's --status-write-interval: a rollout's
// status trails its pods by at most a second, well inside what `kubectl
// rollout status` polls at, for a write a second instead of one per sync.
const DefaultStatusInterval = time.Second

// DefaultPodUpdateBatch is the binary's --pod-update-batch-period. While
// kwok or kubelets mark thousands of pods Running and Ready, or a rollout
// sees hundreds of pods a second go and come, every event woke a full sync
// of the DaemonSet, back to back; 20 ms lets the events of that time share
// one sync, and delays what an event unblocks (a replacement, the next pod
// of a rollout) by at most that.
const DefaultPodUpdateBatch = 20 * time.Millisecond

// DefaultPodUpdateBatchCostFactor is the binary's
// --pod-update-batch-cost-factor. A plan is a pass over every node and pod
// (BenchmarkCompute: 0.85 ms at 5000 nodes, 1.9 ms at 10,000, on an idle
// core), and a sync every 20 ms while a 5000-node rollout's events streamed
// made syncing 61 % of the controller's CPU (bench/SCALE.md). A multiple of
// the plan's time bounds a DaemonSet's syncs to a small share of a core at
// any size. It was 40 until a sync read each pod object once (podMemo),
// which halved the plans' time and so the period at 5000 nodes, for the
// same CPU; 80 keeps the period of before with the cheaper syncs: 0.46 of
// upstream's CPU instead of 0.56 at 5000 nodes, replacements no slower
// (bench/SCALE.md, "Reading each pod once"). At 1000 nodes the period
// measured 34 ms at the median.
const DefaultPodUpdateBatchCostFactor = 80

// maxPodUpdateBatch bounds how far planning time stretches the batch
// period: what an event unblocks waits no longer than this.
const maxPodUpdateBatch = 250 * time.Millisecond

// statusUpdateRetries bounds the conflict retries of one status write.
const statusUpdateRetries = 3

// Config configures a Controller. Client is required; every other field has
// a default.
type Config struct {
	// Client talks to the API server.
	Client kubernetes.Interface
	// PodWriteClient sends the pod creates and deletes; nil means Client.
	// A client of its own lets those bursts go over connections of their
	// own (cmd/daemonset-controller's --pod-write-connections).
	PodWriteClient kubernetes.Interface
	// Informers is the factory the controller registers its informers in.
	// nil: a factory over Client without resync that strips managedFields
	// (and node images) to save memory. The controller starts it in
	// StartInformers or Run.
	Informers informers.SharedInformerFactory
	// Workers is the number of DaemonSets synced in parallel; <= 0 means
	// DefaultWorkers.
	Workers int
	// BurstReplicas caps a DaemonSet's creates, and its deletes, in flight
	// (sent and not yet seen); 0 means no cap. Creates always go in
	// slow-start batches of 1, 2, 4, ... and stop after a batch with errors.
	BurstReplicas int
	// MaxCreateBatch caps a slow-start batch, the creates in flight at once,
	// and a sync's deletes in flight; 0 means DefaultMaxCreateBatch. Unlike
	// upstream's burst of 250 it does not end the sync: the batches go on
	// at this size, and the deletes stream.
	MaxCreateBatch int
	// SlowStartInitialBatch is the first slow-start batch of a DaemonSet's
	// creates when nothing is remembered of its last ones (a new DaemonSet,
	// or a minute since); 0 means DefaultSlowStartInitialBatch, upstream's
	// 1. After a failure the retries start at one whatever it is.
	SlowStartInitialBatch int
	// SlowStartWindow sends a sync's creates under a window instead of in
	// batches: at most the window in flight, the window starting where the
	// batch would and growing by one with each create that succeeds, up to
	// MaxCreateBatch, so that no create waits for the slowest of a batch
	// (createInWindow). false: upstream's batches.
	SlowStartWindow bool
	// AdaptiveCreates paces creates to the API server: a controller-wide
	// limit on creates in flight, between pacing.DefaultMinLimit and
	// MaxCreateBatch, that grows while creates are acknowledged about as
	// fast as the fastest seen and shrinks as they slow down (package
	// pacing). false: each sync's batches go at their full size.
	AdaptiveCreates bool
	// MaxPodWritesInFlight caps the pod creates and deletes in flight at
	// once over all workers; 0 means no cap. kube-apiserver allows 100
	// streams on one HTTP/2 connection by default, and past them Go's client
	// dials a new connection, with its TLS handshake, for every request that
	// waits: a burst of 250 creates dialled about 50. A cap of 80 kept one
	// connection but made the pods exist later (bench/SCALE.md), so there
	// is none by default.
	MaxPodWritesInFlight int
	// BindMode is how created pods are bound; "" means plan.BindScheduler.
	BindMode plan.BindMode
	// Clock drives expectations, the planner's now and the workqueues; nil
	// means the real clock.
	Clock clock.WithTicker
	// Recorder receives the controller's events. nil: Run starts a
	// broadcaster that writes core/v1 Events through Client.
	Recorder record.EventRecorder
	// Logger is the base logger; the zero value means klog.Background().
	Logger klog.Logger
	// SyncDelay is a deliberate sleep at the start of every sync, so that a
	// bench can check that it detects a slow controller. 0 in production.
	SyncDelay time.Duration
	// Metrics receives the controller's metrics; nil means NewMetrics().
	Metrics *Metrics
	// ExpectationsTTL is how long an unobserved write is counted as in
	// flight; <= 0 means DefaultExpectationsTTL.
	ExpectationsTTL time.Duration
	// StatusInterval is the least time between two status writes of one
	// DaemonSet that change its counters only: a sync within it requeues
	// the DaemonSet for the end of the interval instead of writing, so
	// that a rollout on thousands of nodes costs a write a second, not one
	// per sync. A new observedGeneration is written at once. 0: a write at
	// every sync that changes the status (as upstream).
	StatusInterval time.Duration
	// PodUpdateBatch is the longest a sync waits after an event of one of
	// the DaemonSet's pods (its creation, an update, the start and the end
	// of its deletion), so that the events that arrive meanwhile share it.
	// Adoptions wake the sync at once. 0: every event at once (as
	// upstream).
	PodUpdateBatch time.Duration
	// PodUpdateBatchCostFactor stretches PodUpdateBatch for a DaemonSet
	// whose plans take long: its period becomes at least this many times
	// its recent planning time (a moving average), at most 250 ms, so that
	// while its pods' events stream its syncs take a bounded share of a
	// core whatever its number of nodes. 0: PodUpdateBatch alone.
	PodUpdateBatchCostFactor int
}

// Controller keeps one daemon pod on every eligible node for every DaemonSet.
type Controller struct {
	client         kubernetes.Interface
	podWriteClient kubernetes.Interface // pod creates and deletes
	factory        informers.SharedInformerFactory
	clock          clock.WithTicker
	logger         klog.Logger
	recorder       record.EventRecorder
	broadcaster    record.EventBroadcaster // nil when Config.Recorder was given
	metrics        *Metrics
	workers        int
	burstReplicas  int
	maxCreateBatch int
	createLimiter  *pacing.Limiter     // nil: no pacing
	podWrites      *semaphore.Weighted // nil: no cap on pod writes in flight
	bindMode       plan.BindMode
	syncDelay      time.Duration

	dsLister   appslisters.DaemonSetLister
	crLister   appslisters.ControllerRevisionLister
	nodeLister corelisters.NodeLister
	nodeStore  cache.Store
	podIndexer cache.Indexer
	synced     []cache.InformerSynced

	queue        workqueue.TypedRateLimitingInterface[string]
	nodeQueue    workqueue.TypedRateLimitingInterface[string]
	expectations *Expectations

	nodeMu       sync.Mutex
	pendingNodes map[string]nodeChange // node name -> the states since the first unprocessed event

	nodesVersion atomic.Uint64  // raised by every node event, before it is routed
	nodesMu      sync.Mutex     // guards nodes, nodeIndex and nodesListed
	nodes        []*corev1.Node // the node cache at nodesListed, shared by syncs: read only
	nodesListed  uint64         // nodesVersion when nodes was listed
	nodeIndex    map[string]int // plan.NodeIndexOf(nodes): read only

	backoffMu sync.Mutex
	backoff   map[string]plan.Backoff // DaemonSet key -> failed-pod backoff carried between syncs

	slowStartMu sync.Mutex
	slowStart   map[string]slowStartResume // DaemonSet key -> where its next creates' slow start begins
	// slowStartInitial is the first batch when slowStart holds nothing.
	slowStartInitial int
	slowStartWindow  bool // Config.SlowStartWindow

	writes     sync.WaitGroup   // pod writes on their way (applyPods)
	startWrite func(func())     // starts a sync's pod writes: c.writes.Go; tests run them in place
	writeErrMu sync.Mutex       // guards writeErr
	writeErr   map[string]error // DaemonSet key -> the error of its last writes, while they fail

	statusMu      sync.Mutex
	writtenStatus map[string]writtenStatus // DaemonSet key -> our last status write, while the cache lags it
	statusWritten map[string]time.Time     // DaemonSet key -> when we last wrote its status
	idle          map[string]bool          // DaemonSet key -> its last sync's plan was Idle
	planCost      map[string]time.Duration // DaemonSet key -> moving average of its plans' time

	revisionDataMu sync.Mutex
	revisionDataOf map[types.UID]keptRevisionData

	podMemosMu sync.Mutex
	podMemos   map[string]*podMemo // by DaemonSet key

	statusInterval time.Duration

	podUpdateBatch time.Duration
	batchFactor    int
}

// NewController wires informers, queues and handlers. It makes no API calls;
// Run starts the work.
func NewController(conf Config) (*Controller, error) {
	if conf.Client == nil {
		return nil, errors.New("creating DaemonSet controller: Config.Client is nil")
	}
	if conf.PodWriteClient == nil {
		conf.PodWriteClient = conf.Client
	}
	switch conf.BindMode {
	case "":
		conf.BindMode = plan.BindScheduler
	case plan.BindScheduler, plan.BindDirect:
	default:
		return nil, fmt.Errorf("creating DaemonSet controller: unknown bind mode %q (want %q or %q)", conf.BindMode, plan.BindScheduler, plan.BindDirect)
	}
	if conf.BurstReplicas < 0 {
		return nil, fmt.Errorf("creating DaemonSet controller: BurstReplicas %d is negative", conf.BurstReplicas)
	}
	switch {
	case conf.MaxCreateBatch < 0:
		return nil, fmt.Errorf("creating DaemonSet controller: MaxCreateBatch %d is negative", conf.MaxCreateBatch)
	case conf.MaxCreateBatch == 0:
		conf.MaxCreateBatch = DefaultMaxCreateBatch
	}
	switch {
	case conf.SlowStartInitialBatch < 0:
		return nil, fmt.Errorf("creating DaemonSet controller: SlowStartInitialBatch %d is negative", conf.SlowStartInitialBatch)
	case conf.SlowStartInitialBatch == 0:
		conf.SlowStartInitialBatch = DefaultSlowStartInitialBatch
	}
	if conf.MaxPodWritesInFlight < 0 {
		return nil, fmt.Errorf("creating DaemonSet controller: MaxPodWritesInFlight %d is negative", conf.MaxPodWritesInFlight)
	}
	if conf.StatusInterval < 0 {
		return nil, fmt.Errorf("creating DaemonSet controller: StatusInterval %v is negative", conf.StatusInterval)
	}
	if conf.SyncDelay < 0 {
		return nil, fmt.Errorf("creating DaemonSet controller: SyncDelay %v is negative", conf.SyncDelay)
	}
	if conf.PodUpdateBatch < 0 {
		return nil, fmt.Errorf("creating DaemonSet controller: PodUpdateBatch %v is negative", conf.PodUpdateBatch)
	}
	if conf.PodUpdateBatchCostFactor < 0 {
		return nil, fmt.Errorf("creating DaemonSet controller: PodUpdateBatchCostFactor %d is negative", conf.PodUpdateBatchCostFactor)
	}
	if conf.Workers <= 0 {
		conf.Workers = DefaultWorkers
	}
	if conf.Clock == nil {
		conf.Clock = clock.RealClock{}
	}
	if conf.Logger.GetSink() == nil {
		conf.Logger = klog.Background()
	}
	if conf.Metrics == nil {
		conf.Metrics = NewMetrics()
	}
	if conf.Informers == nil {
		conf.Informers = NewInformerFactory(conf.Client)
	}

	c := &Controller{
		client:           conf.Client,
		podWriteClient:   conf.PodWriteClient,
		factory:          conf.Informers,
		clock:            conf.Clock,
		logger:           conf.Logger.WithName("daemonset"),
		recorder:         conf.Recorder,
		metrics:          conf.Metrics,
		workers:          conf.Workers,
		burstReplicas:    conf.BurstReplicas,
		maxCreateBatch:   conf.MaxCreateBatch,
		slowStartInitial: conf.SlowStartInitialBatch,
		slowStartWindow:  conf.SlowStartWindow,
		bindMode:         conf.BindMode,
		syncDelay:        conf.SyncDelay,
		expectations:     NewExpectations(conf.Clock, conf.ExpectationsTTL),
		pendingNodes:     map[string]nodeChange{},
		backoff:          map[string]plan.Backoff{},
		slowStart:        map[string]slowStartResume{},
		writeErr:         map[string]error{},
		writtenStatus:    map[string]writtenStatus{},
		statusWritten:    map[string]time.Time{},
		idle:             map[string]bool{},
		planCost:         map[string]time.Duration{},
		revisionDataOf:   map[types.UID]keptRevisionData{},
		podMemos:         map[string]*podMemo{},
		statusInterval:   conf.StatusInterval,
		podUpdateBatch:   conf.PodUpdateBatch,
		batchFactor:      conf.PodUpdateBatchCostFactor,
	}
	if conf.MaxPodWritesInFlight > 0 {
		c.podWrites = semaphore.NewWeighted(int64(conf.MaxPodWritesInFlight))
	}
	if conf.AdaptiveCreates {
		c.createLimiter = pacing.New(pacing.DefaultMinLimit, pacing.DefaultInitialLimit, c.maxCreateBatch, c.clock.Now)
	}
	if c.recorder == nil {
		c.broadcaster = record.NewBroadcaster(record.WithContext(klog.NewContext(context.Background(), c.logger)))
		c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ComponentName})
	}
	provider := workqueueProvider{conf.Metrics}
	c.startWrite = c.writes.Go
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(newRateLimiter(), workqueue.TypedRateLimitingQueueConfig[string]{
		Name: "daemonset", MetricsProvider: provider, Clock: conf.Clock,
	})
	c.nodeQueue = workqueue.NewTypedRateLimitingQueueWithConfig(newRateLimiter(), workqueue.TypedRateLimitingQueueConfig[string]{
		Name: "daemonset_node_events", MetricsProvider: provider, Clock: conf.Clock,
	})

	dsInf := conf.Informers.Apps().V1().DaemonSets()
	crInf := conf.Informers.Apps().V1().ControllerRevisions()
	podInf := conf.Informers.Core().V1().Pods()
	nodeInf := conf.Informers.Core().V1().Nodes()
	if err := podInf.Informer().AddIndexers(podIndexers()); err != nil {
		return nil, fmt.Errorf("creating DaemonSet controller: adding pod indexers: %w", err)
	}
	c.dsLister = dsInf.Lister()
	c.crLister = crInf.Lister()
	c.nodeLister = nodeInf.Lister()
	c.nodeStore = nodeInf.Informer().GetStore()
	c.podIndexer = podInf.Informer().GetIndexer()

	handlers := []struct {
		name string
		inf  cache.SharedIndexInformer
		h    cache.ResourceEventHandler
	}{
		{"daemonsets", dsInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.addDaemonSet, UpdateFunc: c.updateDaemonSet, DeleteFunc: c.deleteDaemonSet}},
		{"controllerrevisions", crInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.addRevision, UpdateFunc: c.updateRevision, DeleteFunc: c.deleteRevision}},
		{"pods", podInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.addPod, UpdateFunc: c.updatePod, DeleteFunc: c.deletePod}},
		{"nodes", nodeInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.addNode, UpdateFunc: c.updateNode, DeleteFunc: c.deleteNode}},
	}
	for _, h := range handlers {
		reg, err := h.inf.AddEventHandler(h.h)
		if err != nil {
			return nil, fmt.Errorf("creating DaemonSet controller: adding %s event handler: %w", h.name, err)
		}
		// The registration's HasSynced also waits for our handler to have
		// seen the initial list, not only for the store to be filled.
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
}

// retryBackoffCap caps the per-DaemonSet retry delay after failed syncs
// (client-go's default controller rate limiter goes up to 1000 s), so that a
// DaemonSet whose writes failed for a while recovers within it once the API
// server accepts them again: nothing tells the controller that a quota was
// lifted or a webhook fixed. A refusal that lasts costs one retry per cap,
// a slow-start batch of one create plus an Event and a status write. With
// 2 minutes, chaos-reject-creates at 30 nodes took 100 s to recover from a
// 30 s refusal.
const retryBackoffCap = 10 * time.Second

// newRateLimiter is client-go's default controller rate limiter (the larger
// of a per-item exponential backoff from 5 ms and a 10 qps token bucket),
// with every delay capped at retryBackoffCap.
func newRateLimiter() workqueue.TypedRateLimiter[string] {
	return cappedRateLimiter{TypedRateLimiter: workqueue.DefaultTypedControllerRateLimiter[string](), max: retryBackoffCap}
}

// cappedRateLimiter caps the delays of the limiter it wraps. (Combining a
// capped limiter with the default through MaxOf would not cap anything: MaxOf
// takes the larger delay.)
type cappedRateLimiter struct {
	workqueue.TypedRateLimiter[string]
	max time.Duration
}

func (r cappedRateLimiter) When(item string) time.Duration {
	return min(r.TypedRateLimiter.When(item), r.max)
}

// NewInformerFactory is the factory New uses when Config.Informers is nil:
// no resync, every cached object trimmed (trimObject). The harness's floor
// holds the same caches to price the watch any controller pays.
func NewInformerFactory(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(trimObject))
}

// trimObject drops what the controller never reads from cached objects, which
// dominate the memory of large caches: managedFields everywhere, a node's
// status (placement reads its name, labels and taints), and a pod's spec and
// status but for its node (spec.nodeName or the affinity pin), phase and
// conditions. Nothing writes a cached object back (pods and revisions are
// patched), and every sync test runs on trimmed caches (fixture.addToCache).
func trimObject(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	switch o := obj.(type) {
	case *corev1.Node:
		o.Status = corev1.NodeStatus{}
	case *corev1.Pod:
		o.Spec = corev1.PodSpec{NodeName: o.Spec.NodeName, Affinity: o.Spec.Affinity}
		o.Status = corev1.PodStatus{Phase: o.Status.Phase, Conditions: o.Status.Conditions}
	}
	return obj, nil
}

// Metrics returns the controller's metrics.
func (c *Controller) Metrics() *Metrics { return c.metrics }

// StartInformers starts the informers; it may be called before Run (e.g. to
// keep a warm cache while standing by for leader election) and again by Run.
func (c *Controller) StartInformers(ctx context.Context) {
	c.factory.Start(ctx.Done())
}

// HasSynced reports whether every informer has delivered its initial list
// to the controller's handlers.
func (c *Controller) HasSynced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Run starts the informers, waits for their caches, then syncs DaemonSets
// with Config.Workers workers until ctx is done. It returns after the
// workers have stopped; a Controller runs only once.
func (c *Controller) Run(ctx context.Context) error {
	logger := c.logger
	ctx = klog.NewContext(ctx, logger)
	if c.broadcaster != nil {
		c.broadcaster.StartStructuredLogging(3)
		// Not StartRecordingToSink: the same writes, with the count patches
		// built only for events the spam filter lets through (eventsink).
		writer := eventsink.NewWriter(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")}, clock.RealClock{})
		sinkCtx, stopSink := context.WithCancel(ctx)
		c.broadcaster.StartEventWatcher(func(e *corev1.Event) { writer.Write(sinkCtx, e) })
		defer c.broadcaster.Shutdown()
		defer stopSink() // first: a write waiting to retry gives up
	}
	defer c.queue.ShutDown()
	defer c.nodeQueue.ShutDown()

	c.StartInformers(ctx)
	logger.Info("Starting DaemonSet controller", "workers", c.workers, "burstReplicas", c.burstReplicas, "maxCreateBatch", c.maxCreateBatch, "slowStartInitialBatch", c.slowStartInitial, "bindMode", c.bindMode)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		// Only a cancelled context stops the wait: that is a shutdown.
		return nil
	}
	// The initial list has enqueued every DaemonSet, and each will be fully
	// synced against the current nodes, so node events seen so far (every
	// node's add, and a standby's backlog) need no routing: that would be
	// O(#nodes × #DS) predicate evaluations for nothing.
	c.nodeMu.Lock()
	clear(c.pendingNodes)
	c.nodeMu.Unlock()

	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for c.processNextWorkItem(ctx) {
			}
		})
	}
	for range nodeWorkers {
		wg.Go(func() {
			for c.processNextNodeEvent(ctx) {
			}
		})
	}
	<-ctx.Done()
	logger.Info("Shutting down DaemonSet controller")
	c.queue.ShutDown()
	c.nodeQueue.ShutDown()
	wg.Wait()
	c.writes.Wait() // ctx is done: they end at once
	return nil
}

// processNextWorkItem syncs one DaemonSet key; false means the queue is shut down.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.syncDaemonSet(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing DaemonSet failed, requeueing with backoff", "daemonset", key)
		requeueAfterError(c.queue, key)
		return true
	}
	if c.writeFailure(key) == nil {
		// Not while its writes fail: their backoff must grow (writeDone).
		c.queue.Forget(key)
	}
	return true
}

func (c *Controller) enqueue(ds *appsv1.DaemonSet) {
	key, err := cache.MetaNamespaceKeyFunc(ds)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("getting key of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err))
		return
	}
	c.queue.Add(key)
}

// enqueuePodUpdate wakes ds's sync for an event of one of its pods, at
// most its batch period later (podUpdateBatchOf): the delaying queue keeps
// the earliest of the times asked for a key, so a stream of events cannot
// push the sync back.
func (c *Controller) enqueuePodUpdate(ds *appsv1.DaemonSet) {
	key, err := cache.MetaNamespaceKeyFunc(ds)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("getting key of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err))
		return
	}
	c.addAfter(key, c.podUpdateBatchOf(key))
}

// addAfter adds key to the queue after the given time, at once if it is 0.
func (c *Controller) addAfter(key string, after time.Duration) {
	if after <= 0 {
		c.queue.Add(key)
		return
	}
	c.queue.AddAfter(key, after)
}

// podUpdateBatchOf is key's batch period (batchFor its planning time).
func (c *Controller) podUpdateBatchOf(key string) time.Duration {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	return c.batchFor(c.planCost[key])
}

// batchFor is the batch period of a DaemonSet whose plans take cost:
// PodUpdateBatch, stretched to PodUpdateBatchCostFactor times cost, up to
// maxPodUpdateBatch; 0 when PodUpdateBatch is 0.
func (c *Controller) batchFor(cost time.Duration) time.Duration {
	if c.podUpdateBatch <= 0 {
		return 0
	}
	return max(c.podUpdateBatch, min(time.Duration(c.batchFactor)*cost, maxPodUpdateBatch))
}

// notePlanCost folds the time of one of key's plans into its moving average
// (weight 1/4) and returns the batch period that follows from it.
func (c *Controller) notePlanCost(key string, took time.Duration) time.Duration {
	if c.batchFactor == 0 {
		return c.podUpdateBatch
	}
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	cost, ok := c.planCost[key]
	if ok {
		cost += (took - cost) / 4
	} else {
		cost = took
	}
	c.planCost[key] = cost
	return c.batchFor(cost)
}

// enqueueStatusUpdate wakes key's sync for an update of one of its pods that
// can change only its status (see statusOnlyUpdate): when the status may
// next be written, and no sooner than PodUpdateBatch. While kwok or the
// kubelets mark thousands of pods Ready after a create, the DaemonSet then
// syncs about once per StatusInterval instead of once per batch, and its
// status is written no later than before.
func (c *Controller) enqueueStatusUpdate(key string) {
	c.addAfter(key, max(c.podUpdateBatchOf(key), c.statusWritableIn(key)))
}

// isIdle says whether key's last sync planned an Idle plan.
func (c *Controller) isIdle(key string) bool {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	return c.idle[key]
}

func (c *Controller) setIdle(key string, idle bool) {
	c.statusMu.Lock()
	if idle {
		c.idle[key] = true
	} else {
		delete(c.idle, key)
	}
	c.statusMu.Unlock()
}

func (c *Controller) enqueueAfter(ds *appsv1.DaemonSet, after time.Duration) {
	key, err := cache.MetaNamespaceKeyFunc(ds)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("getting key of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err))
		return
	}
	c.queue.AddAfter(key, after)
}
