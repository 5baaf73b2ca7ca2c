package oracle

import (
	"container/heap"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Kind names an invariant the controller broke.
type Kind string

// The invariants. Each is checked per DaemonSet after every event (and at the
// instants minReadySeconds runs out); an episode starts when the condition
// becomes true and ends when it becomes false.
const (
	// DuplicatePods: an existing node where the pod may run holds more than
	// one active pod (neither terminating nor Failed/Succeeded) of the
	// DaemonSet. When the DaemonSet surges (RollingUpdate with maxSurge > 0),
	// one old plus one current pod is allowed. (Where it may not run at all,
	// that is PodOnIneligibleNode.)
	DuplicatePods Kind = "DuplicatePods"
	// PodOnIneligibleNode: an existing node holds a non-terminating pod of
	// the DaemonSet and either the pod may not run there (Eligibility
	// mayRun false: selector, affinity or an untolerated NoExecute taint), or
	// it may stay but must not be created there and it was placed there more
	// than the kind's grace after the node stopped being must-run (placed =
	// first seen targeting the node, or its creationTimestamp if earlier).
	PodOnIneligibleNode Kind = "PodOnIneligibleNode"
	// PodOnDeletedNode: a non-terminating pod of the DaemonSet targets a node
	// absent from the view, and removing it is the controller's job: the pod
	// is not bound (only pinned by node affinity, which upstream's manage
	// deletes), or it was created more than Config.CacheLag after the node
	// was seen deleted, or the node was never seen; unless a node of that
	// name written before the pods then arrives (the node watch trailed the
	// pod watch: see withdrawReordered). A bound pod that was on
	// the node before it was deleted is the pod garbage collector's to remove
	// (upstream leaves it there); its wait is a PodGCWait, never a violation.
	PodOnDeletedNode Kind = "PodOnDeletedNode"
	// MissingPod: an existing node where the pod must run holds no active pod
	// of the DaemonSet (none, or only terminating or Failed ones).
	MissingPod Kind = "MissingPod"
	// Overunavailable: during a rolling update, more must-run nodes are
	// disrupted than maxUnavailable allows. A node is disrupted when it has no
	// available pod (active, Ready for minReadySeconds, any revision) although
	// it had one at the start of the rollout or at some point since: nodes
	// that never had one (new nodes, broken pods) are not the rollout's doing.
	// maxUnavailable is resolved against the oracle's count of must-run nodes,
	// percentages rounded up, 1 when maxSurge and maxUnavailable are both 0.
	// When nodes leave, a percentage limit can shrink below disruptions that
	// were within it when made; that is excused until another node is
	// disrupted while the DaemonSet is over the limit.
	Overunavailable Kind = "Overunavailable"
	// OrphanPod: a non-terminating pod without a controller reference that a
	// live DaemonSet's selector matches (in its namespace) and that nobody
	// adopted. Reported against the first such DaemonSet by key. Also, at
	// once, a pod the DaemonSet created on a node beside such an orphan that
	// had been one there (released, placed, relabelled) for longer than
	// CacheLag: adopting it was the controller's job.
	OrphanPod Kind = "OrphanPod"
	// Oversurge: during a rolling update with maxSurge, more must-run nodes
	// run a new pod that is not yet available beside an available old pod
	// than maxSurge allows (resolved against the must-run nodes, rounded up,
	// as upstream's SurgeCount). A node whose old pod is unavailable may get
	// its replacement beyond the limit, as upstream. A percentage that shrank
	// under surges already in flight (must-run nodes left) is excused as
	// Overunavailable's is, until one more node surges.
	Oversurge Kind = "Oversurge"
)

// Violation is one episode of a broken invariant.
type Violation struct {
	DaemonSet string
	Kind      Kind
	Node      string // "" for Overunavailable
	Pod       string // OrphanPod only
	Start     time.Time
	// End is when the condition cleared; zero while it holds.
	End time.Time
	// Unresolved: the condition still held at Finish, which set End.
	Unresolved bool
	// Peak: DuplicatePods the most active pods seen on the node;
	// Overunavailable the most disrupted nodes. Allowed: the limit then.
	Peak, Allowed int
	// Detail says why, as seen at Start.
	Detail string
}

// Duration is End-Start, or zero while the violation is open.
func (v Violation) Duration() time.Duration {
	if v.End.IsZero() {
		return 0
	}
	return v.End.Sub(v.Start)
}

// Config tunes a Checker.
type Config struct {
	// Grace per kind: an episode is reported only once it has lasted at least
	// this long (0 reports every episode). For PodOnIneligibleNode it is also
	// how long after a node stopped being must-run a newly placed pod is still
	// excused, since the controller acts on a cache that may lag. A sensible
	// MissingPod grace is the pod-creation latency the run tolerates.
	Grace map[Kind]time.Duration
	// CacheLag bounds how far the controller's cache may trail the oracle's
	// view: a pod created later than this after its node was seen deleted
	// was created for a node the controller should have known was gone.
	CacheLag time.Duration
	// LimitLag is how long a percentage maxUnavailable that shrank (must-run
	// nodes left) still allows its old value: the controller decides on a
	// cache that may not show the departure yet.
	LimitLag time.Duration
	// StaleCreateLag is how long after the oracle saw a new template a pod
	// of an older one may still be created (a sync under way when the
	// template changed); 0 disables StaleCreate.
	StaleCreateLag time.Duration
	// StallAfter is how long a rollout with room in its budget may see no
	// change before it is RolloutStalled; 0 disables the check.
	StallAfter time.Duration
	// StatusLag is how long after convergence the DaemonSet's status may
	// still disagree with the oracle; 0 disables StatusMismatch.
	StatusLag time.Duration
	// SkipStatus disables StatusMismatch whatever StatusLag says: for a
	// controller that writes no status at all (the harness's floor), whose
	// every other invariant is still judged.
	SkipStatus bool
}

// EventRef names the event at which something was observed.
type EventRef struct {
	Time   time.Time
	Kind   EventKind // Timer when only time passed
	Object string    // e.g. "Pod default/ds-x2k4p", "Node n1"
}

// Checker consumes the event stream and keeps invariant violations, per-DS
// convergence, barriers, rollouts and node joins. Time comes only from the
// events (and Advance). Not safe for concurrent use: feed it from one goroutine.
type Checker struct {
	cfg  Config
	w    *World
	now  time.Time
	last EventRef

	ds    map[string]*dsState
	byUID map[types.UID]*dsState

	open   map[episodeKey]*Violation
	atOnce map[episodeKey]bool // open episodes that no grace excuses
	// misplacedRV is, for an open PodOnIneligibleNode or PodOnDeletedNode
	// episode, the lowest first resourceVersion of its misplaced or late
	// pods: see withdrawReordered.
	misplacedRV map[episodeKey]uint64
	// eventRV is the resourceVersion of the event being applied (0 during
	// Advance). limitOpen holds, for an open Overunavailable or Oversurge
	// episode, the resourceVersion of the event that opened it and the
	// rollout's peak before it, so that an episode that a lower-versioned
	// event closes can be retracted (see retractable).
	eventRV   uint64
	limitOpen map[episodeKey]limitOpening
	retracted int
	reported  []Violation
	orphanEp  map[string]episodeKey // pod key -> its open OrphanPod episode

	wakes      wakeHeap
	barriers   []*barrierState
	rollouts   []*rolloutState
	joins      []*NodeJoin
	joinOpen   map[[2]string]*NodeJoin // (ds, node) -> join not yet measured
	revs       revisionClock
	gcWaits    []*PodGCWait
	gcOpen     map[[2]string]*PodGCWait // (ds, node) -> wait whose pods are not gone yet
	repairs    []*NodeRepair
	repairOpen map[[2]string]*NodeRepair // (ds, node) -> repair not yet measured

	requested   map[string]bool // pods the harness deleted (RequestDeletion)
	ctrlDown    bool            // between ControllerStopped and ControllerStarted
	pendingLoss []disruption    // UnrequestedDisruption candidates awaiting judgement
	// pendingBeside are CreatedBesideTerminating candidates awaiting
	// judgement; curRelisted says the event being applied is a relist's.
	pendingBeside []besideTerminating
	curRelisted   bool
	curPod        string // the pod of the event being applied, "" otherwise
}

// PodGCWait is how long pods of a DaemonSet stayed bound to a deleted node.
// Removing them is the pod garbage collector's job (kube-controller-manager's
// podgc waits about 40 s before it deletes them), so this is the cluster's
// share of a convergence that waits for them, not the controller's.
type PodGCWait struct {
	DaemonSet, Node string
	// NodeDeleted is when the node was seen deleted; PodsGone when the last
	// of those pods was deleted or began terminating (zero while they stay).
	NodeDeleted, PodsGone time.Time
}

// PodGCWaits returns the waits, in the order they began; open ones have a
// zero PodsGone.
func (c *Checker) PodGCWaits() []PodGCWait {
	out := make([]PodGCWait, 0, len(c.gcWaits))
	for _, w := range c.gcWaits {
		out = append(out, *w)
	}
	return out
}

type dsState struct {
	key   string
	e     *dsEntry
	nodes map[string]*nodeTrack
	// Aggregates over nodes, kept incrementally. byController counts the
	// disrupted nodes whose disruption the controller made (see nodeTrack).
	mustRun, notOK, disrupted, byController, surging int
	// podless counts the must-run nodes without an active pod of the
	// current template: zero once the controller has created every pod.
	podless int
	// unav and surge judge disrupted against maxUnavailable and surging
	// against maxSurge, excusing a limit that shrank under them.
	unav, surge    limitGuard
	unplaced       int
	converged      bool
	convergedSince time.Time
	rollout        *rolloutState
	// templateSince is when the oracle first saw the current template;
	// lastActivity the last change of the DaemonSet or its pods (or a
	// controller start); stallWake the pending stall check.
	templateSince, lastActivity, stallWake time.Time
	// statusWant is the status the oracle expected when last judged, and
	// statusWantSince when that last changed (see statusDue).
	statusWant      statusWant
	statusWantSince time.Time
	// firstCurrentRV is the lowest creation resourceVersion of a pod of
	// the current template first seen since it became current (0: none).
	firstCurrentRV uint64
	// surgeChanged is when the oracle last saw the strategy start or stop
	// allowing surge (zero: never since the DaemonSet appeared).
	surgeChanged time.Time
}

// recentLimit is a maxUnavailable limit that applied until shortly before.
type recentLimit struct {
	until   time.Time
	allowed int
}

type nodeTrack struct {
	view nodeView
	ok   bool
	// lostAt is when the node last stopped being must-run (or appeared not
	// must-run); lostFromMustRun says it was must-run just before (in this
	// incarnation, or the previous one of its name), so that a controller's
	// lagging cache may still have shown it must-run for CacheLag.
	lostAt          time.Time
	lostFromMustRun bool
	everMustRun     bool
	// staleMustRunUntil is when an earlier version of the node, one this
	// DaemonSet must run on, was replaced (World.mustRunUntil): for a
	// DaemonSet that appeared or changed just after, the controller's cache
	// may pair it with that version.
	staleMustRunUntil time.Time
	wasAvailable      bool // rollout attribution, see Overunavailable
	// byController says the controller made the node's current disruption:
	// it began when a pod was deleted by someone other than the harness.
	// Otherwise the cluster made it (a pod failed or turned unready, the
	// harness deleted it, the node became must-run again without a pod).
	byController bool
}

// disrupted says the node counts against maxUnavailable: must-run, without
// an available pod, though it had one since the rollout began.
func (tr *nodeTrack) disrupted() bool {
	v := tr.view
	return v.exists && v.mustRun && !v.available && tr.wasAvailable
}

type episodeKey struct {
	ds, node, pod string
	kind          Kind
}

// NewChecker returns a Checker with an empty World.
func NewChecker(cfg Config) *Checker {
	return &Checker{
		cfg:         cfg,
		w:           newWorld(cfg.CacheLag),
		ds:          map[string]*dsState{},
		byUID:       map[types.UID]*dsState{},
		open:        map[episodeKey]*Violation{},
		atOnce:      map[episodeKey]bool{},
		misplacedRV: map[episodeKey]uint64{},
		limitOpen:   map[episodeKey]limitOpening{},
		orphanEp:    map[string]episodeKey{},
		joinOpen:    map[[2]string]*NodeJoin{},
		gcOpen:      map[[2]string]*PodGCWait{},
		repairOpen:  map[[2]string]*NodeRepair{},
		requested:   map[string]bool{},
	}
}

// Retracted counts limit and status episodes withdrawn because the event that ended
// them came first in etcd's order (see retractableEpisode).
func (c *Checker) Retracted() int { return c.retracted }

// World is the Checker's view; read it, do not Apply to it directly.
func (c *Checker) World() *World { return c.w }

// Now is the latest event or Advance time.
func (c *Checker) Now() time.Time { return c.now }

// Apply feeds one event. Instants at which a pod becomes available
// (minReadySeconds) that fall before the event are evaluated first.
func (c *Checker) Apply(ev Event) error {
	if ev.Time.Before(c.now) {
		ev.Time = c.now // World counts it as clamped below
		c.w.clamped++
	}
	c.runWakes(ev.Time)
	ch, err := c.w.apply(ev)
	if err != nil {
		return err
	}
	c.eventRV = 0
	if o, ok := ev.Object.(metav1.Object); ok {
		c.eventRV = resourceVersion(o)
	}
	c.curRelisted = ev.Relisted
	defer func() { c.eventRV, c.curRelisted = 0, false }()
	t := c.w.now
	c.revs.see(c.eventRV, t)
	c.now = t
	c.last = EventRef{Time: t, Kind: ev.Kind, Object: describe(ev.Object)}
	switch {
	case ch.ds != "":
		c.onDS(ch.ds, t)
	case ch.node != "":
		c.onNode(ch.node, ch.nodeNew, t)
	case ch.pod != "":
		c.onPod(ch, t)
	}
	c.checkBarriers(t)
	return nil
}

// Advance moves time forward without an event, evaluating the instants at
// which pods become available. Later events older than t are clamped to t.
func (c *Checker) Advance(t time.Time) {
	c.runWakes(t)
	if t.After(c.now) {
		c.now = t
	}
	c.checkBarriers(c.now)
}

// Finish advances to t and ends every open violation there, marked
// Unresolved. It returns all violations, as Violations does.
func (c *Checker) Finish(t time.Time) []Violation {
	c.Advance(t)
	c.judgeDisruptions(c.now.Add(c.cfg.CacheLag))
	c.judgeBeside(c.now.Add(c.cfg.CacheLag))
	for k, v := range c.open {
		v.End, v.Unresolved = c.now, true
		if c.lasted(k, v, v.End) {
			c.reported = append(c.reported, *v)
		}
		delete(c.open, k)
	}
	clear(c.atOnce)
	clear(c.orphanEp)
	return c.Violations()
}

// Violations returns the ended episodes that lasted at least their grace and
// the open ones that have already lasted that long (End zero), sorted by
// Start, DaemonSet, Kind, Node, Pod.
func (c *Checker) Violations() []Violation {
	out := slices.Clone(c.reported)
	for k, v := range c.open {
		if c.lasted(k, v, c.now) && !c.awaitingReorder(k, v) {
			out = append(out, *v)
		}
	}
	sortViolations(out)
	return out
}

// awaitingReorder says whether open episode v is a misplaced pod that a node
// update still on its way may withdraw (withdrawReordered): for CacheLag
// after it began. Finish and closing episodes do not wait.
func (c *Checker) awaitingReorder(k episodeKey, v *Violation) bool {
	_, ok := c.misplacedRV[k]
	return ok && c.now.Sub(v.Start) < c.cfg.CacheLag
}

// OpenViolations returns the conditions that hold now, whatever their grace,
// with End zero, in the order of Violations.
func (c *Checker) OpenViolations() []Violation {
	out := make([]Violation, 0, len(c.open))
	for _, v := range c.open {
		out = append(out, *v)
	}
	sortViolations(out)
	return out
}

func sortViolations(vs []Violation) {
	slices.SortFunc(vs, func(a, b Violation) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.DaemonSet+"\x00"+string(a.Kind)+"\x00"+a.Node+"\x00"+a.Pod,
			b.DaemonSet+"\x00"+string(b.Kind)+"\x00"+b.Node+"\x00"+b.Pod)
	})
}

