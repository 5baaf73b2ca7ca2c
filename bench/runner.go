package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/dsbench/dsbench/bench/apiproxy"
	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// Config is what every run of a Runner shares.
type Config struct {
	// REST is the cluster the runs use.
	REST *rest.Config
	// Kubeconfig is the same cluster as a file, for the controller process.
	Kubeconfig string
	// OwnsCluster says the cluster is a local KWOK cluster the runner may
	// reset and whose pod stages it may change. On any other cluster the
	// runner touches only what the scenario creates.
	OwnsCluster bool
	// ClusterFaults restarts the API server and compacts etcd for fault
	// steps; nil on a cluster not ours, where those steps fail.
	ClusterFaults ClusterFaults
	// Controller is the template for the controller under test; Which and
	// Binary are set per run from Binaries.
	Controller ControllerConfig
	// Binaries maps each controller to its binary; OursDirect, the same
	// program as Ours, runs Ours's unless it has an entry of its own.
	Binaries map[Controller]string
	// Nodes overrides the scenario's node count (0: its default).
	Nodes int
	// Grace is how long an invariant may be broken before it counts as a
	// violation; nil means DefaultGrace(nodes, daemonSets).
	Grace map[oracle.Kind]time.Duration
	// LogDir receives the controller logs of each run.
	LogDir string
	// Progress receives the live display; nil shows nothing.
	Progress *Progress
	// Clock is injected for tests; nil is the real clock.
	Clock clock.Clock
	// StopAtViolation ends a run at its first unexpected violation of a
	// specific kind (not a timeout): a broken controller, once caught, need
	// not be watched any longer (make mutants).
	StopAtViolation bool
	// JournalDir, when set, receives a journal of each run's oracle inputs,
	// <variant>-<scenario>[-<rep>].jsonl.gz, for Replay. Off by default.
	JournalDir string
	// Variant names what runs in the journals: a broken variant of our
	// controller, or "correct" (make mutants); "" is the controller's name.
	Variant string
	// ProfileDir, when set, receives each run's pprof profiles (Profiles
	// in the run's report): the controller's, kube-apiserver's, the
	// harness's and ClusterPprof's, from its first step to its end.
	ProfileDir string
	// ClusterPprof are the cluster's other processes to profile (etcd and
	// kwok on a cluster of ours).
	ClusterPprof []ProfileTarget
}

// DefaultGrace is how long a correct controller may take to repair a node
// before the gap counts as a violation: reacting is latency, which the
// convergence times measure. It grows with the pods a step may have to
// make, nodes × DaemonSets: at 1000 nodes the 14 seed DaemonSets took
// both controllers 148 s to create on 2 cores, which is the machine's
// throughput, not a missing pod. Duplicates and over-unavailability have no
// grace: a correct controller never causes them at all.
func DefaultGrace(nodes, daemonSets int) map[oracle.Kind]time.Duration {
	react := 30*time.Second + time.Duration(nodes*max(daemonSets, 1))*30*time.Millisecond
	return map[oracle.Kind]time.Duration{
		oracle.MissingPod:          react,
		oracle.PodOnIneligibleNode: react,
		oracle.PodOnDeletedNode:    react,
		oracle.OrphanPod:           react,
		oracle.DuplicatePods:       0,
		oracle.Overunavailable:     0,
	}
}

// CacheLag bounds how far a correct controller's cache may trail the
// oracle's view: a pod created later than this after its node was deleted
// is a violation however short it lives.
const CacheLag = 2 * time.Second

// StaleCreateLag is how long after a template change a correct controller
// may still create pods of the old one: a sync under way creates in batches
// of 250 (slow start), which at 5000 nodes takes seconds.
const StaleCreateLag = 10 * time.Second

// StallAfter is how long a rollout with room left may show no change before
// the oracle calls it stalled. A correct controller acts within a sync of the
// pod event that freed the room; 30 s leaves ample margin for a slow one.
const StallAfter = 30 * time.Second

// StatusLag is how long after convergence the status may still be wrong: the
// last pod event's sync writes it, normally within a second.
const StatusLag = 10 * time.Second

// LimitLag is how long the oracle lets a controller apply a percentage
// maxUnavailable that shrank because must-run nodes left: a correct
// controller decides on a cache that shows departures a little late.
const LimitLag = 2 * time.Second

