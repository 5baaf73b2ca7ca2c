package bench

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// CoreConfig is what a Core needs to know about its run.
type CoreConfig struct {
	// Scenario resolves the DaemonSet references of expectations and waits,
	// and gives the barriers' hold.
	Scenario *scenarios.Scenario
	// Oracle configures the Checker the Core owns.
	Oracle oracle.Config
	// PodStallAfter is how long a bound pod may stay Pending on a Ready node
	// before it counts as a simulator stall (at least MinStallAfter).
	PodStallAfter time.Duration
	// DeleteStallAfter is how long a deleted pod may stay terminating on a
	// Ready node before it counts as a simulator stall (at least
	// MinStallAfter).
	DeleteStallAfter time.Duration
	// StopAtViolation makes Tick ask to end the run at the first unexpected
	// violation.
	StopAtViolation bool
	// Journal, when set, records every input of the Checker (see Replay);
	// the caller closes it after Finish.
	Journal *JournalRecorder
}

// Core is the runner's bookkeeping without its I/O, in the shape of the
// oracle it owns: the executor feeds it what it did and what the watch saw,
// with the times they happened, and acts on the values it returns. It holds
// the pending barriers, the step records, the windows of expected
// violations, the timelines, the coverage observations, the harness's lag
// and the simulator-stall tracker, and turns them into a reports.Run.
// It starts no goroutine, takes no lock and reads no clock: feed it from one
// goroutine.
type Core struct {
	sc      *scenarios.Scenario
	checker *oracle.Checker
	journal *JournalRecorder // nil: nothing recorded
	stopAt  bool
	stopped bool

	dss      map[string]bool // DaemonSets that exist (by ref), as the runner made them
	pending  []pendingBarrier
	windows  []expectWindow
	steps    []stepRecord
	timeline map[string]*reports.Timeline
	sampled  time.Time // last timeline sample
	seen     observations
	// violations are the NotConverged timeouts of waits and the HotLoops of
	// faults, in order.
	violations []reports.Violation
	// faults are the fault steps' records, judged in Finish.
	faults []reports.Fault
	// lags is, per event applied, how long after its stamp the oracle got
	// it; applyErrs counts the events it could not apply (never expected).
	lags      []time.Duration
	applyErrs int
	stalls    *stallTracker
	// podsCreated counts DaemonSet pods that appeared once the first step
	// had begun: the controller's creates, as the watch saw them.
	podsCreated int64
}

// NewCore returns a Core with an empty oracle.
func NewCore(conf CoreConfig) *Core {
	return &Core{
		sc:       conf.Scenario,
		checker:  oracle.NewChecker(conf.Oracle),
		journal:  conf.Journal,
		stopAt:   conf.StopAtViolation,
		dss:      map[string]bool{},
		timeline: map[string]*reports.Timeline{},
		stalls:   newStallTracker(conf.PodStallAfter, conf.DeleteStallAfter),
	}
}

// visibility says, per DaemonSet ref, when the step's write is visible to the
// oracle; "" applies to every DaemonSet.
type visibility map[string]oracle.Visibility

type pendingBarrier struct {
	id   oracle.BarrierID
	step int // index into steps
	ds   string
}

type stepRecord struct {
	name, kind string
	// began is when the step began to write, start when the API had
	// acknowledged its writes (the step's time counts from it).
	began, start time.Time
	// skipped are chosen nodes that a concurrent leave or replace deleted
	// before this step reached them.
	skipped  []string
	barriers []oracle.BarrierID
	at       time.Time
	event    *reports.Event
	// placed is when the last of its DaemonSets had a pod of the current
	// template on every node that must run one (oracle.Convergence.Placed).
	placed   time.Time
	timedOut bool
	// timeoutExpected: the scenario declared NotConverged where it timed out.
	timeoutExpected bool
}

// expectWindow is a span in which declared violations are expected.
type expectWindow struct {
	exp      scenarios.Expectation
	from     time.Time
	to       time.Time // zero: open until the next barrier or the end
	open     bool
	seen     bool
	stepName string
}

