package oracle

import (
	"container/heap"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Rules that judge what the controller did against what it could have known,
// rather than against a grace: each names the wrong action, and the bound it
// allows for is the controller's view trailing the oracle's (Config.CacheLag)
// or a sync already under way (Config.StaleCreateLag), never the cluster's
// size.

// The causal kinds.
const (
	// UnrequestedDisruption: the only pod of a must-run node, current and
	// available, was deleted while nothing asked for it: no step deleted it,
	// the node stayed must-run, the template did not change, and the
	// DaemonSet lives on (each judged CacheLag around the deletion, as the
	// oracle's watches may see them in another order than the controller).
	UnrequestedDisruption Kind = "UnrequestedDisruption"
	// StaleCreate: a pod of an old revision was created after the
	// controller had shown it knew the current template (it had already
	// created a pod of it since the template changed: one DaemonSet is never
	// synced twice at once, so no earlier sync can still be creating), or
	// more than StaleCreateLag after the oracle saw the template.
	StaleCreate Kind = "StaleCreate"
	// CreatedBesideTerminating: a pod of a DaemonSet that does not surge
	// was created on a node while another of its pods there was still
	// terminating (neither Failed nor Succeeded). Upstream creates only on
	// a node that holds none of the DaemonSet's pods, terminating ones
	// included, so that without maxSurge a node never runs two at once (the
	// old one runs until its grace period ends: its resources are still
	// taken, a hostPort would clash). Judged in the pod watch's order,
	// which is etcd's: a controller that waited saw the old pod's deletion
	// before it created, so the oracle sees it first too. A pod first seen
	// in a relist is not judged (its order is unknown), nor one first seen
	// within CacheLag of the DaemonSet's surge setting changing.
	CreatedBesideTerminating Kind = "CreatedBesideTerminating"
	// RolloutStalled: during a rolling update, old pods stayed on must-run
	// nodes with room in the budget (fewer nodes unavailable than
	// maxUnavailable, or fewer surging than maxSurge) and nothing of the
	// DaemonSet changed for StallAfter while the controller was running.
	RolloutStalled Kind = "RolloutStalled"
	// StatusMismatch: the DaemonSet had been converged for StatusLag, with no
	// pod terminating, and its status still disagreed with the oracle's
	// counts (desired, current, updated, ready, available, misscheduled,
	// unavailable) or its observedGeneration trailed its generation.
	StatusMismatch Kind = "StatusMismatch"
)

// wake kinds besides a node's availability instant.
const (
	wakeNode = iota
	wakeDisruption
	wakeBeside
	wakeStall
	wakeStatus
)

// disruption is a deletion awaiting judgement at at+CacheLag.
type disruption struct {
	ds, node, pod string
	state         *dsState
	at            time.Time
}

// RequestDeletion tells the checker that the harness itself deletes the pod
// (namespace/name): its loss is not UnrequestedDisruption.
func (c *Checker) RequestDeletion(podKey string) { c.requested[podKey] = true }

// ControllerStopped tells the checker the controller is down (killed, or
// between a kill and a start): nothing it fails to do then is a stall.
func (c *Checker) ControllerStopped() { c.ctrlDown = true }

// ControllerStarted tells the checker the controller runs again at t: the
// stall clock of every DaemonSet starts again.
func (c *Checker) ControllerStarted(t time.Time) {
	c.ctrlDown = false
	for _, key := range sortedKeys(c.ds) {
		c.activity(c.ds[key], t)
	}
}

// noteDisruption records a candidate UnrequestedDisruption when the pod
// event being applied took the node's only current available pod away.
func (c *Checker) noteDisruption(s *dsState, node string, prev, v nodeView, t time.Time) {
	if c.curPod == "" || !prev.exists || !prev.mustRun || prev.active != 1 || prev.current != 1 || !prev.currentAvailable {
		return
	}
	if !v.exists || v.active != 0 || v.terminal != 0 {
		return // the node went, or the pod failed (its deletion is then the controller's job)
	}
	c.pendingLoss = append(c.pendingLoss, disruption{ds: s.key, node: node, pod: c.curPod, state: s, at: t})
	heap.Push(&c.wakes, wake{at: t.Add(c.cfg.CacheLag), ds: s.key, kind: wakeDisruption})
}

// judgeDisruptions reports the candidates whose judgement time has come.
func (c *Checker) judgeDisruptions(now time.Time) {
	kept := c.pendingLoss[:0]
	for _, d := range c.pendingLoss {
		if d.at.Add(c.cfg.CacheLag).After(now) {
			kept = append(kept, d)
			continue
		}
		if why := c.excuseDisruption(d); why == "" {
			c.reported = append(c.reported, Violation{DaemonSet: d.ds, Kind: UnrequestedDisruption, Node: d.node, Pod: d.pod,
				Start: d.at, End: d.at, Detail: fmt.Sprintf("pod %s, the node's only current available pod, was deleted while nothing asked for it", d.pod)})
		}
	}
	c.pendingLoss = kept
}

// excuseDisruption says why a lost pod is not the controller's fault, or "".
func (c *Checker) excuseDisruption(d disruption) string {
	s := c.ds[d.ds]
	switch {
	case c.requested[d.pod]:
		return "the harness deleted it"
	case s != d.state:
		return "the DaemonSet went"
	case !s.templateSince.Before(d.at.Add(-c.cfg.CacheLag)):
		return "the template changed around then"
	}
	tr := s.nodes[d.node]
	if tr == nil || !tr.view.exists || !tr.view.mustRun {
		return "the node is no longer must-run"
	}
	if !tr.lostAt.IsZero() && tr.lostAt.After(d.at.Add(-c.cfg.CacheLag)) {
		return "the node was not must-run around then"
	}
	return ""
}

// besideTerminating is a pod created beside a terminating one, awaiting
// judgement at at+CacheLag (the DaemonSet's surge setting may have changed
// around then, seen by the oracle after the controller).
type besideTerminating struct {
	ds, node, pod, terminating string
	state                      *dsState
	at                         time.Time
}

// checkBesideTerminating notes a pod first seen at t, from the watch, that
// joined a terminating pod of its DaemonSet on its node without surge.
func (c *Checker) checkBesideTerminating(s *dsState, pe *podEntry, t time.Time) {
	if c.curRelisted || pe.node == "" || pe.pod.DeletionTimestamp != nil || s.e.surge() {
		return
	}
	if _, ok := c.w.nodes[pe.node]; !ok {
		return // a pod for a node that is gone is PodOnDeletedNode's
	}
	for _, q := range sortedValues(c.w.podsOn(s.e.ds.UID, pe.node)) {
		if q == pe || q.pod.DeletionTimestamp == nil || isTerminalPod(q.pod) {
			continue
		}
		c.pendingBeside = append(c.pendingBeside, besideTerminating{ds: s.key, node: pe.node, pod: pe.key, terminating: q.key, state: s, at: t})
		heap.Push(&c.wakes, wake{at: t.Add(c.cfg.CacheLag), ds: s.key, kind: wakeBeside})
		return
	}
}

// judgeBeside reports the pods created beside a terminating one whose
// judgement time has come, unless the DaemonSet went or its surge setting
// changed within CacheLag of the create.
func (c *Checker) judgeBeside(now time.Time) {
	kept := c.pendingBeside[:0]
	for _, b := range c.pendingBeside {
		if b.at.Add(c.cfg.CacheLag).After(now) {
			kept = append(kept, b)
			continue
		}
		s := c.ds[b.ds]
		if s != b.state || !s.surgeChanged.IsZero() && !s.surgeChanged.Before(b.at.Add(-c.cfg.CacheLag)) {
			continue
		}
		c.reported = append(c.reported, Violation{DaemonSet: b.ds, Kind: CreatedBesideTerminating, Node: b.node, Pod: b.pod, Start: b.at, End: b.at,
			Detail: fmt.Sprintf("pod %s created while pod %s on the node was terminating, and the DaemonSet does not surge", b.pod, b.terminating)})
	}
	c.pendingBeside = kept
}

// checkStaleCreate judges a pod first seen at t.
func (c *Checker) checkStaleCreate(s *dsState, pe *podEntry, t time.Time) {
	if c.cfg.StaleCreateLag <= 0 || pe.pod.DeletionTimestamp != nil {
		return
	}
	if s.e.rev.matches(pe.pod) {
		if pe.firstRV != 0 && (s.firstCurrentRV == 0 || pe.firstRV < s.firstCurrentRV) {
			s.firstCurrentRV = pe.firstRV
		}
		return
	}
	created := pe.placedAt
	if ct := pe.pod.CreationTimestamp.Time; !ct.IsZero() && ct.Before(created) {
		created = ct
	}
	why := ""
	switch {
	case s.firstCurrentRV != 0 && pe.firstRV > s.firstCurrentRV:
		why = fmt.Sprintf("pod %s of an old revision created after the controller had created a pod of the current one", pe.key)
	case created.After(s.templateSince.Add(c.cfg.StaleCreateLag)):
		why = fmt.Sprintf("pod %s of an old revision created %s after the current template was seen", pe.key, created.Sub(s.templateSince).Round(time.Millisecond))
	default:
		return
	}
	c.reported = append(c.reported, Violation{DaemonSet: s.key, Kind: StaleCreate, Node: pe.node, Pod: pe.key, Start: t, End: t, Detail: why})
}

// activity restarts the DaemonSet's stall clock at t and ends a stall.
func (c *Checker) activity(s *dsState, t time.Time) {
	s.lastActivity = t
	k := episodeKey{ds: s.key, kind: RolloutStalled}
	if c.open[k] != nil {
		c.closeEpisode(k, t)
	}
	c.armStall(s)
}

// armStall schedules the stall check of an open rollout.
func (c *Checker) armStall(s *dsState) {
	if c.cfg.StallAfter <= 0 || s.rollout == nil {
		return
	}
	at := s.lastActivity.Add(c.cfg.StallAfter)
	if at.Equal(s.stallWake) {
		return
	}
	s.stallWake = at
	heap.Push(&c.wakes, wake{at: at, ds: s.key, kind: wakeStall})
}

// checkStall opens RolloutStalled when the rollout had room and nothing
// happened for StallAfter.
func (c *Checker) checkStall(s *dsState, now time.Time) {
	if s.rollout == nil || c.ctrlDown || now.Before(s.lastActivity.Add(c.cfg.StallAfter)) {
		return
	}
	if why := c.roomLeft(s); why != "" {
		c.episode(episodeKey{ds: s.key, kind: RolloutStalled}, true, now, func(x *Violation) {
			if x.Detail == "" {
				x.Detail = fmt.Sprintf("nothing changed for %s while %s", c.cfg.StallAfter, why)
			}
		})
		c.atOnce[episodeKey{ds: s.key, kind: RolloutStalled}] = true
	}
}

// roomLeft says what the controller could have done next in the rollout,
// or "" when it had to wait (budget used, a pod terminating or not placed).
func (c *Checker) roomLeft(s *dsState) string {
	unavailable, surging, oldNodes := 0, 0, 0
	for _, tr := range s.nodes {
		v := tr.view
		if v.terminating > 0 {
			return ""
		}
		if !v.exists || !v.mustRun {
			continue
		}
		if !v.available {
			unavailable++
		}
		if v.surging() {
			surging++
		}
		if v.active > v.current && (s.e.surge() && v.current == 0 || !s.e.surge()) {
			oldNodes++
		}
	}
	if oldNodes == 0 || s.unplaced > 0 {
		return ""
	}
	maxSurge, maxUnavailable := s.e.limits(s.mustRun)
	switch {
	case s.e.surge() && surging < maxSurge:
		return fmt.Sprintf("%d nodes held only old pods and %d of %d surge slots were used", oldNodes, surging, maxSurge)
	case !s.e.surge() && unavailable < maxUnavailable:
		return fmt.Sprintf("%d nodes held old pods and %d of %d unavailable were allowed", oldNodes, unavailable, maxUnavailable)
	}
	return ""
}

// expectedStatus is the status a correct controller writes for the
// DaemonSet as the oracle sees it, and false when the oracle cannot tell
// (pods terminating or failed, whose counting depends on the moment).
func (s *dsState) expectedStatus() (want [7]int32, ok bool) {
	var desired, current, updated, ready, available, misscheduled int32
	for _, tr := range s.nodes {
		v := tr.view
		if v.terminating > 0 || v.terminal > 0 || v.active > 1 {
			return want, false
		}
		if !v.exists {
			continue
		}
		if !v.mustRun {
			if v.active > 0 {
				misscheduled++
			}
			continue
		}
		desired++
		if v.active == 0 {
			continue
		}
		current++
		if v.ready {
			ready++
		}
		if v.available {
			available++
		}
		if v.current > 0 {
			updated++
		}
	}
	return [7]int32{desired, current, updated, ready, available, misscheduled, desired - available}, true
}

var statusFields = [7]string{"desiredNumberScheduled", "currentNumberScheduled", "updatedNumberScheduled",
	"numberReady", "numberAvailable", "numberMisscheduled", "numberUnavailable"}

// checkStatus opens or closes StatusMismatch for a DaemonSet.
func (c *Checker) checkStatus(s *dsState, now time.Time) {
	if !c.judgesStatus() {
		return
	}
	k := episodeKey{ds: s.key, kind: StatusMismatch}
	// What the status should say can change while the DaemonSet stays
	// converged (a node with a pod becomes must-run again, the generation
	// moves): the controller gets StatusLag from that change too.
	// Only while converged: unconverged, nothing is judged, and the walk over
	// every node would run on every event.
	if s.converged {
		want, ok := s.expectedStatus()
		if sig := (statusWant{counts: want, ok: ok, generation: s.e.ds.Generation}); sig != s.statusWant {
			s.statusWant, s.statusWantSince = sig, now
			heap.Push(&c.wakes, wake{at: now.Add(c.cfg.StatusLag), ds: s.key, kind: wakeStatus})
		}
	}
	why := ""
	if s.converged && !now.Before(s.statusDue(c.cfg.StatusLag)) {
		why = s.statusDiff()
	}
	// Retractable as the limit kinds are: the status write that opens an
	// episode can reach the oracle before the node or pod change it already
	// counted (separate watch streams); an episode that a lower-versioned
	// event closes was never a disagreement in etcd's order.
	c.retractableEpisode(k, s, why != "", now, func(x *Violation) {
		if x.Detail == "" {
			x.Detail = why
		}
	})
	if why != "" {
		c.atOnce[k] = true
	}
}

// statusDiff lists where the status disagrees with the oracle, or "".
func (s *dsState) statusDiff() string {
	want, ok := s.expectedStatus()
	if !ok {
		return ""
	}
	st := s.e.ds.Status
	have := [7]int32{st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.UpdatedNumberScheduled,
		st.NumberReady, st.NumberAvailable, st.NumberMisscheduled, st.NumberUnavailable}
	if s.e.onDelete() {
		have[2] = want[2] // OnDelete counts updated pods too, but a stale one is no failure to converge
	}
	out := ""
	for i := range want {
		if want[i] != have[i] {
			out += fmt.Sprintf("%s %d, oracle %d; ", statusFields[i], have[i], want[i])
		}
	}
	if st.ObservedGeneration < s.e.ds.Generation {
		out += fmt.Sprintf("observedGeneration %d < generation %d; ", st.ObservedGeneration, s.e.ds.Generation)
	}
	if out != "" {
		out = "status: " + out[:len(out)-2]
	}
	return out
}

// statusWant is what the oracle expects the status to say.
type statusWant struct {
	counts     [7]int32
	ok         bool
	generation int64
}

// statusDue is when the status must agree: StatusLag after the DaemonSet
// converged and after the expected status last changed.
func (s *dsState) statusDue(lag time.Duration) time.Time {
	due := s.convergedSince
	if s.statusWantSince.After(due) {
		due = s.statusWantSince
	}
	return due.Add(lag)
}

// judgesStatus says whether StatusMismatch is checked at all.
func (c *Checker) judgesStatus() bool { return c.cfg.StatusLag > 0 && !c.cfg.SkipStatus }

// armStatus schedules the status check at the end of StatusLag.
func (c *Checker) armStatus(s *dsState) {
	if c.judgesStatus() && s.converged {
		heap.Push(&c.wakes, wake{at: s.convergedSince.Add(c.cfg.StatusLag), ds: s.key, kind: wakeStatus})
	}
}

// checkBesideOrphan judges a pod first seen at t: created on a node where
// an orphan the DaemonSet selects had been an orphan (with those labels)
// for longer than CacheLag, it is a second daemon on that node, which
// adopting would have avoided. The wait counts from when the pod became an
// orphan on that node (the later of its release and its placement): a pod
// its old owner released a moment before the create may not have reached
// the controller's cache.
// The DaemonSet's own age does not count: creating for it shows the
// controller knew it.
func (c *Checker) checkBesideOrphan(s *dsState, pe *podEntry, t time.Time) {
	if pe.node == "" || pe.pod.DeletionTimestamp != nil {
		return
	}
	created := pe.placedAt
	if ct := pe.pod.CreationTimestamp.Time; !ct.IsZero() && ct.Before(created) {
		created = ct
	}
	sel := s.e.selector()
	for _, o := range sortedValues(c.w.orphans) {
		if o.node != pe.node || o.pod.Namespace != pe.pod.Namespace || o.pod.DeletionTimestamp != nil || isTerminalPod(o.pod) {
			continue
		}
		since := o.orphanedAt
		if o.placedAt.After(since) {
			since = o.placedAt
		}
		if !sel.Matches(labels.Set(o.pod.Labels)) || !since.Add(c.cfg.CacheLag).Before(created) {
			continue
		}
		c.reported = append(c.reported, Violation{DaemonSet: s.key, Kind: OrphanPod, Node: pe.node, Pod: pe.key, Start: t, End: t,
			Detail: fmt.Sprintf("pod %s created beside orphan %s, which the DaemonSet selects and should have adopted", pe.key, o.key)})
		return
	}
}

func isTerminalPod(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// StatusSettled says whether every converged DaemonSet's status agrees with
// the oracle, or has had StatusLag to do so (a StatusMismatch is then open).
// The runner waits for it at the end of a run, so that every run judges the
// status at least once.
func (c *Checker) StatusSettled() bool {
	if !c.judgesStatus() {
		return true
	}
	for _, s := range c.ds {
		if s.converged && c.now.Before(s.statusDue(c.cfg.StatusLag)) && s.statusDiff() != "" {
			return false
		}
	}
	return true
}

// StatusDiff says where the DaemonSet's status (ds is "namespace/name")
// disagrees with what the oracle sees now, converged or not: "" when it
// agrees, or when the oracle cannot tell (pods terminating or failed).
// The runner uses it while a fault refuses the controller's creates, when
// the status must still count what exists.
func (c *Checker) StatusDiff(ds string) string {
	s := c.ds[ds]
	if s == nil {
		return ""
	}
	return s.statusDiff()
}