// Converged says whether the DaemonSet is converged now (see Verdict) and
// since when; for an absent DaemonSet, whether none of its pods is left.
func (c *Checker) Converged(key string) (bool, time.Time) {
	if s, ok := c.ds[key]; ok {
		return s.converged, s.convergedSince
	}
	return c.goneConverged(key), time.Time{}
}

// podsPlaced says whether every node that must run the DaemonSet's pod has
// an active pod of its current template, Ready or not: the controller's own
// work of a create is done. False while the view lacks the DaemonSet.
func (c *Checker) podsPlaced(key string) bool {
	s, ok := c.ds[key]
	return ok && s.podless == 0
}

func (c *Checker) goneConverged(key string) bool {
	uid, ok := c.w.dsUID(key)
	if !ok {
		return true
	}
	for _, pods := range c.w.owned[uid] {
		for _, p := range pods {
			if p.pod.DeletionTimestamp == nil {
				return false
			}
		}
	}
	return true
}

func (c *Checker) grace(k Kind) time.Duration { return c.cfg.Grace[k] }

// lasted says whether episode v, running until t, is a violation: it lasted
// its kind's grace, or it is a wrong action that no grace excuses.
func (c *Checker) lasted(k episodeKey, v *Violation, t time.Time) bool {
	return c.atOnce[k] || t.Sub(v.Start) >= c.grace(k.kind)
}