// OracleParams are the oracle's tolerances at this size, for the report.
func OracleParams(nodes, daemonSets int) *reports.OracleParams {
	conf := oracleConfig(DefaultGrace(nodes, daemonSets))
	p := &reports.OracleParams{GraceSeconds: map[string]float64{},
		CacheLagSeconds: conf.CacheLag.Seconds(), LimitLagSeconds: conf.LimitLag.Seconds(),
		StaleCreateLagSeconds: conf.StaleCreateLag.Seconds(), StallAfterSeconds: conf.StallAfter.Seconds(),
		StatusLagSeconds: conf.StatusLag.Seconds()}
	for k, d := range conf.Grace {
		if d > 0 {
			p.GraceSeconds[string(k)] = d.Seconds()
		}
	}
	return p
}

// oracleConfig is the oracle's configuration for a run with this grace.
func oracleConfig(grace map[oracle.Kind]time.Duration) oracle.Config {
	return oracle.Config{Grace: grace, LimitLag: LimitLag, CacheLag: CacheLag,
		StaleCreateLag: StaleCreateLag, StallAfter: StallAfter, StatusLag: StatusLag}
}

// Runner plays scenarios.
type Runner struct {
	conf   Config
	client kubernetes.Interface
	clock  clock.Clock
}

// NewRunner checks the configuration.
func NewRunner(conf Config) (*Runner, error) {
	if conf.REST == nil {
		return nil, errors.New("runner: no cluster configuration")
	}
	if err := conf.Controller.checkExtraArgs(); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if conf.Clock == nil {
		conf.Clock = clock.RealClock{}
	}
	cfg := rest.CopyConfig(conf.REST)
	cfg.QPS, cfg.Burst = -1, 0
	// The harness watches every pod and node: in JSON, encoding those
	// events would cost the API server CPU that the controller under test
	// is measured with.
	cfg.ContentType = runtime.ContentTypeProtobuf
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("runner: creating client: %w", err)
	}
	return &Runner{conf: conf, client: client, clock: conf.Clock}, nil
}

// Binary is the binary the runner starts for a controller ("" for the
// floor and the external controller).
func (r *Runner) Binary(which Controller) string { return which.binary(r.conf.Binaries) }

// WithFloor returns a runner that shares r's cluster and client and paces
// the floor with conf.
func (r *Runner) WithFloor(conf FloorConfig) *Runner {
	c := *r
	c.conf.Controller.Floor = conf
	return &c
}

// ForWarmup is a copy of the runner for a warm-up run: its logs go to a
// warmup folder beside the others, and it keeps no journal.
func (r *Runner) ForWarmup() *Runner {
	c := *r
	if c.conf.LogDir != "" {
		c.conf.LogDir = filepath.Join(c.conf.LogDir, "warmup")
	}
	c.conf.JournalDir = ""
	c.conf.ProfileDir = ""
	return &c
}

// Run plays one repetition of the scenario against one controller and
// returns what it measured. It never panics on a bad cluster: a failure is
// recorded in the run's Outcome and Error, with everything measured so far.
// Every process it starts is stopped before it returns.
func (r *Runner) Run(ctx context.Context, sc *scenarios.Scenario, which Controller, rep int) reports.Run {
	run := reports.Run{Scenario: sc.Metadata.Name, Controller: string(which), Repetition: rep, Start: r.clock.Now()}
	if which.Measured() {
		run.APIRequests = map[string]int64{}
	}
	if r.conf.Nodes > 0 {
		scaled, err := scenarios.Scale(sc, r.conf.Nodes)
		if err != nil {
			return failed(run, r.clock, err)
		}
		sc = scaled
	}
	run.Nodes = sc.DefaultNodes()
	switch which {
	case Floor:
		run.ControllerArgs = r.conf.Controller.Floor.Args()
		if why := floorUnsupported(sc); why != "" {
			return failed(run, r.clock, errors.New(why))
		}
	case External:
		if err := checkExternal([]Controller{which}, r.conf.OwnsCluster); err != nil {
			return failed(run, r.clock, err)
		}
		if why := externalUnsupported(sc); why != "" {
			return failed(run, r.clock, errors.New(why))
		}
	}
	s := &runState{r: r, sc: sc, which: which, run: &run, pools: map[string]*poolState{}}
	err := s.play(ctx)
	run.End = r.clock.Now()
	run.ClusterRestarts = s.clusterRestarts
	if s.stopped != "" && ctx.Err() == nil {
		err = errors.New(s.stopped)
	}
	if err != nil {
		run.Outcome, run.Error = reports.OutcomeFailed, err.Error()
	} else {
		run.Outcome = reports.OutcomeOK
	}
	return run
}

