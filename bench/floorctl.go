package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/dsbench/dsbench/bench/floor"
	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/scenarios"
)

// FloorConfig paces the floor controller and says how it binds (see Floor).
type FloorConfig struct {
	// InFlight bounds the API calls (creates, deletes, adoptions) under way
	// at once; <= 0 means DefaultFloorInFlight. On a small machine the
	// cluster is CPU-bound and more is not faster.
	InFlight int
	// QPS, when > 0, caps the calls started per second.
	QPS float64
	// Bind is how its pods reach their nodes; "" means floor.BindNodeName.
	Bind floor.Binding
	// Watch has the floor also hold the informers our controller holds
	// (DaemonSets, revisions, pods and nodes, trimmed as ours trims them),
	// in a process of its own whose CPU is the floor's: the floor of a
	// controller that pays for reading the cluster, as every controller
	// does, and does nothing else with it.
	Watch bool
}

// DefaultFloorInFlight is a FloorConfig's pacing when it has none, and the
// least FloorPacing gives.
const DefaultFloorInFlight = 32

// FloorPacing is the floor's calls in flight at nodes when none are given:
// a tenth of the nodes as the nearest power of two, at least
// DefaultFloorInFlight. On 2 cores more in flight brings the pods sooner
// and their Ready no sooner (kwok's pace); at 5000 nodes a fixed 32 kept
// the floor's pods 2.5 times slower than 512 did (SCALE.md).
func FloorPacing(nodes int) int {
	return pacingNear(float64(nodes) / 10)
}

// FloorPacings are the pacings a search tries at nodes when none are given:
// a quarter of FloorPacing and FloorPacing, each at least
// DefaultFloorInFlight, once each (32 and 128 at 1000 nodes, 128 and 512 at
// 5000).
func FloorPacings(nodes int) []int {
	low, high := pacingNear(float64(nodes)/40), FloorPacing(nodes)
	if low == high {
		return []int{high}
	}
	return []int{low, high}
}

// pacingNear is the power of two nearest x (in ratio), at least
// DefaultFloorInFlight.
func pacingNear(x float64) int {
	if x <= DefaultFloorInFlight {
		return DefaultFloorInFlight
	}
	return 1 << int(math.Round(math.Log2(x)))
}

// Args describe the pacing for the report, as a command line would.
func (c FloorConfig) Args() []string {
	return append([]string{"--floor-inflight=" + strconv.Itoa(c.inFlight()), "--floor-qps=" + strconv.FormatFloat(c.QPS, 'f', -1, 64)},
		c.optionArgs()...)
}

// optionArgs name the binding and the watch when they are not the
// defaults, so that reports from before the choices read the same.
func (c FloorConfig) optionArgs() []string {
	var args []string
	if c.Bind != "" && c.Bind != floor.BindNodeName {
		args = append(args, "--floor-bind="+string(c.Bind))
	}
	if c.Watch {
		args = append(args, "--floor-watch")
	}
	return args
}

func (c FloorConfig) bind() floor.Binding {
	if c.Bind == "" {
		return floor.BindNodeName
	}
	return c.Bind
}

func (c FloorConfig) inFlight() int {
	if c.InFlight <= 0 {
		return DefaultFloorInFlight
	}
	return c.InFlight
}

// Floor timing: how often the loop looks for work, how often it re-plans
// with no new event (availability can change by time alone), and how long
// an expectation waits for the view, once its call has answered, before it
// is dropped.
const (
	floorTick       = 20 * time.Millisecond
	floorIdleReplan = 250 * time.Millisecond
	floorExpectTTL  = 30 * time.Second
)