// onDS handles a DaemonSet event: a new template starts a rollout, and every
// node is re-evaluated.
func (c *Checker) onDS(key string, t time.Time) {
	e, live := c.w.dss[key]
	if live && e.ds.DeletionTimestamp != nil {
		live = false
	}
	s := c.ds[key]
	if s != nil && (!live || s.e.ds.UID != e.ds.UID) {
		c.dropDS(s, t)
		s = nil
	}
	if live {
		if s == nil {
			s = &dsState{key: key, e: e, nodes: map[string]*nodeTrack{}, templateSince: t}
			c.ds[key] = s
			c.byUID[e.ds.UID] = s
		} else {
			prev := s.e
			s.e = e
			if prev.surge() != e.surge() {
				s.surgeChanged = t
			}
			if sameSpec(prev, e) {
				// A status write: nothing else the oracle judges changed.
				c.checkStatus(s, t)
				return
			}
			if prev.rev.hash != e.rev.hash {
				s.templateSince, s.firstCurrentRV = t, 0
			}
			switch {
			case !e.rolling():
				c.endRollout(s, t, RolloutAbandoned)
			case prev.rev.hash != e.rev.hash:
				c.startRollout(s, prev.rev.hash, t)
			case !prev.rolling() && s.outdated():
				// From OnDelete to RollingUpdate: the old pods get replaced now.
				c.startRollout(s, "", t)
			}
		}
		names := c.w.NodeNames()
		names = append(names, c.w.podNodes(e.ds.UID)...)
		names = append(names, sortedKeys(s.nodes)...)
		slices.Sort(names)
		for _, n := range slices.Compact(names) {
			if n != "" {
				c.refresh(s, n, t)
			}
		}
		c.countUnplaced(s)
		c.activity(s, t)
		c.settle(s, t)
	}
	c.refreshOrphans(t)
}