func failed(run reports.Run, clk clock.PassiveClock, err error) reports.Run {
	run.End = clk.Now()
	run.Outcome, run.Error = reports.OutcomeFailed, err.Error()
	return run
}

// controllerUnderTest is what the steps do to the controller: a process
// (ours, ours-direct, upstream) or the floor in the harness's own process.
// The external controller is none: the harness has nothing of it to hold.
type controllerUnderTest interface {
	Kill()
	Restart(ctx context.Context) error
	Stop()
	Usage() ProcessUsage
	APIRequests(ctx context.Context) (map[string]float64, error)
}

type poolState struct {
	pool scenarios.NodePool
	next int
	// nodes are the pool's nodes that exist: created and acknowledged, and
	// not chosen to leave. Steps pick their nodes among these only, so a
	// step in a parallel branch never picks a node whose join is still in
	// flight (it would not be found).
	nodes map[string]bool
}

// runState is one run in progress: the executor that performs the steps' I/O
// around its Core.
type runState struct {
	r     *Runner
	sc    *scenarios.Scenario
	which Controller
	run   *reports.Run

	ctrl    controllerUnderTest
	watcher *Watcher
	// proxy stands between the controller and the API server for the whole
	// run when the scenario has a fault that acts there (nil otherwise), and
	// ctrlKubeconfig is how the controller reaches it.
	proxy          *apiproxy.Proxy
	ctrlKubeconfig string

	// The observe loop owns the core and the pools, and sets stopped: other
	// goroutines reach them only through do.
	core     *Core
	calls    chan func()
	stopPlay context.CancelFunc // ends the run early (StopAtViolation)
	stopped  string             // why it ended early
	pools    map[string]*poolState
	skipped  map[*scenarios.Step][]string
	// nodeReset is what reset did to an owned cluster's nodes (nil when
	// the cluster is not ours): which nodes each pool keeps.
	nodeReset *nodeReset
	// cpuAtStart is the harness's CPU when the run began.
	cpuAtStart time.Duration
	// closedWatchesAtStart is kube-apiserver's count of watches it closed
	// as unresponsive when the run began; nil if it could not be read
	// (a cluster that does not let the harness read /metrics).
	closedWatchesAtStart map[string]float64
	// kwokClosesAtStart is how many times kube-apiserver had closed kwok's
	// pod watch when the run began; kwokClosesKnown is false where that
	// cannot be read (a cluster not ours).
	kwokClosesAtStart int
	kwokClosesKnown   bool
	// clusterRestarts are the cluster's components the supervisor started
	// again during the run.
	clusterRestarts []reports.ClusterRestart
}