// floorController runs the floor inside the harness: it plans on the
// oracle's own view (taken on the observe goroutine with runState.do) and
// issues the plan's calls, at most InFlight at once. It remembers the calls
// it issued until the view shows them (its expectations), so that a create
// is never issued twice for one node.
type floorController struct {
	conf   FloorConfig
	client kubernetes.Interface
	clock  clock.Clock
	// snapshot runs fn on the goroutine that owns the Core.
	snapshot func(fn func(w *oracle.World, observed int))
	logPath  string

	mu       sync.Mutex
	creating map[string]floorExpectation // "<ds>|<node>"
	deleting map[string]floorExpectation // pod key
	adopting map[string]floorExpectation // pod key
	requests map[string]float64          // by HTTP method
	dirty    bool                        // a call ended since the last plan
	// view is the floor's read of the oracle's view, kept between plans;
	// only input and planCalls use it, one after the other.
	view floorView

	// informers is the process holding the floor's informers (Watch), and
	// informersConf how to start it; nil without Watch.
	informers     *ControllerProcess
	informersConf *ControllerConfig

	cancel  context.CancelFunc
	done    chan struct{}
	running sync.WaitGroup
	log     *slog.Logger
	logF    *os.File
}

type floorExpectation struct {
	// answered is when the call returned; zero while it is in flight. A
	// call in flight never expires: on a saturated API server a create can
	// wait in its queue for longer than the TTL and still succeed, and
	// dropping its expectation then made a second pod on 115 nodes.
	answered time.Time
	name     string // a create's pod name, once the API answered
}

// expired says whether the view has not shown the call's effect for the
// TTL since it answered.
func (e floorExpectation) expired(now time.Time) bool {
	return !e.answered.IsZero() && now.Sub(e.answered) > floorExpectTTL
}

// newFloorController returns a floor that is not running yet. informers
// starts the process of its informers when conf.Watch (its Which is Floor).
func newFloorController(conf FloorConfig, client kubernetes.Interface, clk clock.Clock, logPath string,
	informers *ControllerConfig, snapshot func(fn func(w *oracle.World, observed int))) *floorController {
	f := &floorController{conf: conf, client: client, clock: clk, logPath: logPath, snapshot: snapshot,
		requests: map[string]float64{}, log: slog.New(slog.DiscardHandler)}
	if conf.Watch {
		f.informersConf = informers
	}
	f.forget()
	return f
}

// PprofURL is where the floor's informers serve pprof; "" without them.
func (f *floorController) PprofURL() string {
	if f.informers == nil {
		return ""
	}
	return f.informers.PprofURL()
}

// startInformers starts (or restarts) the process of the floor's informers
// and waits until its caches have synced, as a controller's would before
// it acts.
func (f *floorController) startInformers(ctx context.Context) error {
	switch {
	case f.informersConf == nil:
		return nil
	case f.informersConf.Binary == "":
		return errors.New("the floor's informers (--floor-watch): no dsbench binary to start")
	case f.informers == nil:
		p, err := StartController(ctx, *f.informersConf)
		if err != nil {
			return fmt.Errorf("starting the floor's informers: %w", err)
		}
		f.informers = p
		return nil
	default:
		if err := f.informers.Restart(ctx); err != nil {
			return fmt.Errorf("restarting the floor's informers: %w", err)
		}
		return nil
	}
}

// forget drops every expectation, as a restarted process would.
func (f *floorController) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creating, f.deleting, f.adopting = map[string]floorExpectation{}, map[string]floorExpectation{}, map[string]floorExpectation{}
	f.view = floorView{}
}

// Restart starts the loop (again); a restarted floor remembers nothing, as a
// restarted process would not.
func (f *floorController) Restart(ctx context.Context) error {
	if f.done != nil {
		return errors.New("restart: the floor is still running")
	}
	// First, so that a failed start leaves no log file open.
	if err := f.startInformers(ctx); err != nil {
		return err
	}
	if err := f.openLog(); err != nil {
		if f.informers != nil {
			f.informers.Stop()
		}
		return err
	}
	f.forget()
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel, f.done = cancel, make(chan struct{})
	f.log.Info("floor started", "inFlight", f.conf.inFlight(), "qps", f.conf.QPS, "bind", f.conf.bind())
	go func() {
		defer close(f.done)
		f.loop(loopCtx)
	}()
	return nil
}