// outdated says whether some node holds an active pod of an old revision.
func (s *dsState) outdated() bool {
	for _, tr := range s.nodes {
		if tr.view.active > tr.view.current {
			return true
		}
	}
	return false
}

// sameSpec says whether two versions of a DaemonSet are judged alike: same
// object, revision, strategy, minReadySeconds and selector. The controller
// writes status often; this spares a pass over every node for each write.
func sameSpec(a, b *dsEntry) bool {
	return a.ds.UID == b.ds.UID && a.rev == b.rev &&
		(a.ds.DeletionTimestamp == nil) == (b.ds.DeletionTimestamp == nil) &&
		a.ds.Spec.MinReadySeconds == b.ds.Spec.MinReadySeconds &&
		reflect.DeepEqual(a.ds.Spec.UpdateStrategy, b.ds.Spec.UpdateStrategy) &&
		reflect.DeepEqual(a.ds.Spec.Selector, b.ds.Spec.Selector)
}

// dropDS forgets a DaemonSet that went away (or was replaced under the same
// name): its conditions no longer apply.
func (c *Checker) dropDS(s *dsState, t time.Time) {
	for k := range c.open {
		if k.ds == s.key && k.kind != OrphanPod {
			c.closeEpisode(k, t)
		}
	}
	c.endRollout(s, t, RolloutDeleted)
	for k, j := range c.joinOpen {
		if k[0] == s.key {
			j.Ended, j.EndedBy = t, JoinDaemonSetGone
			delete(c.joinOpen, k)
		}
	}
	c.endRepairs(s.key, t)
	delete(c.byUID, s.e.ds.UID)
	delete(c.ds, s.key)
}

func (c *Checker) onNode(name string, added bool, t time.Time) {
	for _, key := range sortedKeys(c.ds) {
		s := c.ds[key]
		if added {
			j := &NodeJoin{DaemonSet: key, Node: name, NodeAdded: c.revs.firstSeen(c.eventRV, t)}
			if n, ok := c.w.nodes[name]; ok {
				j.NodeCreated = n.node.CreationTimestamp.Time
			}
			c.joins = append(c.joins, j)
			c.joinOpen[[2]string{key, name}] = j
		}
		c.refresh(s, name, t)
		c.settle(s, t)
	}
}

func (c *Checker) onPod(ch change, t time.Time) {
	done := map[*dsState]bool{}
	for _, uid := range ch.owners {
		s := c.byUID[uid]
		if s == nil || uid == "" || done[s] {
			continue
		}
		done[s] = true
		c.activity(s, t)
		c.curPod = ch.pod
		for _, n := range slices.Compact(slices.Sorted(slices.Values(ch.podNodes))) {
			if n == "" {
				c.countUnplaced(s)
			} else {
				c.refresh(s, n, t)
			}
		}
		c.curPod = ""
		if pe := c.w.pods[ch.pod]; ch.podNew && pe != nil && pe.owner == uid {
			c.checkStaleCreate(s, pe, t)
			c.checkBesideOrphan(s, pe, t)
			c.checkBesideTerminating(s, pe, t)
		}
		c.settle(s, t)
	}
	c.refreshOrphan(ch.pod, t)
}

