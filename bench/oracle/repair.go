package oracle

import "time"

// NodeRepair times the return of a node's daemon pod after the harness
// deleted it (a scenario's pods step): from the deletion that left the
// must-run node without an active pod of the DaemonSet, through the deleted
// pod's finalization, to an active pod on the node again, then Ready and
// available. It splits a repair's time into the cluster's shares (kwok or
// the kubelet finalizing, the pod starting) and the controller's (gone →
// new pod), which a step's total mixes. Zero times did not happen (yet).
type NodeRepair struct {
	DaemonSet, Node string
	// Pod is the deleted pod whose event opened the repair.
	Pod string
	// Deleted is when the harness's deletion left the node without an
	// active pod: the pod became terminating, or vanished at once.
	Deleted time.Time
	// Vanished is when, after Deleted, no pod of the DaemonSet was
	// terminating on the node either.
	Vanished time.Time
	// Created, Ready and Available are when an active pod was seen on the
	// node again, Ready, and available (Ready for minReadySeconds).
	Created, Ready, Available time.Time
	// Ended is when the repair stopped being followed unmeasured, EndedBy
	// why: the node went or stopped being must-run (RepairNodeGone), or the
	// DaemonSet went (RepairDaemonSetGone).
	Ended   time.Time
	EndedBy string
}

// Why a repair ended without a latency.
const (
	RepairNodeGone      = "node-gone"
	RepairDaemonSetGone = "daemonset-gone"
)

// Measured says whether the repair has all its times.
func (r NodeRepair) Measured() bool {
	return !r.Vanished.IsZero() && !r.Created.IsZero() && !r.Available.IsZero()
}

// observe takes the node's view at t.
func (r *NodeRepair) observe(v nodeView, t time.Time) {
	if r.Vanished.IsZero() && v.terminating == 0 {
		r.Vanished = t
	}
	if r.Created.IsZero() && v.active > 0 {
		r.Created = t
	}
	if r.Ready.IsZero() && v.ready {
		r.Ready = t
	}
	if r.Available.IsZero() && v.available {
		r.Available = t
	}
}

// trackRepair opens a repair when the pod event being applied is the
// harness's deletion of the must-run node's last active pod, and follows
// the open one otherwise.
func (c *Checker) trackRepair(s *dsState, node string, prev, v nodeView, t time.Time) {
	key := [2]string{s.key, node}
	r := c.repairOpen[key]
	if r == nil {
		if c.curPod == "" || !c.requested[c.curPod] || !prev.exists || !prev.mustRun || prev.active == 0 ||
			!v.exists || !v.mustRun || v.active != 0 {
			return
		}
		r = &NodeRepair{DaemonSet: s.key, Node: node, Pod: c.curPod, Deleted: t}
		c.repairs = append(c.repairs, r)
		c.repairOpen[key] = r
	}
	if !v.exists || !v.mustRun {
		r.Ended, r.EndedBy = t, RepairNodeGone
		delete(c.repairOpen, key)
		return
	}
	r.observe(v, t)
	if r.Measured() {
		delete(c.repairOpen, key)
	}
}

// endRepairs ends the open repairs of a DaemonSet that went away.
func (c *Checker) endRepairs(ds string, t time.Time) {
	for k, r := range c.repairOpen {
		if k[0] == ds {
			r.Ended, r.EndedBy = t, RepairDaemonSetGone
			delete(c.repairOpen, k)
		}
	}
}

// NodeRepairs returns every repair, in the order they began: those
// measured, those still open, and those ended first.
func (c *Checker) NodeRepairs() []NodeRepair {
	out := make([]NodeRepair, 0, len(c.repairs))
	for _, r := range c.repairs {
		out = append(out, *r)
	}
	return out
}