func (s *runState) play(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.stopPlay = cancel
	s.cpuAtStart = selfCPU()
	mctx, mcancel := context.WithTimeout(ctx, 10*time.Second)
	s.closedWatchesAtStart, _ = closedWatches(mctx, s.r.client)
	s.kwokClosesAtStart, s.kwokClosesKnown = kwokPodWatchCloses(s.r.conf.ClusterFaults)
	mcancel()
	grace := s.r.conf.Grace
	if grace == nil {
		grace = DefaultGrace(s.sc.DefaultNodes(), len(s.sc.DaemonSets()))
	}
	b := s.sc.Cluster.Pods
	oc := oracleConfig(grace)
	// The floor writes no status; every other invariant applies to it.
	oc.SkipStatus = s.which == Floor
	journal, err := s.startJournal(oc)
	if err != nil {
		return err
	}
	defer func() {
		if jerr := journal.Close(); jerr != nil && err == nil {
			err = jerr
		}
	}()
	s.core = NewCore(CoreConfig{
		Scenario:      s.sc,
		Oracle:        oc,
		PodStallAfter: 4 * (b.ReadyDelay.Duration + b.ReadyJitter.Duration),
		// kwok's delete stage waits DeleteDelay plus up to as much jitter.
		DeleteStallAfter: 4 * 2 * b.DeleteDelay.Duration,
		StopAtViolation:  s.r.conf.StopAtViolation,
		Journal:          journal,
	})

	s.progress("preparing cluster")
	if err := s.reviveBeforeRun(ctx); err != nil {
		return err
	}
	sup := s.supervise(ctx)
	defer func() { s.clusterRestarts = sup.finish() }()
	resetStart := s.r.clock.Now()
	if err := s.reset(ctx); err != nil {
		return fmt.Errorf("resetting cluster: %w", err)
	}
	s.setupSeconds("setup-reset", resetStart)
	if s.r.conf.OwnsCluster {
		b := s.sc.Cluster.Pods
		opts := kwok.StageOptions{ReadyDelay: b.ReadyDelay.Duration, ReadyJitter: b.ReadyJitter.Duration, DeleteDelay: b.DeleteDelay.Duration,
			FailImages: b.FailImagesRegexp(), NeverReadyImages: b.NeverReadyImagesRegexp()}
		if err := kwok.ApplyStages(ctx, s.r.conf.REST, opts); err != nil {
			return err
		}
	}
	if err := s.createPools(ctx); err != nil {
		return err
	}
	if err := s.createObjects(ctx); err != nil {
		return err
	}

	// Watch before the controller starts, so that its first action is seen.
	s.watcher = NewWatcher(s.r.client, s.r.clock)
	watchCtx, stopWatch := context.WithCancel(ctx)
	observed, quit := make(chan struct{}), make(chan struct{})
	s.calls = make(chan func())
	go s.watcher.Run(watchCtx)
	go func() {
		defer close(observed)
		s.observe(watchCtx, quit)
	}()
	defer func() {
		stopWatch()
		close(quit)
		<-observed
	}()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return s.watcher.Synced(), nil
	}); err != nil {
		return fmt.Errorf("waiting for the harness's watches: %w", err)
	}

	if s.sc.UsesAPIProxy() {
		closeProxy, err := s.startAPIProxy()
		if err != nil {
			return err
		}
		defer closeProxy() // after the controller has stopped
	}
	ctrlStart := s.r.clock.Now()
	if err := s.startController(ctx); err != nil {
		return err
	}
	defer s.stopController()
	s.setupSeconds("setup-controller-start", ctrlStart)
	var prof *profiler
	if dir := s.r.conf.ProfileDir; dir != "" {
		prefix := fmt.Sprintf("%s-%s-%d", s.sc.Metadata.Name, s.which, s.run.Repetition)
		prof = startProfiler(ctx, dir, prefix, s.profileTargets(), ProfileWindow, s.r.clock)
		defer func() { s.run.Profiles = prof.finish(ctx) }() // a run that failed early
	}

	runErr := s.playSteps(ctx, s.sc.Steps, "steps")
	if runErr == nil {
		// Every scenario ends converged: an implicit barrier closes it.
		runErr = s.waitConverged(ctx, &scenarios.WaitStep{}, "final waitConverged")
	}
	if runErr == nil {
		s.waitStatusSettled(ctx)
	}
	if prof != nil {
		// Before collect stops the controller, which would cut its window
		// in flight; so a profiled run's usage includes that wait.
		s.run.Profiles = prof.finish(ctx)
	}
	s.collect(ctx)
	return runErr
}

// startJournal opens the run's journal when the runner records them; nil
// otherwise.
func (s *runState) startJournal(oc oracle.Config) (*JournalRecorder, error) {
	dir := s.r.conf.JournalDir
	if dir == "" {
		return nil, nil
	}
	variant := s.r.conf.Variant
	if variant == "" {
		variant = string(s.which)
	}
	name := variant + "-" + s.sc.Metadata.Name
	if s.run.Repetition > 0 {
		name += fmt.Sprintf("-%d", s.run.Repetition)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the journal directory: %w", err)
	}
	return NewJournalRecorder(filepath.Join(dir, name+".jsonl.gz"), JournalHeader{
		Scenario: s.sc.Metadata.Name, Variant: variant, Controller: string(s.which), Origin: "live",
		Nodes: s.sc.DefaultNodes(), Oracle: oc,
	})
}

func (s *runState) progress(format string, args ...any) {
	if p := s.r.conf.Progress; p != nil {
		p.Step(fmt.Sprintf("%s %s#%d: %s", s.sc.Metadata.Name, s.which, s.run.Repetition, fmt.Sprintf(format, args...)))
	}
}

// deletePodsAttempts bounds deletePods: each attempt is one request of up
// to the client's timeout.
const deletePodsAttempts = 6

// deletePods deletes every pod in ns. One DeleteCollection of 15,000 pods
// outlasts the client's 60 s timeout on a loaded 2-core machine, and the
// server stops where it was; each retry deletes what is left.
func deletePods(ctx context.Context, c kubernetes.Interface, ns string, grace *int64) error {
	var err error
	for range deletePodsAttempts {
		err = c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: grace}, metav1.ListOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
	}
	return fmt.Errorf("%d attempts: %w", deletePodsAttempts, err)
}