func (c *Checker) countUnplaced(s *dsState) {
	s.unplaced = 0
	for _, p := range c.w.podsOn(s.e.ds.UID, "") {
		if p.pod.DeletionTimestamp == nil {
			s.unplaced++
		}
	}
}

// refresh re-evaluates one node for one DaemonSet at time t and updates the
// node's episodes, the aggregates and the rollout and join records.
func (c *Checker) refresh(s *dsState, name string, t time.Time) {
	var node *corev1.Node
	if ne, ok := c.w.nodes[name]; ok {
		node = ne.node
	}
	pods := c.w.podsOn(s.e.ds.UID, name)
	v := evalNode(s.e, node, pods, t)
	tr := s.nodes[name]
	if tr == nil {
		tr = &nodeTrack{}
		s.nodes[name] = tr
	}
	s.account(tr, -1)
	prev, wasDisrupted := tr.view, tr.disrupted()
	c.noteDisruption(s, name, prev, v, t)
	if v.exists && v.mustRun && !tr.view.mustRun {
		c.withdrawReordered(episodeKey{ds: s.key, node: name, kind: PodOnIneligibleNode}, node)
	}
	if v.exists && !v.mustRun && !(tr.view.exists && !tr.view.mustRun) {
		tr.lostAt = t
		tr.lostFromMustRun = tr.view.exists && tr.view.mustRun || !tr.view.exists && tr.everMustRun
	}
	if v.exists && v.mustRun {
		tr.everMustRun = true
	}
	if v.exists && !v.mustRun {
		if until, ok := c.w.mustRunUntil(name, s.e, t); ok && until.After(tr.staleMustRunUntil) {
			tr.staleMustRunUntil = until
		}
	}
	tr.view, tr.ok = v, v.ok(s.e)
	if s.rollout != nil && v.available {
		tr.wasAvailable = true
	}
	if tr.disrupted() && !wasDisrupted {
		tr.byController = c.deletedByController()
	}
	s.account(tr, +1)

	k := episodeKey{ds: s.key, node: name}
	nonTerminating := v.active + v.terminal
	k.kind = DuplicatePods
	c.episode(k, v.exists && v.mayRun && v.duplicate(s.e), t, func(x *Violation) {
		x.Peak = max(x.Peak, v.active)
		x.Allowed = 1
		if s.e.surge() {
			x.Allowed = 2
		}
		if x.Detail == "" {
			x.Detail = fmt.Sprintf("%d active pods (%d current)", v.active, v.current)
		}
	})
	inelig, why := false, ""
	if v.exists && nonTerminating > 0 && !v.mustRun {
		// A pod placed where the controller could not have thought the
		// node must-run is a wrong action, whatever it does later.
		if p, rv := c.misplaced(pods, tr, node); p != "" {
			inelig, why = true, fmt.Sprintf("pod %s placed on a node that was not must-run (%s)", p, v.reason)
			ek := episodeKey{ds: s.key, node: name, kind: PodOnIneligibleNode}
			c.atOnce[ek] = true
			if old, ok := c.misplacedRV[ek]; rv != 0 && (!ok || rv < old) {
				c.misplacedRV[ek] = rv
			}
		} else if !v.mayRun {
			// Placed in time, but the node no longer admits it: deleting
			// it is the controller's latency, within the grace.
			inelig, why = true, v.reason
		}
	}
	k.kind = PodOnIneligibleNode
	c.episode(k, inelig, t, func(x *Violation) {
		if x.Detail == "" {
			x.Detail = why
		}
	})
	late, unbound, forGC := 0, 0, 0
	var lateRV uint64
	if !v.exists {
		late, unbound, forGC, lateRV = c.w.splitOnMissingNode(pods, name)
	}
	k.kind = PodOnDeletedNode
	if v.exists {
		// The node came (back): pods of a later revision were made for it,
		// and only the watches delivered them first.
		c.withdrawReordered(k, node)
	}
	c.episode(k, late+unbound > 0, t, func(x *Violation) {
		if x.Detail == "" {
			x.Detail = fmt.Sprintf("a node absent from the view holds %d pods created after it was deleted and %d unbound pods pinned to it", late, unbound)
		}
	})
	if late > 0 {
		// A pod made for a node already gone is a wrong action, not a slow
		// one: no grace excuses it.
		c.atOnce[k] = true
		if old, ok := c.misplacedRV[k]; lateRV != 0 && (!ok || lateRV < old) {
			c.misplacedRV[k] = lateRV
		}
	}
	c.trackPodGCWait(s.key, name, forGC, t)
	k.kind = MissingPod
	c.episode(k, v.exists && v.mustRun && v.active == 0, t, func(x *Violation) {
		if x.Detail == "" && v.terminating+v.terminal > 0 {
			x.Detail = fmt.Sprintf("%d terminating, %d failed or succeeded", v.terminating, v.terminal)
		}
	})

	if !v.nextAvailable.IsZero() {
		heap.Push(&c.wakes, wake{at: v.nextAvailable, ds: s.key, node: name})
	}
	if s.rollout != nil {
		s.rollout.observe(name, v, t)
	}
	if j := c.joinOpen[[2]string{s.key, name}]; j != nil {
		// Open until both the eligibility and the Ready pod are seen: the
		// watches may deliver them in either order.
		j.observe(v, t, c.revs.firstSeen(c.eventRV, t))
		switch {
		case j.Measured():
			delete(c.joinOpen, [2]string{s.key, name})
		case !v.exists:
			j.Ended, j.EndedBy = t, JoinNodeGone
			delete(c.joinOpen, [2]string{s.key, name})
		}
	}
	c.trackRepair(s, name, prev, v, t)
	if !v.exists && v.active+v.terminal+v.terminating == 0 {
		s.account(tr, -1)
		delete(s.nodes, name)
	}
}

