package oracle

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Visibility reports whether a step's writes are in the oracle's view yet.
// Without it, a barrier could complete on the old state: between the API's
// acknowledgement and the watch event, the world still looks converged.
type Visibility func(w *World) bool

// Barrier waits for a DaemonSet to converge after a step.
type Barrier struct {
	Name      string
	DaemonSet string // namespace/name
	// Start is the step's start, normally the acknowledgement of its API write.
	Start time.Time
	// Visible gates completion; nil means the step is visible at once. Once
	// it held, it is not asked again: later writes may legitimately undo
	// what it looked for (a failed pod deleted and replaced, say).
	Visible Visibility
	// Hold is how long convergence must last to complete the barrier; the
	// barrier reports the start of the first such stretch. 0: at once.
	Hold time.Duration
}

// BarrierID identifies a barrier within its Checker.
type BarrierID int

// Convergence is how a barrier completed.
type Convergence struct {
	Barrier   string
	DaemonSet string
	Start     time.Time
	// At is the first evaluation time not before Start from which the step
	// was visible and Converged (see Verdict) held for the barrier's Hold;
	// Event is the event (or Timer) evaluated then.
	At    time.Time
	Event EventRef
	// Immediate: it already held when the barrier was added. At is then
	// Start, or the latest event time if that is later (an upper bound).
	Immediate bool
	// Placed is the first evaluation time not before Start from which the
	// step was visible and every node that must run the DaemonSet's pod
	// had an active pod of its current template, Ready or not (see
	// podsPlaced); never after At.
	Placed time.Time
}

// Latency is At-Start.
func (c Convergence) Latency() time.Duration { return c.At.Sub(c.Start) }

type barrierState struct {
	b       Barrier
	done    bool
	res     Convergence
	visible bool // Visible held once
	// since is the start of the current converged stretch (zero: none),
	// sinceEv the event evaluated then, immediate that it began at AddBarrier.
	since     time.Time
	sinceEv   EventRef
	immediate bool
	placed    time.Time // see Convergence.Placed; zero: not yet
}

// AddBarrier registers a barrier, to be completed by later events. Add it
// right when the step's write is acknowledged, from the goroutine that feeds
// the Checker.
func (c *Checker) AddBarrier(b Barrier) BarrierID {
	st := &barrierState{b: b}
	c.barriers = append(c.barriers, st)
	if c.barrierHolds(st) {
		at := b.Start
		if c.now.After(at) {
			at = c.now
		}
		st.since, st.sinceEv, st.immediate, st.placed = at, c.last, true, at
		c.completeHeld(st, at)
	}
	return BarrierID(len(c.barriers) - 1)
}

// ConvergedAt returns the barrier's completion, false while pending.
func (c *Checker) ConvergedAt(id BarrierID) (Convergence, bool) {
	if id < 0 || int(id) >= len(c.barriers) {
		return Convergence{}, false
	}
	st := c.barriers[id]
	return st.res, st.done
}

func (c *Checker) barrierHolds(st *barrierState) bool {
	if !st.visible {
		if st.b.Visible != nil && !st.b.Visible(c.w) {
			return false
		}
		st.visible = true
	}
	ok, _ := c.Converged(st.b.DaemonSet)
	return ok
}

// checkBarriers follows each pending barrier's converged stretch at t.
func (c *Checker) checkBarriers(t time.Time) {
	for _, st := range c.barriers {
		if st.done || t.Before(st.b.Start) {
			continue
		}
		holds := c.barrierHolds(st)
		if st.placed.IsZero() && st.visible && (holds || c.podsPlaced(st.b.DaemonSet)) {
			st.placed = t
		}
		if !holds {
			st.since, st.immediate = time.Time{}, false
			continue
		}
		if st.since.IsZero() {
			st.since, st.sinceEv = t, c.last
		}
		c.completeHeld(st, t)
	}
}