func (f *floorController) openLog() error {
	if f.logPath == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(f.logPath), 0o755); err != nil {
		return fmt.Errorf("creating log dir: %w", err)
	}
	file, err := os.OpenFile(f.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening the floor's log: %w", err)
	}
	f.logF, f.log = file, slog.New(slog.NewTextHandler(file, nil))
	return nil
}

// Kill ends the loop at once; calls under way are cancelled. Its
// informers' process gets SIGKILL, as a crash.
func (f *floorController) Kill() {
	if f.informers != nil {
		f.informers.Kill()
	}
	f.stopLoop()
}

// Stop ends the loop and waits for its calls, and stops its informers'
// process. Safe to repeat.
func (f *floorController) Stop() {
	if f.informers != nil {
		f.informers.Stop()
	}
	f.stopLoop()
}

func (f *floorController) stopLoop() {
	if f.done == nil {
		return
	}
	f.cancel()
	<-f.done
	f.running.Wait()
	f.log.Info("floor stopped")
	if f.logF != nil {
		_ = f.logF.Close()
		f.logF, f.log = nil, slog.New(slog.DiscardHandler)
	}
	f.done = nil
}

// Usage is its informers' process's CPU (Watch), else zero: the floor
// itself runs in the harness's process, whose CPU the report counts as the
// harness's. Their memory is left out: it is the harness's binary's, twice
// the controller's size, and a memory row would compare the binaries.
func (f *floorController) Usage() ProcessUsage {
	if f.informers == nil {
		return ProcessUsage{}
	}
	return ProcessUsage{CPUSeconds: f.informers.Usage().CPUSeconds}
}

// APIRequests counts the floor's own calls by method.
func (f *floorController) APIRequests(context.Context) (map[string]float64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]float64, len(f.requests))
	for k, v := range f.requests {
		out[k] = v
	}
	return out, nil
}

func (f *floorController) loop(ctx context.Context) {
	tick := time.NewTicker(floorTick)
	defer tick.Stop()
	limit := f.conf.inFlight()
	sem := make(chan struct{}, limit)
	var (
		lastObserved = -1
		lastPlan     time.Time
		gap          = floorTick
		tokens       = 1.0
		lastRefill   = f.clock.Now()
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := f.clock.Now()
		if f.conf.QPS > 0 {
			burst := max(1, f.conf.QPS*floorTick.Seconds())
			tokens = min(burst, tokens+now.Sub(lastRefill).Seconds()*f.conf.QPS)
			lastRefill = now
		}
		free := limit - len(sem)
		if free == 0 || now.Sub(lastPlan) < gap {
			continue
		}
		var (
			in     floor.Input
			dss    map[string]*appsv1.DaemonSet
			replan bool
		)
		f.snapshot(func(w *oracle.World, observed int) {
			f.mu.Lock()
			replan = f.dirty || observed != lastObserved || now.Sub(lastPlan) >= floorIdleReplan
			f.dirty = false
			f.mu.Unlock()
			if !replan {
				return
			}
			lastObserved = observed
			in, dss = f.input(w, now)
		})
		if !replan {
			continue
		}
		lastPlan = now
		// Planning runs on the goroutine that feeds the oracle: never spend
		// more than a third of the time there.
		gap = max(floorTick, 3*f.clock.Since(now))
		plan := floor.Compute(in)
		for _, call := range f.planCalls(plan, dss) {
			if free == 0 || f.conf.QPS > 0 && tokens < 1 {
				break
			}
			if !f.expect(call) {
				continue
			}
			free--
			tokens--
			sem <- struct{}{}
			f.running.Add(1)
			go func() {
				defer func() { <-sem; f.running.Done() }()
				f.do(ctx, call)
			}()
		}
	}
}

// floorCall is one API call of a plan.
type floorCall struct {
	kind floorCallKind
	key  string // expectation key: "<ds>|<node>" for creates, the pod for the rest
	ds   *appsv1.DaemonSet
	node string
	hash string    // a create's: the DaemonSet's current hash
	pod  string    // namespace/name
	uid  types.UID // the pod's, for deletes and adoptions
}