// trackPodGCWait opens a PodGCWait when pods for the pod GC appear on a
// deleted node and closes it when none is left.
func (c *Checker) trackPodGCWait(ds, node string, forGC int, t time.Time) {
	key := [2]string{ds, node}
	w := c.gcOpen[key]
	switch {
	case forGC > 0 && w == nil:
		w = &PodGCWait{DaemonSet: ds, Node: node, NodeDeleted: c.w.goneNodes[node]}
		c.gcWaits = append(c.gcWaits, w)
		c.gcOpen[key] = w
	case forGC == 0 && w != nil:
		w.PodsGone = t
		delete(c.gcOpen, key)
	}
}

// withdrawReordered drops the open episode k, unreported, when the node
// update that made the node must-run, or the node's (re)creation, was
// written before its misplaced or late pods (a lower resourceVersion): the
// pod and node watches are separate streams, so the oracle may see a pod the
// controller created after a node's taint was lifted, or for a node just
// created, before it sees the lift or the node. Violations holds such an episode back
// for CacheLag (awaitingReorder), so that a run stopped at its first
// violation does not stop on it first.
func (c *Checker) withdrawReordered(k episodeKey, node *corev1.Node) {
	podRV, ok := c.misplacedRV[k]
	if !ok {
		return
	}
	delete(c.misplacedRV, k)
	if nodeRV := resourceVersion(node); c.open[k] != nil && nodeRV != 0 && nodeRV < podRV {
		delete(c.open, k)
		delete(c.atOnce, k)
	}
}

// misplaced returns a non-terminating pod that was placed on a node not
// must-run for the DaemonSet when the controller could have known it, or "".
// If the node was must-run until lostAt, a pod placed up to CacheLag later
// is excused (the controller's cache may not have shown the change yet);
// one placed before lostAt may stay (upstream's shouldContinueRunning). The
// same holds up to CacheLag after staleMustRunUntil, when the DaemonSet
// appeared or changed after the node did: its first sight may have paired
// it with the node's previous version. If the node never was must-run in
// this incarnation (a joining node still not-ready, a node tainted from the
// start), any pod created since the node was is misplaced: no cache ever
// showed it must-run. Placement times are the earlier of the pod's first
// sighting and its creationTimestamp, whose whole seconds can only make
// them earlier: a doubt excuses.
func (c *Checker) misplaced(pods map[string]*podEntry, tr *nodeTrack, node *corev1.Node) (key string, firstRV uint64) {
	excusedUntil, lagged := tr.staleMustRunUntil, !tr.staleMustRunUntil.IsZero()
	if tr.lostFromMustRun {
		lagged = true
		if tr.lostAt.After(excusedUntil) {
			excusedUntil = tr.lostAt
		}
	}
	for _, p := range sortedValues(pods) {
		if p.pod.DeletionTimestamp != nil {
			continue
		}
		if lagged {
			placed := p.placedAt
			if ct := p.pod.CreationTimestamp.Time; !ct.IsZero() && ct.Before(placed) {
				placed = ct
			}
			if placed.After(excusedUntil.Add(c.cfg.CacheLag)) {
				return p.key, p.firstRV
			}
			continue
		}
		created, nodeCreated := p.pod.CreationTimestamp.Time, node.CreationTimestamp.Time
		if created.IsZero() || nodeCreated.IsZero() {
			// No timestamps (tests, or a client that strips them): fall
			// back to the oracle's own sightings.
			if p.placedAt.After(tr.lostAt.Add(c.cfg.CacheLag)) {
				return p.key, 0
			}
			continue
		}
		if !created.Before(nodeCreated) {
			return p.key, p.firstRV
		}
	}
	return "", 0
}

// account adds (sign +1) or removes (-1) a node's share of the aggregates.
func (s *dsState) account(tr *nodeTrack, sign int) {
	v := tr.view
	if v.exists && v.mustRun {
		s.mustRun += sign
		if tr.disrupted() {
			s.disrupted += sign
			if tr.byController {
				s.byController += sign
			}
		}
		if v.surging() {
			s.surging += sign
		}
		if v.current == 0 {
			s.podless += sign
		}
	}
	if !tr.ok && (v.exists || v.active+v.terminal+v.terminating > 0) {
		s.notOK += sign
	}
}

// deletedByController says the pod event being applied deleted its pod (it
// is terminating or gone) and the harness did not ask for that: a node that
// loses its available pod so lost it to the controller. Anything else that
// leaves a node without an available pod (the pod failed or turned unready
// in place, the harness deleted it) the cluster did; a correct controller
// counts it against maxUnavailable but cannot prevent it.
func (c *Checker) deletedByController() bool {
	if c.curPod == "" || c.requested[c.curPod] {
		return false
	}
	pe := c.w.pods[c.curPod]
	return pe == nil || pe.pod.DeletionTimestamp != nil
}

