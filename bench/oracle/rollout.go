package oracle

import (
	"time"
)

// RolloutOutcome says how a rollout ended; empty while in progress.
type RolloutOutcome string

// Rollout outcomes.
const (
	RolloutConverged  RolloutOutcome = "Converged"  // the DaemonSet converged on the new template
	RolloutSuperseded RolloutOutcome = "Superseded" // another template arrived first
	RolloutAbandoned  RolloutOutcome = "Abandoned"  // the strategy stopped being RollingUpdate
	RolloutDeleted    RolloutOutcome = "Deleted"    // the DaemonSet went away
)

// Rollout times one template change of a RollingUpdate DaemonSet, from the
// event that showed the new template (Start) until the DaemonSet converged on
// it (End). Switching from OnDelete to RollingUpdate while old pods remain
// starts one too (FromHash empty). OnDelete DaemonSets have no rollouts: the
// controller replaces nothing by itself.
type Rollout struct {
	DaemonSet        string
	FromHash, ToHash string
	Start, End       time.Time
	Outcome          RolloutOutcome
	// PeakUnavailable is the most disrupted must-run nodes at once (see
	// Overunavailable), AllowedAtPeak the resolved maxUnavailable then, or
	// the level the oracle excused (the limit shrank under the count, or
	// the cluster made it), and ClusterMadeAtPeak how many of those nodes
	// the cluster disrupted rather than the controller.
	PeakUnavailable, AllowedAtPeak, ClusterMadeAtPeak int
	// LastNodeAvailable is when the last node got an available current pod.
	LastNodeAvailable time.Time
	Nodes             []NodeRollout // sorted by node
}

// Duration is End-Start, zero while in progress.
func (r Rollout) Duration() time.Duration {
	if r.End.IsZero() {
		return 0
	}
	return r.End.Sub(r.Start)
}

// NodeRollout times the replacement on one node: every node that was
// must-run or held an old pod during the rollout. Zero times did not happen.
type NodeRollout struct {
	Node string
	// OldPodGone is when the node's last old active pod was deleted (became
	// terminating or vanished).
	OldPodGone time.Time
	// OldPodVanished is when, after OldPodGone, no pod of the DaemonSet was
	// terminating on the node either: its deletion was finalized.
	OldPodVanished time.Time
	// NewPodCreated, NewPodReady and NewPodAvailable are when a current pod
	// was first seen on the node, Ready, and available (Ready for
	// minReadySeconds).
	NewPodCreated, NewPodReady, NewPodAvailable time.Time
}

type rolloutState struct {
	Rollout
	nodes  map[string]*NodeRollout
	hadOld map[string]bool
}

func (c *Checker) startRollout(s *dsState, from string, t time.Time) {
	carry := s.rollout != nil
	c.endRollout(s, t, RolloutSuperseded)
	r := &rolloutState{
		Rollout: Rollout{DaemonSet: s.key, FromHash: from, ToHash: s.e.rev.hash, Start: t},
		nodes:   map[string]*NodeRollout{},
		hadOld:  map[string]bool{},
	}
	s.rollout = r
	c.rollouts = append(c.rollouts, r)
	// Nodes available now are the ones the rollout may disrupt; nodes
	// disrupted by a superseded rollout stay counted.
	for _, tr := range s.nodes {
		s.account(tr, -1)
		tr.wasAvailable = tr.view.available || carry && tr.wasAvailable
		s.account(tr, +1)
	}
	_, limit := s.e.limits(s.mustRun)
	s.unav.reset(s.disrupted, limit)
}

func (c *Checker) endRollout(s *dsState, t time.Time, outcome RolloutOutcome) {
	r := s.rollout
	if r == nil {
		return
	}
	r.End, r.Outcome = t, outcome
	s.rollout = nil
	for _, tr := range s.nodes {
		s.account(tr, -1)
		tr.wasAvailable = false
		s.account(tr, +1)
	}
	if k := (episodeKey{ds: s.key, kind: Overunavailable}); c.open[k] != nil {
		c.closeEpisode(k, t)
	}
}