// completeHeld completes the barrier when its stretch has lasted Hold by t.
func (c *Checker) completeHeld(st *barrierState, t time.Time) {
	if t.Sub(st.since) < st.b.Hold {
		return
	}
	st.done = true
	// placed was set no later than since: convergence implies every pod.
	st.res = Convergence{Barrier: st.b.Name, DaemonSet: st.b.DaemonSet, Start: st.b.Start, At: st.since, Event: st.sinceEv, Immediate: st.immediate, Placed: st.placed}
}

// Verdict evaluates the DaemonSet from scratch at the Checker's time.
func (c *Checker) Verdict(key string) Verdict { return Evaluate(c.w, key, c.now) }

// GenerationObserved: the view holds the DaemonSet at metadata.generation gen
// or later; use the generation the API returned for a step that writes it.
func GenerationObserved(key string, gen int64) Visibility {
	return func(w *World) bool {
		ds, ok := w.DaemonSet(key)
		return ok && ds.Generation >= gen
	}
}

// DaemonSetAbsent: the view no longer holds the DaemonSet.
func DaemonSetAbsent(key string) Visibility {
	return func(w *World) bool {
		_, ok := w.DaemonSet(key)
		return !ok
	}
}

// NodesPresent: the view holds every named node.
func NodesPresent(names ...string) Visibility {
	return func(w *World) bool {
		for _, n := range names {
			if _, ok := w.Node(n); !ok {
				return false
			}
		}
		return true
	}
}

// MustRunOn: the view holds the DaemonSet and every named node, and the pod
// must run on each. For node joins, NodesPresent is too early: a new node
// carries node.kubernetes.io/not-ready:NoSchedule at first, which daemon pods
// do not tolerate, so the DaemonSet stays converged until it is lifted.
func MustRunOn(key string, names ...string) Visibility {
	return func(w *World) bool {
		e, ok := w.dss[key]
		if !ok {
			return false
		}
		for _, n := range names {
			ne, ok := w.nodes[n]
			if !ok || !e.pl.decide(ne.node).mustRun {
				return false
			}
		}
		return true
	}
}

// NodesSettled: the view holds every named node, free of the not-ready and
// unreachable NoSchedule taints that the node lifecycle puts on new or failing
// nodes. Use it for node joins instead of NodesPresent: until those taints are
// lifted, daemon pods need not run on the node. Unlike MustRunOn it does not
// wait forever on nodes a DaemonSet's selector leaves out.
func NodesSettled(names ...string) Visibility {
	return func(w *World) bool {
		for _, n := range names {
			node, ok := w.Node(n)
			if !ok {
				return false
			}
			for _, t := range node.Spec.Taints {
				if t.Effect == corev1.TaintEffectNoSchedule && (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable) {
					return false
				}
			}
		}
		return true
	}
}

// NodesAbsent: the view holds none of the named nodes.
func NodesAbsent(names ...string) Visibility {
	return func(w *World) bool {
		for _, n := range names {
			if _, ok := w.Node(n); ok {
				return false
			}
		}
		return true
	}
}

// AllOf holds when every one holds.
func AllOf(vs ...Visibility) Visibility {
	return func(w *World) bool {
		for _, v := range vs {
			if !v(w) {
				return false
			}
		}
		return true
	}
}

// Explain says why a barrier has not completed, for a timeout's report: the
// step's writes not yet visible, or what keeps its DaemonSet from converging.
func (c *Checker) Explain(id BarrierID) string {
	if id < 0 || int(id) >= len(c.barriers) {
		return "unknown barrier"
	}
	st := c.barriers[id]
	if st.done {
		return "converged"
	}
	if !st.visible && st.b.Visible != nil && !st.b.Visible(c.w) {
		return st.b.DaemonSet + ": the step's writes never reached the oracle's watch"
	}
	if !st.since.IsZero() {
		return fmt.Sprintf("%s: converged since %s, not yet for the hold of %s", st.b.DaemonSet, st.since.Format(time.RFC3339Nano), st.b.Hold)
	}
	return c.Verdict(st.b.DaemonSet).Problems(3)
}