// settle updates the DaemonSet-wide state after its nodes were refreshed.
func (c *Checker) settle(s *dsState, t time.Time) {
	conv := s.notOK == 0 && s.unplaced == 0
	if conv && !s.converged {
		s.convergedSince = t
		s.converged = conv
		c.armStatus(s)
	}
	s.converged = conv
	c.checkStatus(s, t)
	c.armStall(s)
	// Without surge, two pods on a node are DuplicatePods alone.
	maxSurge, _ := s.e.limits(s.mustRun)
	sk := episodeKey{ds: s.key, kind: Oversurge}
	overSurge, maxSurge := s.surge.judge(s.surging, s.surging, maxSurge, t, c.cfg.LimitLag, c.open[sk] != nil)
	c.retractableEpisode(sk, s, s.e.surge() && overSurge, t, func(x *Violation) {
		if s.surging > x.Peak {
			x.Peak, x.Allowed = s.surging, maxSurge
		}
		if x.Detail == "" {
			x.Detail = fmt.Sprintf("%d of %d must-run nodes surging, maxSurge %d", s.surging, s.mustRun, maxSurge)
		}
	})
	r := s.rollout
	if r == nil {
		return
	}
	_, allowed := s.e.limits(s.mustRun)
	k := episodeKey{ds: s.key, kind: Overunavailable}
	over, allowed := s.unav.judge(s.disrupted, s.byController, allowed, t, c.cfg.LimitLag, c.open[k] != nil)
	over = over && !conv
	c.retractableEpisode(k, s, over, t, func(x *Violation) {
		if s.disrupted > x.Peak {
			x.Peak, x.Allowed = s.disrupted, allowed
		}
		if x.Detail == "" {
			x.Detail = fmt.Sprintf("%d of %d must-run nodes disrupted, maxUnavailable %d: %s", s.disrupted, s.mustRun, allowed, c.disruptedNodes(s, 12))
		}
	})
	// After the episode: a retracted one restored the peak it had raised.
	if s.disrupted > r.PeakUnavailable {
		if !over {
			// Excused: the limit shrank under the count, or the cluster
			// made it; the level excused is what was allowed.
			allowed = max(allowed, s.disrupted)
		}
		r.PeakUnavailable, r.AllowedAtPeak, r.ClusterMadeAtPeak = s.disrupted, allowed, s.disrupted-s.byController
	}
	if conv {
		c.endRollout(s, t, RolloutConverged)
	}
}

// disruptedNodes describes up to max disrupted nodes and their pods, so that
// an Overunavailable says which nodes it counted.
func (c *Checker) disruptedNodes(s *dsState, max int) string {
	var parts []string
	for _, name := range sortedKeys(s.nodes) {
		tr := s.nodes[name]
		if !tr.disrupted() {
			continue
		}
		if len(parts) == max {
			parts = append(parts, "...")
			break
		}
		var pods []string
		for _, p := range sortedValues(c.w.podsOn(s.e.ds.UID, name)) {
			state := string(p.pod.Status.Phase)
			switch {
			case p.pod.DeletionTimestamp != nil:
				state = "terminating"
			case !p.readySince.IsZero():
				state = "ready since " + p.readySince.Format("15:04:05.000")
			}
			rev := "old"
			if s.e.rev.matches(p.pod) {
				rev = "new"
			}
			pods = append(pods, fmt.Sprintf("%s %s %s", p.key, rev, state))
		}
		by := "cluster's"
		if tr.byController {
			by = "controller's"
		}
		parts = append(parts, fmt.Sprintf("%s (%s) [%s]", name, by, strings.Join(pods, "; ")))
	}
	return strings.Join(parts, ", ")
}

// limitGuard judges a count (disrupted or surging nodes) against a
// percentage limit that can shrink when must-run nodes leave, and against
// disruptions the cluster made beside the controller's.
type limitGuard struct {
	// last and lastMade are the count and the controller's share of it at
	// the previous judgement; excused, when not 0, the level excused
	// because the limit shrank under it or the cluster pushed it over.
	last, lastMade, excused int
	// lastAllowed is the limit then; recent the higher limits a lagging
	// controller may still apply (see LimitLag), and clusterMade when the
	// cluster last added to the count, which such a controller may not
	// have seen yet.
	lastAllowed int
	recent      []recentLimit
	clusterMade []time.Time
}

// reset starts judging afresh at count under limit (a new rollout).
func (g *limitGuard) reset(count, limit int) { *g = limitGuard{last: count, lastAllowed: limit} }

// judge says whether count is over limit at t, and the limit it applied: the
// higher of the current one and those that shrank less than lag ago (the
// controller decides on a cache that shows departures a little late), plus
// one for each node the cluster added to the count less than lag ago (it
// may not have seen those either). made is the part of count the controller
// made; the rest the cluster did. A count over the limit only because the
// limit shrank under it, or because the cluster added to it, is excused as
// long as the controller adds nothing to it and it does not grow again from
// its lowest level since (a node disrupted while over is not); open says
// the episode is already open (then nothing is excused).
func (g *limitGuard) judge(count, made, limit int, t time.Time, lag time.Duration, open bool) (bool, int) {
	if limit < g.lastAllowed && lag > 0 {
		g.recent = append(g.recent, recentLimit{until: t.Add(lag), allowed: g.lastAllowed})
	}
	g.lastAllowed = limit
	kept := g.recent[:0]
	for _, l := range g.recent {
		if t.Before(l.until) {
			kept = append(kept, l)
			limit = max(limit, l.allowed)
		}
	}
	g.recent = kept
	byCluster := count > g.last && made <= g.lastMade
	if byCluster && lag > 0 {
		for range count - g.last {
			g.clusterMade = append(g.clusterMade, t.Add(lag))
		}
	}
	seen := g.clusterMade[:0]
	for _, until := range g.clusterMade {
		if t.Before(until) {
			seen = append(seen, until)
		}
	}
	g.clusterMade = seen
	limit += len(seen)
	over := count > limit
	switch {
	case !over:
		g.excused = 0
	case count <= g.excused:
		// A recovery lowers the level excused: a node disrupted after it,
		// while still over, is not.
		g.excused = count
		over = false
	case (count <= g.last || byCluster) && !open:
		g.excused = count
		over = false
	}
	g.last, g.lastMade = count, made
	return over, limit
}

