package bench

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dsbench/dsbench/reports"
)

// MinStallAfter is the least time a pod may stay Pending, or terminating, on
// a Ready node before the harness calls it a simulator stall.
const MinStallAfter = 20 * time.Second

// A pod that waits is only stalled if kwok has nothing else to do: it has
// neither started a pod nor finalized a terminating one for stallIdleAfter
// (one queue holds both; in one 5000-node rollout kwok only deleted for
// 24 s). kwok v0.8.0 works through its pods in the order it receives them,
// which is not the order they were bound: each time its pod watch is
// re-established (kube-apiserver closes it as unresponsive when kwok falls
// behind, twice a second during a 5000-pod create here), kwok watches again
// from resourceVersion 0 and receives every pod again, in name order. Pods
// bound meanwhile reach its queue late and out of order, so "kwok started a
// pod bound after this one" is no evidence that it lost this one
// (reports/README.md, "What the 5000-node stalls were").
const stallIdleAfter = 5 * time.Second

// stallTracker finds pods that kwok never starts, or never finalizes.
// kwok v0.8.0's pod controller drops the event of a pod whose node its node
// controller has not registered yet (PodController.need) and never retries,
// so a pod bound to a node that just joined (or was re-created under the
// same name) stays Pending until kwok next receives it again (its pod watch
// re-established: minutes when kwok keeps up). It also drops a stage whose
// request failed other than by a refused connection: a pod whose DELETE
// kube-apiserver dropped as it was killed ("unexpected EOF") stays
// terminating for good, and a controller that rightly waits for it (no
// surge) never replaces it. Either is the simulator's failure, not the
// controller's: the harness nudges such a pod (an annotation, which kwok
// sees as a new event) and reports every stall, so that no result silently
// depends on it. Pure: events and time come in, stalls go out.
type stallTracker struct {
	after            time.Duration          // for a Pending pod
	terminatingAfter time.Duration          // for a terminating pod
	pending          map[string]*stallEntry // pod key -> bound and waiting for kwok since
	done             []reports.SimulatorStall
	// lastAction is when kwok last started a pod or finalized a
	// terminating one.
	lastAction time.Time
}

type stallEntry struct {
	pod, node   string
	terminating bool // waits to be finalized, not started
	since       time.Time
	stalledAt   time.Time // zero until it counts as stalled
	nudged      bool
}

// newStallTracker bounds how long kwok may leave a bound pod Pending
// (after) and a deleted one terminating (terminatingAfter); neither less
// than MinStallAfter.
func newStallTracker(after, terminatingAfter time.Duration) *stallTracker {
	return &stallTracker{after: max(after, MinStallAfter), terminatingAfter: max(terminatingAfter, MinStallAfter),
		pending: map[string]*stallEntry{}}
}

// observe follows one pod event at t.
func (s *stallTracker) observe(key string, pod *corev1.Pod, deleted bool, t time.Time) {
	if deleted && pod.DeletionTimestamp != nil && pod.Spec.NodeName != "" {
		s.lastAction = t // kwok's pod-delete stage finalized it
	}
	e := s.pending[key]
	bound := !deleted && pod.Spec.NodeName != ""
	// kwok's pod-delete stage finalizes every bound pod that terminates,
	// whatever its phase.
	terminating := bound && pod.DeletionTimestamp != nil
	waiting := terminating || bound && pod.Status.Phase == corev1.PodPending
	switch {
	case waiting && (e == nil || e.node != pod.Spec.NodeName || e.terminating != terminating):
		if e != nil {
			s.end(e, t)
		}
		s.pending[key] = &stallEntry{pod: key, node: pod.Spec.NodeName, terminating: terminating, since: t}
	case !waiting && e != nil:
		if !deleted && pod.DeletionTimestamp == nil && pod.Spec.NodeName == e.node {
			s.lastAction = t // kwok moved it on: Running, Failed or Succeeded
		}
		s.end(e, t)
		delete(s.pending, key)
	}
}

func (s *stallTracker) end(e *stallEntry, t time.Time) {
	if !e.stalledAt.IsZero() {
		s.done = append(s.done, e.stall(t, false))
	}
}

func (e *stallEntry) stall(t time.Time, open bool) reports.SimulatorStall {
	return reports.SimulatorStall{Pod: e.pod, Node: e.node, Terminating: e.terminating, Start: e.since,
		Seconds: t.Sub(e.since).Seconds(), Nudged: e.nudged, Open: open}
}

// due returns the pods that have now waited past their bound on a node that
// is Ready (a pod on a NotReady node waits for the node, rightly) while kwok
// is idle, and marks them stalled and nudged: the caller nudges each once.
func (s *stallTracker) due(now time.Time, nodeReady func(string) bool) []string {
	if now.Sub(s.lastAction) < stallIdleAfter {
		return nil // kwok is still working through its queue
	}
	var out []string
	for key, e := range s.pending {
		after := s.after
		if e.terminating {
			after = s.terminatingAfter
		}
		if e.nudged || now.Sub(e.since) < after || !nodeReady(e.node) {
			continue
		}
		e.stalledAt, e.nudged = now, true
		out = append(out, key)
	}
	slices.Sort(out)
	return out
}

// finish returns every stall, ended ones and those still open at now.
func (s *stallTracker) finish(now time.Time) []reports.SimulatorStall {
	out := slices.Clone(s.done)
	for _, e := range s.pending {
		if !e.stalledAt.IsZero() {
			out = append(out, e.stall(now, true))
		}
	}
	slices.SortFunc(out, func(a, b reports.SimulatorStall) int { return a.Start.Compare(b.Start) })
	return out
}