// reset removes what earlier runs left: on an owned cluster every fake node
// and every DaemonSet, pod and revision in any namespace; elsewhere those in
// the scenario's namespaces only.
func (s *runState) reset(ctx context.Context) error {
	c := s.r.client
	prop := metav1.DeletePropagationBackground
	zero := int64(0)
	namespaces := s.namespaces()
	if s.r.conf.OwnsCluster {
		list, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing namespaces: %w", err)
		}
		namespaces = nil
		for _, ns := range list.Items {
			namespaces = append(namespaces, ns.Name)
		}
	}
	// Pods and nodes do not depend on each other, so they are reset at once.
	if !s.r.conf.OwnsCluster {
		s.progress("deleting DaemonSets and pods in %d namespaces", len(namespaces))
	}
	var g errgroup.Group
	g.Go(func() error {
		for _, ns := range namespaces {
			// A fault left behind by a run that broke off.
			if err := c.CoreV1().ResourceQuotas(ns).Delete(ctx, RejectCreatesQuota, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting ResourceQuota %s/%s: %w", ns, RejectCreatesQuota, err)
			}
			if err := c.AppsV1().DaemonSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &prop}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting DaemonSets in %s: %w", ns, err)
			}
			if err := c.AppsV1().ControllerRevisions(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting ControllerRevisions in %s: %w", ns, err)
			}
			if err := deletePods(ctx, c, ns, &zero); err != nil {
				return fmt.Errorf("deleting pods in %s: %w", ns, err)
			}
		}
		return nil
	})
	var removed []string
	s.nodeReset = nil
	if s.r.conf.OwnsCluster {
		g.Go(func() error {
			list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwok.PoolLabel})
			if err != nil {
				return fmt.Errorf("listing nodes: %w", err)
			}
			plan := planNodeReset(list.Items, s.kwokPools())
			removed, s.nodeReset = plan.Remove, &plan
			s.progress("deleting DaemonSets and pods in %d namespaces; deleting %d nodes and restoring %d to their pool's spec",
				len(namespaces), len(plan.Remove), len(plan.Restore))
			if err := kwok.DeleteNodes(ctx, c, plan.Remove, 0); err != nil {
				return err
			}
			return kwok.ResetNodes(ctx, c, plan.Restore, 0)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	s.progress("waiting until no pod, DaemonSet or removed node is left")
	// Wait until the slate is clean, so that no leftover is measured.
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, ns := range namespaces {
			pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil || len(pods.Items) > 0 {
				return false, nil
			}
			dss, err := c.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil || len(dss.Items) > 0 {
				return false, nil
			}
		}
		for _, name := range removed {
			if _, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
}

// pools are the scenario's node pools as kwok builds them.
func (s *runState) kwokPools() []kwok.NodePool {
	var out []kwok.NodePool
	for _, p := range s.sc.Cluster.Pools {
		out = append(out, s.kwokPool(p, 0, p.Count))
	}
	return out
}

// nodeReset is what a run does to the nodes an earlier run left so that
// each pool has its count of nodes exactly as declared.
type nodeReset struct {
	// Restore are nodes to write back to their pool's spec (labels, taints,
	// schedulability): cheaper than deleting and recreating them.
	Restore []*corev1.Node
	// Remove are nodes of no pool, beyond a pool's count, or that are not
	// Ready, have other capacity or carry a taint of the node lifecycle.
	Remove []string
	// Keep are, per pool prefix, the nodes that stay (restored or not).
	Keep map[string][]string
	// Next is, per pool prefix, the first index above every node of that
	// prefix seen: new nodes take fresh names from there.
	Next map[string]int
}

// planNodeReset decides, for each existing node, whether it stays as it is,
// is restored, or is removed. Pools keep their lowest-numbered reusable
// nodes; createPools tops them up with nodes of fresh names. A name is
// never used again for a new node, because kwok v0.8.0 leaves pods bound
// to a node re-created under a recent name Pending
// (TestKwokStallsPodsOfReusedNodeNames).
func planNodeReset(have []corev1.Node, pools []kwok.NodePool) nodeReset {
	r := nodeReset{Keep: map[string][]string{}, Next: map[string]int{}}
	byPrefix := map[string]kwok.NodePool{}
	for _, p := range pools {
		byPrefix[p.Prefix] = p
		r.Next[p.Prefix] = p.Count
	}
	sorted := slices.Clone(have)
	slices.SortFunc(sorted, func(a, b corev1.Node) int {
		pa, ia, _ := kwok.SplitNodeName(a.Name)
		pb, ib, _ := kwok.SplitNodeName(b.Name)
		if c := strings.Compare(pa, pb); c != 0 {
			return c
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a.Name, b.Name)
	})
	for i := range sorted {
		n := &sorted[i]
		prefix, idx, ok := kwok.SplitNodeName(n.Name)
		if ok {
			r.Next[prefix] = max(r.Next[prefix], idx+1)
		}
		p, inPool := byPrefix[prefix]
		if !ok || !inPool || n.Labels[kwok.PoolLabel] != prefix || len(r.Keep[prefix]) >= p.Count {
			r.Remove = append(r.Remove, n.Name)
			continue
		}
		want := p.Node(idx)
		if !reusable(n, want) {
			r.Remove = append(r.Remove, n.Name)
			continue
		}
		r.Keep[prefix] = append(r.Keep[prefix], n.Name)
		if !sameSpec(n, want) {
			r.Restore = append(r.Restore, want)
		}
	}
	sort.Strings(r.Remove)
	sort.Slice(r.Restore, func(i, j int) bool { return r.Restore[i].Name < r.Restore[j].Name })
	return r
}

// reusable says whether a node can become want by a write of its labels,
// taints and schedulability: it is Ready, is not being deleted, has want's
// capacity and carries no taint of the node lifecycle (which its controller
// manages).
func reusable(have, want *corev1.Node) bool {
	if !kwok.NodeReady(have) || have.DeletionTimestamp != nil {
		return false
	}
	for _, t := range have.Spec.Taints {
		if kwok.IsLifecycleTaint(t.Key) {
			return false
		}
	}
	for name, q := range want.Status.Capacity {
		if hq, ok := have.Status.Capacity[name]; !ok || hq.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// sameSpec says whether the node's labels, taints and schedulability are
// want's (the apiserver's own labels aside).
func sameSpec(have, want *corev1.Node) bool {
	if have.Spec.Unschedulable != want.Spec.Unschedulable || len(have.Spec.Taints) != len(want.Spec.Taints) {
		return false
	}
	for k, v := range want.Labels {
		if hv, ok := have.Labels[k]; !ok || hv != v {
			return false
		}
	}
	for k := range have.Labels {
		if _, ok := want.Labels[k]; !ok && !kwok.IsAPIServerLabel(k) {
			return false
		}
	}
	for i, t := range want.Spec.Taints {
		h := have.Spec.Taints[i]
		if h.Key != t.Key || h.Value != t.Value || h.Effect != t.Effect {
			return false
		}
	}
	return true
}

func (s *runState) namespaces() []string {
	set := map[string]bool{}
	for _, ds := range s.sc.DaemonSets() {
		set[ds.Namespace] = true
	}
	var out []string
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

func (s *runState) createPools(ctx context.Context) error {
	total := 0
	for _, p := range s.sc.Cluster.Pools {
		ps := &poolState{pool: p, next: p.Count, nodes: map[string]bool{}}
		kp := s.kwokPool(p, 0, p.Count)
		if r := s.nodeReset; r != nil {
			// An owned cluster: the pool keeps what reset kept and gets
			// nodes of fresh names for the rest.
			for _, n := range r.Keep[kp.Prefix] {
				ps.nodes[n] = true
			}
			missing := p.Count - len(r.Keep[kp.Prefix])
			ps.next = freshNodeIndex(kp.Prefix, r.Next[kp.Prefix], missing)
			kp = s.kwokPool(p, ps.next-missing, missing)
		}
		for _, n := range kp.NodeNames() {
			ps.nodes[n] = true
		}
		s.pools[p.Name] = ps
		total += p.Count
		s.progress("creating the missing nodes of pool %s (%d)", p.Name, kp.Count)
		if err := kwok.CreateNodes(ctx, s.r.client, kp, 0); err != nil {
			return err
		}
	}
	s.progress("waiting for %d nodes to be Ready and schedulable", total)
	start := s.r.clock.Now()
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := s.r.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwok.PoolLabel, ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		ready := 0
		for i := range list.Items {
			if kwok.NodeSchedulable(&list.Items[i]) {
				ready++
			}
		}
		if p := s.r.conf.Progress; p != nil {
			p.Status(func() string { return fmt.Sprintf("%d/%d nodes Ready and schedulable", ready, total) })
		}
		return ready >= total, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d nodes to be Ready: %w", total, err)
	}
	s.setupSeconds("setup-nodes-schedulable", start)
	return nil
}

// usedNodeIndex is, per pool prefix, the first index no node of this
// process has had: nodes that left within a run are gone before the next
// run's reset can see their names.
var usedNodeIndex = struct {
	sync.Mutex
	next map[string]int
}{next: map[string]int{}}

// freshNodeIndex reserves n node indices of prefix at from or above, never
// used before by this process, and returns the first index after them.
func freshNodeIndex(prefix string, from, n int) int {
	usedNodeIndex.Lock()
	defer usedNodeIndex.Unlock()
	start := max(from, usedNodeIndex.next[prefix])
	usedNodeIndex.next[prefix] = start + n
	return start + n
}

// setupSeconds records how long a setup phase took since start: setup is
// not measured against the controller, but it is most of a suite's overhead.
func (s *runState) setupSeconds(name string, start time.Time) {
	s.run.Extra = append(s.run.Extra, reports.ExtraMetric{Name: name, Unit: "s", Value: s.r.clock.Since(start).Seconds()})
}

func (s *runState) kwokPool(p scenarios.NodePool, start, count int) kwok.NodePool {
	return kwok.NodePool{Prefix: p.Prefix(), Start: start, Count: count, Labels: p.Labels, Taints: p.Taints, Capacity: p.Capacity}
}

// createObjects creates the namespaces and the workloads' other objects
// (ServiceAccounts, ConfigMaps): everything but the DaemonSets.
func (s *runState) createObjects(ctx context.Context) error {
	for _, ns := range s.namespaces() {
		_, err := s.r.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	for _, w := range s.sc.Workloads {
		for _, obj := range w.Objects {
			if err := createUnstructured(ctx, s.r.conf.REST, obj); err != nil {
				return err
			}
		}
	}
	// Without a ServiceAccount the apiserver refuses the pods; the seeds name
	// ones their manifests do not create.
	for _, ds := range s.sc.DaemonSets() {
		sa := ds.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			continue
		}
		_, err := s.r.client.CoreV1().ServiceAccounts(ds.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ds.Namespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ServiceAccount %s/%s: %w", ds.Namespace, sa, err)
		}
	}
	return nil
}

// startAPIProxy puts the harness's proxy between the controller and the
// API server for the whole run, so that slowAPI and writeTimeouts faults
// can act on the controller's requests; the harness's own watches and steps go to the
// API server directly, so that the oracle's view is not delayed. Only
// scenarios with such a fault pay for the extra hop. It returns what closes
// the proxy, which the caller calls once the controller has stopped.
func (s *runState) startAPIProxy() (func(), error) {
	p, err := apiproxy.New(apiproxy.Config{Upstream: s.r.conf.REST})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "dsbench-apiproxy-")
	if err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("creating the API proxy's kubeconfig: %w", err)
	}
	closeProxy := func() {
		if err := p.Close(); err != nil {
			s.progress("%v", err)
		}
		_ = os.RemoveAll(dir)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := p.WriteKubeconfig(path); err != nil {
		closeProxy()
		return nil, err
	}
	s.progress("the controller talks to the API server through %s", p.URL())
	s.proxy, s.ctrlKubeconfig = p, path
	return closeProxy, nil
}

func (s *runState) startController(ctx context.Context) error {
	conf := s.r.conf.Controller
	conf.Which = s.which
	conf.Binary = s.which.binary(s.r.conf.Binaries)
	conf.Kubeconfig = s.r.conf.Kubeconfig
	if s.ctrlKubeconfig != "" {
		conf.Kubeconfig = s.ctrlKubeconfig
	}
	if s.r.conf.LogDir != "" {
		conf.LogPath = filepath.Join(s.r.conf.LogDir, fmt.Sprintf("%s-%s-%d.log", s.sc.Metadata.Name, s.which, s.run.Repetition))
	}
	if s.which == External {
		s.progress("starting nothing: the external controller runs already")
		return nil
	}
	if s.which == Floor {
		s.progress("starting the floor")
		client := s.r.client
		if s.proxy != nil {
			var err error
			if client, err = proxiedClient(s.proxy); err != nil {
				return err
			}
		}
		informers := conf
		informers.Workers, informers.ExtraArgs, informers.OursEnv = 1, nil, nil
		if informers.LogPath != "" {
			informers.LogPath = strings.TrimSuffix(informers.LogPath, ".log") + "-informers.log"
		}
		f := newFloorController(conf.Floor, client, s.r.clock, conf.LogPath, &informers, func(fn func(*oracle.World, int)) {
			s.do(func() { fn(s.core.World(), s.core.Observed()) })
		})
		if err := f.Restart(ctx); err != nil {
			return err
		}
		s.ctrl = f
		return nil
	}
	if conf.Binary == "" {
		return fmt.Errorf("no binary for the %s controller", s.which)
	}
	s.progress("starting the %s controller", s.which)
	p, err := StartController(ctx, conf)
	if err != nil {
		return err
	}
	s.ctrl = p
	return nil
}

// profileTargets are the processes a profiled run reads: the controller
// (the floor's informers for the floor; nothing for the floor without
// them or an external controller), kube-apiserver, and the cluster's own.
func (s *runState) profileTargets() []ProfileTarget {
	var ts []ProfileTarget
	if c, ok := s.ctrl.(interface{ PprofURL() string }); ok && c.PprofURL() != "" {
		name := string(s.which)
		if s.which == Floor {
			name = "floor-informers"
		}
		ts = append(ts, pprofHTTPTarget(name, c.PprofURL, profileClient))
	}
	ts = append(ts, apiserverPprofTarget(s.r.client))
	return append(ts, s.r.conf.ClusterPprof...)
}

// proxiedClient is a client with the harness's settings that goes through
// the proxy: the floor's, which plays the controller in the harness.
func proxiedClient(p *apiproxy.Proxy) (kubernetes.Interface, error) {
	cfg := &rest.Config{Host: p.URL(), QPS: -1}
	cfg.ContentType = runtime.ContentTypeProtobuf
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the floor's client through the API proxy: %w", err)
	}
	return client, nil
}

func (s *runState) stopController() {
	if s.ctrl != nil {
		s.ctrl.Stop()
	}
}

// do runs fn on the goroutine that owns the core and the pools, the
// observe loop, and waits for it. Before the loop starts, the caller is the
// only goroutine and runs fn itself.
func (s *runState) do(fn func()) {
	if s.calls == nil {
		fn()
		return
	}
	done := make(chan struct{})
	s.calls <- func() {
		defer close(done)
		fn()
	}
	<-done
}

// observe owns the core until quit: it feeds it the watch's events, moves
// it on with the clock and runs the steps' calls (do), one at a time, so
// that the core needs no lock. Once the watch ends it only runs calls.
func (s *runState) observe(ctx context.Context, quit <-chan struct{}) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	ticks := tick.C
	events := s.watcher.Events()
	for {
		select {
		case <-quit:
			return
		case fn := <-s.calls:
			fn()
		case ev, ok := <-events:
			if !ok {
				events, ticks = nil, nil
				continue
			}
			s.core.Observe(ev, s.r.clock.Now())
		case <-ticks:
			r := s.core.Tick(s.r.clock.Now(), len(events) == 0)
			if r.Stop != "" {
				s.stopped = r.Stop
				s.stopPlay()
			}
			for _, key := range r.Nudge {
				go s.nudge(ctx, key)
			}
			if p := s.r.conf.Progress; p != nil {
				p.Status(s.core.Status)
			}
		}
	}
}

// waitStatusSettled gives the DaemonSets' status writes up to StatusLag after
// the final convergence, so that the oracle judges every run's status.
func (s *runState) waitStatusSettled(ctx context.Context) {
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, StatusLag+2*time.Second, true, func(context.Context) (bool, error) {
		var settled bool
		s.do(func() { settled = s.core.StatusSettled() })
		return settled, nil
	})
}

// nudge touches a pod that kwok left Pending or terminating, so that kwok
// sees an event for it again (see stallTracker).
func (s *runState) nudge(ctx context.Context, key string) {
	ns, name, _ := strings.Cut(key, "/")
	err := kwok.NudgePod(ctx, s.r.client, ns, name, s.r.clock.Now())
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		s.progress("nudging stalled pod %s: %v", key, err)
	}
}

// selfCPU is this process's user and system CPU so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reserveNodes takes n node indices for a pool's joining nodes and returns
// the index after them. On an owned cluster they are fresh (see
// planNodeReset); elsewhere they follow the pool's own count, as before.
func (s *runState) reserveNodes(ps *poolState, n int) int {
	if s.nodeReset == nil {
		return ps.next + n
	}
	return freshNodeIndex(s.kwokPool(ps.pool, 0, 0).Prefix, ps.next, n)
}