// observe records the node's progress after it was re-evaluated at t.
func (r *rolloutState) observe(name string, v nodeView, t time.Time) {
	old := v.active - v.current
	n := r.nodes[name]
	if n == nil {
		if !v.exists || !v.mustRun && old == 0 {
			return
		}
		n = &NodeRollout{Node: name}
		r.nodes[name] = n
	}
	if old > 0 {
		r.hadOld[name] = true
	} else if r.hadOld[name] && n.OldPodGone.IsZero() {
		n.OldPodGone = t
	}
	if !n.OldPodGone.IsZero() && n.OldPodVanished.IsZero() && v.terminating == 0 {
		n.OldPodVanished = t
	}
	if v.current > 0 && n.NewPodCreated.IsZero() {
		n.NewPodCreated = t
	}
	if v.currentReady && n.NewPodReady.IsZero() {
		n.NewPodReady = t
	}
	if v.currentAvailable && n.NewPodAvailable.IsZero() {
		n.NewPodAvailable = t
		if t.After(r.LastNodeAvailable) {
			r.LastNodeAvailable = t
		}
	}
}

// Rollouts returns every rollout seen, in the order they started.
func (c *Checker) Rollouts() []Rollout {
	out := make([]Rollout, 0, len(c.rollouts))
	for _, r := range c.rollouts {
		x := r.Rollout
		x.Nodes = make([]NodeRollout, 0, len(r.nodes))
		for _, k := range sortedKeys(r.nodes) {
			x.Nodes = append(x.Nodes, *r.nodes[k])
		}
		out = append(out, x)
	}
	return out
}

// NodeJoin times a node added while a DaemonSet existed, from the node's
// Added event to its daemon pod being Ready. Zero times did not happen (yet).
//
// Node times are dated by the revision clock: the first arrival, on any
// watch, of an event at least as recent as the node's own (see
// revisionClock), so that a node watch trailing the pod watch neither
// shortens a join nor puts its pod's Ready before its eligibility.
type NodeJoin struct {
	DaemonSet, Node string
	// NodeAdded is when the node's Added event was known; NodeCreated its
	// creationTimestamp (apiserver clock, whole seconds).
	NodeAdded, NodeCreated time.Time
	// MustRun is when the node first became must-run (often only once the
	// not-ready:NoSchedule taint is removed), PodCreated when an active pod
	// of the DaemonSet was first seen on it, PodReady when one was Ready.
	MustRun, PodCreated, PodReady time.Time
	// Ended is when the join stopped being followed unmeasured: its node
	// or its DaemonSet went away first.
	Ended time.Time
	// EndedBy says which: JoinNodeGone or JoinDaemonSetGone; "" while the
	// join is measured or still open.
	EndedBy string
}

// Why a join ended without a latency.
const (
	JoinNodeGone      = "node-gone"
	JoinDaemonSetGone = "daemonset-gone"
)

// Measured says whether the join has its latency: the node became must-run
// and its pod Ready, in whichever order the oracle saw them.
func (j NodeJoin) Measured() bool { return !j.MustRun.IsZero() && !j.PodReady.IsZero() }

// Latency is PodReady-MustRun, the controller's share of a join: from the
// moment the node became eligible to the pod Ready. Zero until measured,
// and never negative (a pod Ready before its node was eligible, in etcd's
// order, is a misplaced pod, which the oracle reports as such).
func (j NodeJoin) Latency() time.Duration {
	if !j.Measured() {
		return 0
	}
	return max(0, j.PodReady.Sub(j.MustRun))
}

// ClusterShare is MustRun-NodeAdded: how long the cluster took to make the
// node eligible (kwok marking it Ready, the node lifecycle controller lifting
// the not-ready taint). Zero until it became eligible.
func (j NodeJoin) ClusterShare() time.Duration {
	if j.MustRun.IsZero() {
		return 0
	}
	return max(0, j.MustRun.Sub(j.NodeAdded))
}

// observe takes the node's view at t; known is when the oracle could first
// have known of the event that produced it (the revision clock's date).
func (j *NodeJoin) observe(v nodeView, t, known time.Time) {
	if v.exists && v.mustRun && j.MustRun.IsZero() {
		j.MustRun = known
	}
	if v.active > 0 && j.PodCreated.IsZero() {
		j.PodCreated = t
	}
	if v.ready && j.PodReady.IsZero() {
		j.PodReady = t
	}
}

// NodeJoins returns every join, in the order the nodes were added: those
// measured, those still open, and those whose node or DaemonSet went first.
// A join whose node never became must-run and never had a Ready pod of the
// DaemonSet is not one (the DaemonSet does not run there) and is left out.
func (c *Checker) NodeJoins() []NodeJoin {
	var out []NodeJoin
	for _, j := range c.joins {
		if !j.MustRun.IsZero() || !j.PodReady.IsZero() {
			out = append(out, *j)
		}
	}
	return out
}