// limitOpening is what an open limit episode needs to be retracted.
type limitOpening struct {
	rv                         uint64
	peak, allowed, clusterMade int
	hadRollout                 bool
}

// retractableEpisode is episode for Overunavailable and Oversurge, which count
// disruptions over all of a DaemonSet's nodes, and for StatusMismatch. Pod and node events arrive
// on separate watch streams, so the oracle can see a controller's deletion
// before the node change that caused it (a label that made the node
// ineligible: its pods go, correctly). When the event that ends an episode
// has a lower resourceVersion than the one that began it, etcd ordered the
// end first: in the cluster's own order the limit was never exceeded, and
// the episode is retracted, with the rollout's peak as it was before it.
func (c *Checker) retractableEpisode(k episodeKey, s *dsState, on bool, t time.Time, fill func(*Violation)) {
	_, open := c.open[k]
	switch {
	case on && !open:
		lo := limitOpening{rv: c.eventRV}
		if r := s.rollout; r != nil && k.kind == Overunavailable {
			lo.hadRollout, lo.peak, lo.allowed, lo.clusterMade = true, r.PeakUnavailable, r.AllowedAtPeak, r.ClusterMadeAtPeak
		}
		c.limitOpen[k] = lo
	case !on && open:
		lo := c.limitOpen[k]
		delete(c.limitOpen, k)
		if lo.rv != 0 && c.eventRV != 0 && c.eventRV < lo.rv {
			delete(c.open, k)
			delete(c.atOnce, k)
			c.retracted++
			if r := s.rollout; r != nil && lo.hadRollout {
				r.PeakUnavailable, r.AllowedAtPeak, r.ClusterMadeAtPeak = lo.peak, lo.allowed, lo.clusterMade
			}
			return
		}
	}
	c.episode(k, on, t, fill)
}

// episode opens, updates or closes the episode k according to on.
func (c *Checker) episode(k episodeKey, on bool, t time.Time, fill func(*Violation)) {
	v, open := c.open[k]
	switch {
	case on && !open:
		v = &Violation{DaemonSet: k.ds, Kind: k.kind, Node: k.node, Pod: k.pod, Start: t}
		c.open[k] = v
		fill(v)
	case on:
		fill(v)
	case open:
		c.closeEpisode(k, t)
	}
}

func (c *Checker) closeEpisode(k episodeKey, t time.Time) {
	v := c.open[k]
	delete(c.open, k)
	v.End = t
	if c.lasted(k, v, t) {
		c.reported = append(c.reported, *v)
	}
	delete(c.atOnce, k)
	delete(c.misplacedRV, k)
}

// refreshOrphans re-checks every orphan, after a DaemonSet changed.
func (c *Checker) refreshOrphans(t time.Time) {
	for _, key := range sortedKeys(c.w.orphans) {
		c.refreshOrphan(key, t)
	}
	for key := range c.orphanEp {
		if _, ok := c.w.orphans[key]; !ok {
			c.refreshOrphan(key, t)
		}
	}
}

func (c *Checker) refreshOrphan(podKey string, t time.Time) {
	var want episodeKey
	if p, ok := c.w.orphans[podKey]; ok && p.pod.DeletionTimestamp == nil {
		for _, key := range sortedKeys(c.ds) {
			e := c.ds[key].e
			if e.ds.Namespace == p.pod.Namespace && e.selector().Matches(labels.Set(p.pod.Labels)) {
				want = episodeKey{ds: key, node: p.node, pod: podKey, kind: OrphanPod}
				break
			}
		}
	}
	if have, ok := c.orphanEp[podKey]; ok && have != want {
		c.closeEpisode(have, t)
		delete(c.orphanEp, podKey)
	}
	if want.kind != "" {
		c.orphanEp[podKey] = want
		c.episode(want, true, t, func(*Violation) {})
	}
}

func describe(o any) string {
	switch o := o.(type) {
	case *corev1.Node:
		return "Node " + o.Name
	case *corev1.Pod:
		return "Pod " + objectKey(o.Namespace, o.Name)
	case *appsv1.DaemonSet:
		return "DaemonSet " + objectKey(o.Namespace, o.Name)
	default:
		return fmt.Sprintf("%T", o)
	}
}

// wake is an instant at which a node's verdict changes without an event.
type wake struct {
	at       time.Time
	ds, node string
	kind     int // wakeNode unless a causal check (causal.go)
}

type wakeHeap []wake

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wake)) }
func (h *wakeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// runWakes evaluates, in order, the wake instants not after t.
func (c *Checker) runWakes(t time.Time) {
	for len(c.wakes) > 0 && !c.wakes[0].at.After(t) {
		wk := heap.Pop(&c.wakes).(wake)
		s := c.ds[wk.ds]
		if wk.kind != wakeNode {
			if wk.at.After(c.now) {
				c.now = wk.at
			}
			switch {
			case wk.kind == wakeDisruption:
				c.judgeDisruptions(c.now)
			case wk.kind == wakeBeside:
				c.judgeBeside(c.now)
			case s == nil:
			case wk.kind == wakeStall:
				c.checkStall(s, c.now)
			case wk.kind == wakeStatus:
				c.checkStatus(s, c.now)
			}
			continue
		}
		if s == nil || s.nodes[wk.node] == nil {
			continue
		}
		if wk.at.After(c.now) {
			c.now = wk.at
		}
		c.last = EventRef{Time: c.now, Kind: Timer, Object: "Node " + wk.node}
		c.refresh(s, wk.node, c.now)
		c.settle(s, c.now)
		c.checkBarriers(c.now)
	}
}