// observations are what the coverage report is made of.
type observations struct {
	// pods maps each pod seen to whether its whole life was seen: it was
	// first seen before it became Ready, so no readiness went unobserved.
	pods map[string]bool
	// nodeReady is each node's last Ready state; flaps counts True->False.
	nodeReady map[string]bool
	flaps     int
}

func (o *observations) note(ev oracle.Event) {
	if o.pods == nil {
		o.pods, o.nodeReady = map[string]bool{}, map[string]bool{}
	}
	switch obj := ev.Object.(type) {
	case *corev1.Pod:
		key := obj.Namespace + "/" + obj.Name
		if _, ok := o.pods[key]; !ok && ev.Kind != oracle.Deleted {
			o.pods[key] = !podReady(obj)
		}
	case *corev1.Node:
		if ev.Kind == oracle.Deleted {
			delete(o.nodeReady, obj.Name)
			return
		}
		ready := kwok.NodeReady(obj)
		if was, ok := o.nodeReady[obj.Name]; ok && was && !ready {
			o.flaps++
		}
		o.nodeReady[obj.Name] = ready
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// World is the oracle's view, for the executor to choose nodes from; read
// it only from the goroutine that feeds the Core.
func (c *Core) World() *oracle.World { return c.checker.World() }

// Observed counts the watch events observed so far, so that a reader of
// World can tell whether it changed.
func (c *Core) Observed() int { return len(c.lags) }

// RequestDeletion tells the oracle that the harness deletes the pod, so that
// its disappearance is no UnrequestedDisruption.
func (c *Core) RequestDeletion(podKey string) {
	c.journal.requestDeletion(podKey)
	c.checker.RequestDeletion(podKey)
}

// ControllerStopped tells the oracle that the controller is down.
func (c *Core) ControllerStopped() {
	c.journal.controllerStopped()
	c.checker.ControllerStopped()
}

// ControllerStarted tells the oracle that the controller is back at now.
func (c *Core) ControllerStarted(now time.Time) {
	c.journal.controllerStarted(now)
	c.checker.ControllerStarted(now)
}

// StatusSettled says whether every DaemonSet's status agrees with the oracle.
func (c *Core) StatusSettled() bool { return c.checker.StatusSettled() }

// StatusDiff says where ds's status disagrees with the oracle now.
func (c *Core) StatusDiff(ds string) string { return c.checker.StatusDiff(ds) }

// DaemonSetCreated records that the runner created the DaemonSet: every later
// step waits for it.
func (c *Core) DaemonSetCreated(ref string) { c.dss[ref] = true }

// DaemonSetDeleted records that the runner deleted the DaemonSet.
func (c *Core) DaemonSetDeleted(ref string) { delete(c.dss, ref) }

// Status is the live display's line: nodes and each DaemonSet's Ready pods.
func (c *Core) Status() string {
	w := c.checker.World()
	var parts []string
	for _, key := range w.DaemonSetKeys() {
		v := c.checker.Verdict(key)
		parts = append(parts, fmt.Sprintf("%s %d/%d ready", key, v.MustRun-v.Unavailable, v.MustRun))
	}
	return fmt.Sprintf("%d nodes; %s", len(w.NodeNames()), strings.Join(parts, ", "))
}

// Observe applies one watch event, stamped when the harness received it, that
// the executor hands over at arrived.
func (c *Core) Observe(ev oracle.Event, arrived time.Time) {
	c.lags = append(c.lags, arrived.Sub(ev.Time))
	c.journal.apply(ev)
	if err := c.checker.Apply(ev); err != nil {
		c.applyErrs++
	}
	c.seen.note(ev)
	if p, ok := ev.Object.(*corev1.Pod); ok {
		c.stalls.observe(p.Namespace+"/"+p.Name, p, ev.Kind == oracle.Deleted, ev.Time)
		if ref := metav1.GetControllerOfNoCopy(p); ev.Kind == oracle.Added && len(c.steps) > 0 && ref != nil && ref.Kind == "DaemonSet" {
			c.podsCreated++
		}
	}
}

// TickResult is what the executor must do after a Tick.
type TickResult struct {
	// Nudge are pods kwok left Pending or terminating to touch, once each
	// (see stallTracker).
	Nudge []string
	// Stop, when set, is why the run must end now (StopAtViolation); it is
	// set once.
	Stop string
}

// Tick moves the Core to now. drained says that no watch event waits to be
// observed: time moves on only then, since moving past queued events would
// judge them at the tick's time, not their own. Timelines are sampled at
// most once a second.
func (c *Core) Tick(now time.Time, drained bool) TickResult {
	if drained && now.After(c.checker.Now()) {
		c.journal.advance(now)
		c.checker.Advance(now)
	}
	if now.Sub(c.sampled) >= time.Second {
		c.sample(now)
		c.sampled = now
	}
	var r TickResult
	r.Stop = c.stopAtViolation()
	w := c.checker.World()
	r.Nudge = c.stalls.due(now, func(name string) bool {
		n, ok := w.Node(name)
		return ok && kwok.NodeReady(n)
	})
	return r
}

// stopAtViolation is why the run should end at its first unexpected
// violation, once, when StopAtViolation is set.
func (c *Core) stopAtViolation() string {
	if !c.stopAt || c.stopped {
		return ""
	}
	for _, v := range c.checker.Violations() {
		if !c.expected(scenarioKind(v.Kind), v.DaemonSet, v.Start) {
			c.stopped = true
			return fmt.Sprintf("stopped at the first unexpected violation: %s on %s %s", v.Kind, v.DaemonSet, v.Node)
		}
	}
	return ""
}

// sample adds a timeline point per DaemonSet.
func (c *Core) sample(now time.Time) {
	w := c.checker.World()
	for _, key := range w.DaemonSetKeys() {
		v := c.checker.Verdict(key)
		current := v.MustRun - len(v.Missing)
		tl := c.timeline[key]
		if tl == nil {
			tl = &reports.Timeline{DaemonSet: key}
			c.timeline[key] = tl
		}
		tl.Points = append(tl.Points, reports.TimelinePoint{
			Time: now, Desired: v.MustRun, Current: current,
			Ready: v.MustRun - v.Unavailable, Updated: max(0, current-len(v.Outdated)),
		})
	}
}

// StepStarted opens the windows of the violations the step expects.
func (c *Core) StepStarted(st *scenarios.Step, now time.Time) {
	for _, e := range st.Expect {
		c.windows = append(c.windows, expectWindow{exp: e, from: now, open: true, stepName: stepName(st)})
	}
}

// CloseExpectations closes every open window at now: a waitConverged step
// ends the expectations declared before it.
func (c *Core) CloseExpectations(now time.Time) {
	for i := range c.windows {
		if c.windows[i].open {
			c.windows[i].open = false
			c.windows[i].to = now
		}
	}
}

// StepAcked records a step begun at began whose writes the API acknowledged at ack and
// registers, for each DaemonSet that exists or was just touched, a barrier
// that completes when the oracle sees it converged after the step's write
// became visible. It returns those DaemonSets, sorted.
func (c *Core) StepAcked(name, kind string, began, ack time.Time, vis visibility, skipped []string) []string {
	rec := stepRecord{name: name, kind: kind, began: began, start: ack, skipped: skipped}
	idx := len(c.steps)
	keys := map[string]bool{}
	for ref := range c.dss {
		keys[ref] = true
	}
	for ref := range vis {
		if ref != "" && ref != "-orphan" {
			keys[ref] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, key := range sorted {
		v := vis[key]
		if all := vis[""]; all != nil {
			if v == nil {
				v = all
			} else {
				v = oracle.AllOf(v, all)
			}
		}
		id := c.checker.AddBarrier(oracle.Barrier{Name: name, DaemonSet: key, Start: ack, Visible: v, Hold: c.sc.BarrierHold()})
		rec.barriers = append(rec.barriers, id)
		c.pending = append(c.pending, pendingBarrier{id: id, step: idx, ds: key})
	}
	c.steps = append(c.steps, rec)
	return sorted
}

// waits says whether a waitConverged on refs (every DaemonSet when empty)
// waits for the barrier.
func (c *Core) waits(refs []string, pb pendingBarrier) bool {
	return len(refs) == 0 || containsRef(c.sc, refs, pb.ds)
}

// WaitDone is one poll of a waitConverged on refs (every DaemonSet when
// empty): it folds the barriers that converged into their steps and says
// whether none it waits for is left.
func (c *Core) WaitDone(refs []string) bool {
	remaining := c.pending[:0:0]
	for _, pb := range c.pending {
		if !c.waits(refs, pb) {
			remaining = append(remaining, pb)
			continue
		}
		conv, ok := c.checker.ConvergedAt(pb.id)
		if !ok {
			remaining = append(remaining, pb)
			continue
		}
		c.steps[pb.step].addConvergence(conv)
	}
	c.pending = remaining
	for _, pb := range remaining {
		if c.waits(refs, pb) {
			return false
		}
	}
	return true
}

// WaitTimedOut ends the waitConverged called name on refs at its deadline,
// after timeout: each barrier it waited for is a step that timed out, and the
// wait is a NotConverged violation that says what kept each step from
// converging. A timeout is no error, so that the rest of the scenario runs.
func (c *Core) WaitTimedOut(name string, refs []string, timeout time.Duration, deadline time.Time) {
	var why []string
	others := c.pending[:0:0]
	for _, pb := range c.pending {
		if !c.waits(refs, pb) {
			others = append(others, pb) // a later barrier may still wait for it
			continue
		}
		rec := &c.steps[pb.step]
		rec.timedOut = true
		rec.timeoutExpected = c.expected(scenarios.NotConverged, pb.ds, deadline)
		why = append(why, fmt.Sprintf("step %q: %s", rec.name, c.checker.Explain(pb.id)))
	}
	c.pending = others
	detail := fmt.Sprintf("%s timed out after %v", name, timeout)
	if len(why) > 0 {
		detail += ": " + strings.Join(why, "; ")
	}
	c.violations = append(c.violations, reports.Violation{
		Kind: string(scenarios.NotConverged), Start: deadline, Detail: detail,
		Expected: c.expected(scenarios.NotConverged, "", deadline),
	})
}

// addConvergence folds one of the step's barriers into it: a step converges when
// its last DaemonSet does.
func (rec *stepRecord) addConvergence(conv oracle.Convergence) {
	if conv.Placed.After(rec.placed) {
		rec.placed = conv.Placed
	}
	if conv.At.After(rec.at) {
		rec.at = conv.At
		rec.event = &reports.Event{Time: conv.Event.Time, Reason: string(conv.Event.Kind), Object: conv.Event.Object}
	}
}

func containsRef(sc *scenarios.Scenario, refs []string, key string) bool {
	for _, r := range refs {
		if ds, err := sc.DaemonSet(r); err == nil && scenarios.Ref(ds) == key {
			return true
		}
	}
	return false
}

// expected says whether a violation of kind on ds starting at t was declared,
// and marks the window that declared it as seen.
func (c *Core) expected(kind scenarios.ViolationKind, ds string, t time.Time) bool {
	for i := range c.windows {
		w := &c.windows[i]
		if w.exp.Violation != kind {
			continue
		}
		if w.exp.DaemonSet != "" && ds != "" {
			if d, err := c.sc.DaemonSet(w.exp.DaemonSet); err != nil || scenarios.Ref(d) != ds {
				continue
			}
		}
		if t.Before(w.from) || (!w.open && t.After(w.to)) {
			continue
		}
		w.seen = true
		return true
	}
	return false
}

// expectedDuring says whether a declared window for kind on ds overlaps
// [from, to], and marks it as seen.
func (c *Core) expectedDuring(kind scenarios.ViolationKind, ds string, from, to time.Time) bool {
	for i := range c.windows {
		w := &c.windows[i]
		if w.exp.Violation != kind {
			continue
		}
		if w.exp.DaemonSet != "" {
			if d, err := c.sc.DaemonSet(w.exp.DaemonSet); err != nil || scenarios.Ref(d) != ds {
				continue
			}
		}
		if w.from.After(to) || (!w.open && w.to.Before(from)) {
			continue
		}
		w.seen = true
		return true
	}
	return false
}

// scenarioKind maps the oracle's invariant names to the scenario format's.
func scenarioKind(k oracle.Kind) scenarios.ViolationKind { return k.Family() }

// FaultEnded records a fault step once its fault is over. A bound on API
// calls that the controller broke is a HotLoop violation at once, a status
// still wrong while creates were refused a StatusMismatch, and a template
// of conflicting writers that the DaemonSet lost a StepFailed.
func (c *Core) FaultEnded(f reports.Fault) {
	c.faults = append(c.faults, f)
	if f.StatusError != "" {
		c.violations = append(c.violations, reports.Violation{
			Kind: string(scenarios.StatusMismatch), Start: f.End,
			Detail:   fmt.Sprintf("step %q: while creates were refused, %s", f.Step, f.StatusError),
			Expected: c.expected(scenarios.StatusMismatch, "", f.End),
		})
	}
	if f.LostUpdate != "" {
		// Established once the writers have stopped: it starts then.
		c.violations = append(c.violations, reports.Violation{
			Kind: string(scenarios.StepFailed), DaemonSet: f.DaemonSet, Start: f.End,
			Detail:   fmt.Sprintf("step %q: an update was lost: %s", f.Step, f.LostUpdate),
			Expected: c.expected(scenarios.StepFailed, f.DaemonSet, f.End),
		})
	}
	if f.MaxCallsPerMinute > 0 && f.APIRequests >= 0 && f.CallsPerMinute > f.MaxCallsPerMinute {
		c.violations = append(c.violations, reports.Violation{
			// Established only once the window is over: it starts then.
			Kind: string(scenarios.HotLoop), Start: f.End,
			Detail: fmt.Sprintf("step %q: %d API calls in %v, %.0f a minute, above the bound of %.0f",
				f.Step, f.APIRequests, f.End.Sub(f.Start).Round(time.Millisecond), f.CallsPerMinute, f.MaxCallsPerMinute),
			Expected: c.expected(scenarios.HotLoop, "", f.End),
		})
	}
}

// judgeFaults fills in each fault's recovery: every step begun by the
// fault's end has converged, and RecoverySeconds is how long after the end
// the last of them did. It counts the unexpected violations that began
// between the fault's start and its recovery (the run's end without one).
func judgeFaults(faults []reports.Fault, steps []reports.Step, violations []reports.Violation, end time.Time) []reports.Fault {
	out := make([]reports.Fault, len(faults))
	for i, f := range faults {
		f.Recovered = true
		last := f.End
		for _, st := range steps {
			if st.Start.After(f.End) {
				continue // a later step's barrier measures that step, not the fault
			}
			if !st.Converged {
				f.Recovered = false
				break
			}
			if at := st.Start.Add(time.Duration(st.Seconds * float64(time.Second))); at.After(last) {
				last = at
			}
		}
		until := end
		if f.Recovered {
			f.RecoverySeconds, until = last.Sub(f.End).Seconds(), last
		}
		for _, v := range violations {
			if !v.Expected && !v.Start.Before(f.Start) && !v.Start.After(until) {
				f.Violations++
			}
		}
		out[i] = f
	}
	return out
}

// FinishInput is what the executor measured outside the Core.
type FinishInput struct {
	// Now ends the run.
	Now time.Time
	// APIRequests are the controller's requests by verb, added to the run's;
	// nil when they were not measured (the external controller), which
	// leaves a run without any nil too.
	APIRequests map[string]int64
	// Resources are the controller process's exact usage at exit.
	Resources reports.Resources
	// HarnessCPU is the harness's own CPU over the run.
	HarnessCPU time.Duration
	// Gaps are the watch's gaps.
	Gaps []Gap
}

// Finish turns the oracle's findings and the bookkeeping into run, which
// holds what the executor recorded itself (scenario, controller, setup
// times), and returns it. The Core is spent afterwards.
func (c *Core) Finish(run reports.Run, in FinishInput) reports.Run {
	now := in.Now
	if run.APIRequests == nil && in.APIRequests != nil {
		run.APIRequests = map[string]int64{}
	}
	for k, v := range in.APIRequests {
		run.APIRequests[k] = v
	}
	run.Resources = in.Resources
	run.Violations = append(run.Violations, c.violations...)
	c.sample(now)
	run.Harness = c.harnessStats(in.HarnessCPU, len(in.Gaps))
	run.SimulatorStalls = c.stalls.finish(now)
	run.PodsCreated = c.podsCreated
	// Barriers no waitConverged covered: a step is never reported converged
	// (in 0 s) just because nobody waited for it.
	for _, pb := range c.pending {
		rec := &c.steps[pb.step]
		if conv, ok := c.checker.ConvergedAt(pb.id); ok {
			rec.addConvergence(conv)
			continue
		}
		rec.timedOut = true
		rec.timeoutExpected = c.expected(scenarios.NotConverged, pb.ds, now)
		run.Violations = append(run.Violations, reports.Violation{
			Kind: string(scenarios.NotConverged), Start: now,
			Detail:   fmt.Sprintf("step %q had not converged when the run ended and no waitConverged covered it: %s", rec.name, c.checker.Explain(pb.id)),
			Expected: rec.timeoutExpected,
		})
	}
	c.pending = nil
	for _, rec := range c.steps {
		step := reports.Step{Name: rec.name, Kind: rec.kind, Start: rec.start, Converged: !rec.timedOut, CompletingEvent: rec.event, SkippedNodes: rec.skipped,
			ExpectedNotConverged: rec.timeoutExpected}
		if !rec.at.IsZero() {
			step.Seconds = rec.at.Sub(rec.start).Seconds()
			// Only where the barrier waits for the step's own write to be
			// seen (a generation): another step's view may hold its pods
			// before its write does.
			if !rec.placed.IsZero() && !rec.timedOut && (rec.kind == string(scenarios.KindCreate) || rec.kind == string(scenarios.KindUpdate)) {
				placed := max(0, rec.placed.Sub(rec.start).Seconds())
				step.PodsExistSeconds = &placed
			}
		}
		if rec.timedOut {
			step.Seconds = now.Sub(rec.start).Seconds()
		}
		if step.Seconds < 0 {
			step.Seconds = 0
		}
		run.Steps = append(run.Steps, step)
	}
	found := c.checker.Finish(now)
	expected := make([]bool, len(found))
	for i, v := range found {
		expected[i] = c.expected(scenarioKind(v.Kind), v.DaemonSet, v.Start)
		run.Violations = append(run.Violations, reports.Violation{
			DaemonSet: v.DaemonSet, Node: v.Node, Kind: string(v.Kind), Start: v.Start,
			Seconds: v.End.Sub(v.Start).Seconds(), Detail: v.Detail, Expected: expected[i],
		})
	}
	c.journal.finish(now, found, expected)
	for _, w := range c.windows {
		if !w.seen && !w.exp.Optional {
			run.Violations = append(run.Violations, reports.Violation{
				DaemonSet: w.exp.DaemonSet, Kind: "ExpectedViolationMissing", Start: w.from,
				Detail: fmt.Sprintf("step %s expected %s, which did not happen", w.stepName, w.exp.Violation),
			})
		}
	}
	for _, ro := range c.checker.Rollouts() {
		out := reports.Rollout{Step: c.rolloutStep(ro), DaemonSet: ro.DaemonSet, Complete: ro.Outcome == oracle.RolloutConverged, Outcome: strings.ToLower(string(ro.Outcome))}
		end := ro.End
		if end.IsZero() {
			end = now
		}
		out.Seconds = end.Sub(ro.Start).Seconds()
		for _, n := range ro.Nodes {
			if n.NewPodAvailable.IsZero() {
				continue
			}
			out.Nodes = append(out.Nodes, reports.NodeLatency{Node: n.Node, Seconds: nodeRolloutSeconds(ro.Start, n)})
			if r, ok := replacement(ro.Start, n); ok {
				out.Replacements = append(out.Replacements, r)
			}
		}
		run.Rollouts = append(run.Rollouts, out)
		run.Availability = append(run.Availability, reports.Availability{
			DaemonSet: ro.DaemonSet, Step: out.Step, PeakUnavailable: ro.PeakUnavailable, AllowedUnavailable: ro.AllowedAtPeak, ClusterMade: ro.ClusterMadeAtPeak,
			Expected: ro.PeakUnavailable > ro.AllowedAtPeak && c.expectedDuring(scenarios.MaxUnavailableExceeded, ro.DaemonSet, ro.Start, end),
		})
	}
	for _, r := range c.checker.NodeRepairs() {
		if rep, ok := repair(r); ok {
			run.Repairs = append(run.Repairs, reports.Repair{Step: repairStep(c.steps, run.Steps, r.Deleted), Replacement: rep})
		}
	}
	for _, w := range c.checker.PodGCWaits() {
		if !w.PodsGone.IsZero() {
			run.PodGCWaits = append(run.PodGCWaits, reports.NodeLatency{Node: w.Node, Seconds: w.PodsGone.Sub(w.NodeDeleted).Seconds()})
		}
	}
	// Every join is accounted for: measured, ended by its node or
	// DaemonSet going first, or unmeasured, which the report makes a finding.
	for _, j := range c.checker.NodeJoins() {
		switch {
		case j.Measured():
			run.NodeJoins = append(run.NodeJoins, reports.NodeLatency{Node: j.Node, Seconds: j.Latency().Seconds(), Start: j.MustRun})
			run.NodeEligible = append(run.NodeEligible, reports.NodeLatency{Node: j.Node, Seconds: j.ClusterShare().Seconds(), Start: j.NodeAdded})
		case j.EndedBy != "":
			run.NodeJoinsEnded++
		default:
			run.NodeJoinsUnmeasured = append(run.NodeJoinsUnmeasured, reports.UnmeasuredJoin{
				DaemonSet: j.DaemonSet, Node: j.Node, Eligible: !j.MustRun.IsZero(), PodCreated: !j.PodCreated.IsZero(), PodReady: !j.PodReady.IsZero(),
			})
		}
	}
	keys := make([]string, 0, len(c.timeline))
	for k := range c.timeline {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		run.Timelines = append(run.Timelines, *c.timeline[k])
	}
	run.Coverage = c.coverage(in.Gaps)
	run.Faults = judgeFaults(c.faults, run.Steps, run.Violations, now)
	return run
}

// rolloutStep attributes a rollout to the last update or rollback step
// acknowledged before it began (with a second's slack for the watch).
func (c *Core) rolloutStep(ro oracle.Rollout) string {
	name := ""
	for _, rec := range c.steps {
		if (rec.kind == string(scenarios.KindUpdate) || rec.kind == string(scenarios.KindRollback)) && !rec.start.After(ro.Start.Add(time.Second)) {
			name = rec.name
		}
	}
	return name
}

// repairStep names, as the step metrics do (reports.StepKey), the last
// pods step of recs that began before a repair's deletion was seen (its
// deletions are seen before the API has acknowledged all of them); "" if
// none. steps are the run's steps, one for each of recs.
func repairStep(recs []stepRecord, steps []reports.Step, deleted time.Time) string {
	key := ""
	for i, rec := range recs {
		if rec.kind == string(scenarios.KindPods) && !rec.began.After(deleted) && i < len(steps) {
			key = reports.StepKey(steps, i)
		}
	}
	return key
}

// repair splits a measured repair as replacement does a rollout's node; a
// pod created before the deleted one was gone (not a replacement in this
// sense) is left out.
func repair(r oracle.NodeRepair) (reports.Replacement, bool) {
	return split(r.Node, r.Deleted, r.Vanished, r.Created, r.Available)
}

// harnessStats summarizes the harness's own lag.
func (c *Core) harnessStats(cpu time.Duration, relists int) *reports.Harness {
	h := &reports.Harness{Events: len(c.lags), Clamped: c.checker.World().Clamped(), Retracted: c.checker.Retracted(), CPUSeconds: cpu.Seconds(), Relists: relists}
	if len(c.lags) > 0 {
		sorted := slices.Clone(c.lags)
		slices.Sort(sorted)
		rank := func(q float64) time.Duration {
			return sorted[min(len(sorted)-1, int(math.Ceil(q*float64(len(sorted))))-1)]
		}
		h.LagP50, h.LagP99, h.LagMax = rank(0.5).Seconds(), rank(0.99).Seconds(), sorted[len(sorted)-1].Seconds()
	}
	h.Rejected = c.applyErrs
	h.Limited = h.LagP99 > reports.HarnessLagLimit
	return h
}

// coverage reports what the harness may have missed.
func (c *Core) coverage(gaps []Gap) reports.Coverage {
	cov := reports.Coverage{NodeReadyFlaps: c.seen.flaps}
	cov.PodsExpected, cov.PodsObserved = len(c.seen.pods), 0
	for _, whole := range c.seen.pods {
		if whole {
			cov.PodsObserved++
		}
	}
	cov.ObservedFraction = 1
	if cov.PodsExpected > 0 {
		cov.ObservedFraction = float64(cov.PodsObserved) / float64(cov.PodsExpected)
	}
	for _, g := range gaps {
		wg := reports.WatchGap{Resource: g.Resource, Start: g.Start, Seconds: g.End.Sub(g.Start).Seconds(), Reason: g.Reason}
		wg.DuringFault = c.faultBreakingWatches(g.Start, g.End)
		cov.WatchGaps = append(cov.WatchGaps, wg)
	}
	return cov
}

// watchBreakSlack is how long after an API server restart returned the
// harness's watches may still be resuming: it lists again first.
const watchBreakSlack = 5 * time.Second

// faultBreakingWatches names the fault step that explains a watch gap from
// start to end: an API server restart, which breaks every watch, that began
// by the gap's end and had returned at most watchBreakSlack before its start.
func (c *Core) faultBreakingWatches(start, end time.Time) string {
	for _, f := range c.faults {
		if f.Kind != string(scenarios.FaultAPIServerRestart) {
			continue
		}
		if !f.Start.After(end) && !start.After(f.End.Add(watchBreakSlack)) {
			return f.Step
		}
	}
	return ""
}

// nodeRolloutSeconds times one node's replacement from its turn to its new
// pod available. Its turn is when the controller first acted on it: the old
// pod's deletion, or the new pod's creation when that came first (maxSurge:
// the new pod starts beside the old one, which goes only once it is
// available, so timing from the deletion would read 0 on every node). Never
// before the rollout's start; a node with no old pod (it joined) counts from
// that start.
func nodeRolloutSeconds(start time.Time, n oracle.NodeRollout) float64 {
	from := start
	turn := n.OldPodGone
	if !turn.IsZero() && !n.NewPodCreated.IsZero() && n.NewPodCreated.Before(turn) {
		turn = n.NewPodCreated
	}
	if turn.After(from) {
		from = turn
	}
	return max(0, n.NewPodAvailable.Sub(from).Seconds())
}

// replacement splits a node's rollout latency when its old pod was deleted
// during the rollout and gone before the new pod appeared; false for other
// nodes (surge, new nodes, pods lost before the rollout).
func replacement(start time.Time, n oracle.NodeRollout) (reports.Replacement, bool) {
	if n.OldPodGone.Before(start) {
		return reports.Replacement{}, false
	}
	return split(n.Node, n.OldPodGone, n.OldPodVanished, n.NewPodCreated, n.NewPodAvailable)
}

// split divides gone → available at vanished and created; false unless the
// old pod vanished, the new one came after it and became available.
func split(node string, gone, vanished, created, available time.Time) (reports.Replacement, bool) {
	if vanished.IsZero() || created.Before(vanished) || available.IsZero() {
		return reports.Replacement{}, false
	}
	return reports.Replacement{Node: node, Deleting: vanished.Sub(gone).Seconds(),
		Recreating: created.Sub(vanished).Seconds(), Starting: available.Sub(created).Seconds()}, true
}