type floorCallKind int

const (
	floorDelete floorCallKind = iota
	floorCreate
	floorAdopt
)

// planCalls orders a plan's calls: deletes first (they free nodes for the
// rollout), then creates, then adoptions. It reads the view of the plan's
// input: call it before the next input.
func (f *floorController) planCalls(plan floor.Plan, dss map[string]*appsv1.DaemonSet) []floorCall {
	var out []floorCall
	for _, d := range plan.Deletes {
		out = append(out, floorCall{kind: floorDelete, key: d.Pod, ds: dss[d.DaemonSet], pod: d.Pod, uid: f.view.uid(d.DaemonSet, d.Pod)})
	}
	for _, c := range plan.Creates {
		out = append(out, floorCall{kind: floorCreate, key: c.DaemonSet + "|" + c.Node, ds: dss[c.DaemonSet], node: c.Node, hash: f.view.hash(c.DaemonSet)})
	}
	for _, a := range plan.Adopts {
		out = append(out, floorCall{kind: floorAdopt, key: a.Pod, ds: dss[a.DaemonSet], pod: a.Pod, uid: f.view.uid(a.DaemonSet, a.Pod)})
	}
	return out
}

// expect records the call as under way, or says it already is.
func (f *floorController) expect(c floorCall) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.expectations(c.kind)
	if _, ok := m[c.key]; ok {
		return false
	}
	m[c.key] = floorExpectation{}
	return true
}

func (f *floorController) expectations(k floorCallKind) map[string]floorExpectation {
	switch k {
	case floorCreate:
		return f.creating
	case floorDelete:
		return f.deleting
	default:
		return f.adopting
	}
}

// do issues one call. A failed call forgets its expectation, so that the
// next plan decides afresh.
func (f *floorController) do(ctx context.Context, c floorCall) {
	ns, name := splitKey(c.pod)
	var (
		method  string
		created string
		err     error
	)
	switch c.kind {
	case floorCreate:
		method = "POST"
		var p *corev1.Pod
		p, err = f.client.CoreV1().Pods(c.ds.Namespace).Create(ctx, floor.NewPod(c.ds, c.hash, c.node, f.conf.bind()), metav1.CreateOptions{})
		if err == nil {
			created = p.Namespace + "/" + p.Name
		}
	case floorDelete:
		method = "DELETE"
		err = f.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &c.uid}})
		if apierrors.IsNotFound(err) {
			err = nil
		}
	case floorAdopt:
		method = "PATCH"
		patch := fmt.Sprintf(`{"metadata":{"uid":%q,"ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`,
			c.uid, c.ds.Name, c.ds.UID)
		_, err = f.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests[method]++
	f.dirty = true
	m := f.expectations(c.kind)
	if err != nil && ctx.Err() == nil && mayStillHappen(err) {
		// The API server may still carry the call out, as upstream's
		// controller assumes of a create that timed out: wait for the view
		// for the TTL, as after an answer.
		if e, ok := m[c.key]; ok {
			e.answered = f.clock.Now()
			m[c.key] = e
		}
		f.log.Warn("floor call timed out", "method", method, "daemonSet", c.ds.Namespace+"/"+c.ds.Name, "node", c.node, "pod", c.pod, "err", err)
		return
	}
	if err != nil {
		delete(m, c.key)
		if ctx.Err() == nil {
			f.log.Error("floor call failed", "method", method, "daemonSet", c.ds.Namespace+"/"+c.ds.Name, "node", c.node, "pod", c.pod, "err", err)
		}
		return
	}
	if e, ok := m[c.key]; ok {
		e.answered, e.name = f.clock.Now(), created
		m[c.key] = e
	}
}

// input builds the planner's input from the view and settles the
// expectations the view now shows. Called on the observe goroutine.
func (f *floorController) input(w *oracle.World, now time.Time) (floor.Input, map[string]*appsv1.DaemonSet) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, e := range f.creating {
		if e.name != "" {
			if _, ok := w.Pod(e.name); ok {
				delete(f.creating, key)
				continue
			}
		}
		if e.expired(now) {
			delete(f.creating, key)
		}
	}
	for key, e := range f.deleting {
		if p, ok := w.Pod(key); !ok || p.DeletionTimestamp != nil || e.expired(now) {
			delete(f.deleting, key)
		}
	}
	for key, e := range f.adopting {
		if p, ok := w.Pod(key); !ok || metav1.GetControllerOf(p) != nil || e.expired(now) {
			delete(f.adopting, key)
		}
	}
	return f.view.read(w, now, floorExpectations{creating: f.creating, deleting: f.deleting, adopting: f.adopting})
}

// floorRevision is a DaemonSet's current revision as its pods' labels carry
// it, computed once per plan (hashing the template is not cheap).
type floorRevision struct{ hash, generation string }

func (r floorRevision) matches(p *corev1.Pod) bool {
	return p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == r.hash ||
		r.generation != "" && p.Labels["pod-template-generation"] == r.generation
}

func splitKey(key string) (namespace, name string) {
	for i := range len(key) {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// floorUnsupported says why the floor cannot play the scenario, or "": it
// writes no ControllerRevisions, so there is nothing to roll back to, and it
// adopts no orphans, so a DaemonSet re-created over the pods of one deleted
// with cascade orphan would get a second pod on every node.
func floorUnsupported(sc *scenarios.Scenario) string {
	why := ""
	sc.Walk(func(st *scenarios.Step) bool {
		switch {
		case st.Rollback != nil:
			why = fmt.Sprintf("the floor writes no ControllerRevisions, and scenario %s rolls back (step %s)", sc.Metadata.Name, stepName(st))
		case st.Delete != nil && st.Delete.Cascade == scenarios.CascadeOrphan:
			why = fmt.Sprintf("the floor adopts no orphans, and scenario %s orphans pods (step %s)", sc.Metadata.Name, stepName(st))
		}
		return why == ""
	})
	return why
}

// externalUnsupported says why the external controller cannot play the
// scenario, or "": the harness did not start its process, so it can neither
// kill nor start it (controller steps, killStorm), nor put its proxy in
// front of it (slowAPI, writeTimeouts), nor count its API requests (a rejectCreates
// bound on them); and the cluster is not one it owns, so it cannot restart
// the API server (apiServerRestart). rejectCreates without a bound and
// conflictingWriters only write through the API, and play as for any
// controller.
func externalUnsupported(sc *scenarios.Scenario) string {
	why := ""
	sc.Walk(func(st *scenarios.Step) bool {
		var does string
		switch {
		case st.Controller != nil:
			does = fmt.Sprintf("%ss the controller", st.Controller.Action)
		case st.Fault == nil:
		case st.Fault.KillStorm != nil:
			does = "kills the controller (killStorm)"
		case st.Fault.SlowAPI != nil:
			does = "puts the harness's latency proxy in front of the controller (slowAPI)"
		case st.Fault.WriteTimeouts != nil:
			does = "puts the harness's proxy in front of the controller to time out its writes (writeTimeouts)"
		case st.Fault.RejectCreates != nil && st.Fault.RejectCreates.MaxCallsPerMinute > 0:
			does = "bounds the controller's API calls (rejectCreates maxCallsPerMinute), which the harness cannot count"
		case st.Fault.APIServerRestart != nil:
			does = "restarts the API server of a cluster the harness does not own (apiServerRestart)"
		}
		if does != "" {
			at := stepName(st)
			if st.Path != "" {
				at += ", " + st.Path
			}
			why = fmt.Sprintf("the harness did not start the external controller, and scenario %s %s (step %s)", sc.Metadata.Name, does, at)
		}
		return why == ""
	})
	return why
}

// mayStillHappen says whether a call that returned err may still be carried
// out: the API server or the client timed out waiting, not refused it.
func mayStillHappen(err error) bool {
	var netErr net.Error
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout()
}
