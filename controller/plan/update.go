package plan

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// rollingUpdate is upstream's rollingUpdate (update.go) with a deterministic
// order. The nodes it looks at are existing nodes with pods (including nodes
// that no longer qualify) and those that should run a pod. Upstream also
// counts nodes that were deleted, whose pods can only wait for pod GC: a
// deleted node's terminating pod would hold a unit of maxUnavailable.
//
// Order, within upstream's priority classes, always by node name:
//   - without surge: every old pod that is not available is deleted; then old
//     available pods, in node-name order, up to maxUnavailable minus the
//     nodes already unavailable;
//   - with surge: a new pod goes to every node whose old pod is not available;
//     then to nodes with an available old pod, in node-name order, up to
//     maxSurge minus the surges in flight; old pods on nodes that no longer
//     qualify are deleted, in node-name order, only while more pods are
//     available than desired.
func (p *planner) rollingUpdate() {
	desired := 0
	for _, st := range p.order {
		if st.exists && st.shouldRun {
			desired++
		}
	}
	maxSurge, maxUnavailable, err := UpdateLimits(p.ds, desired)
	if err != nil {
		p.events = append(p.events, Event{Type: corev1.EventTypeWarning, Reason: InvalidUpdateStrategyReason,
			Message: "rolling update skipped: " + err.Error()})
		return
	}
	if maxSurge == 0 {
		p.updateWithoutSurge(maxUnavailable)
		return
	}
	p.updateWithSurge(maxSurge, desired)
}

// considered reports whether upstream's nodeToDaemonPods holds the node,
// leaving out deleted nodes.
func considered(st *nodeState) bool {
	return st.exists && (len(st.pods) > 0 || st.shouldRun)
}

type nodePod struct {
	st  *nodeState
	pod *corev1.Pod
}

func (np nodePod) node() string { return np.st.name }

// updateWithoutSurge deletes old pods so that at most maxUnavailable nodes are
// unavailable; manage recreates them on a later sync. Pods being deleted count
// as unavailable (their node has neither an old nor a new pod).
func (p *planner) updateWithoutSurge(maxUnavailable int) {
	numUnavailable := 0
	var replacements []nodePod
	candidates := p.candidatePods[:0]
	for _, st := range p.order {
		if !considered(st) {
			continue
		}
		newPod, oldPod, ok := p.findUpdated(st)
		if !ok {
			// manage prunes the excess first; count the node as unavailable.
			numUnavailable++
			continue
		}
		switch {
		case (newPod == nil) == (oldPod == nil):
			// Nothing yet, or both: manage creates or prunes; unavailable meanwhile.
			numUnavailable++
		case newPod != nil:
			if !newPod.available {
				numUnavailable++
			}
		default:
			if !oldPod.available {
				// Replacing an unavailable pod costs no availability.
				replacements = append(replacements, nodePod{st, oldPod.Pod})
				numUnavailable++
			} else {
				candidates = append(candidates, nodePod{st, oldPod.Pod})
			}
		}
	}
	p.candidatePods = candidates // for the next sync
	remaining := min(max(maxUnavailable-numUnavailable, 0), len(candidates))
	firstByName(candidates, remaining, nodePod.node)
	p.deletes = slices.Grow(p.deletes, len(replacements)+remaining)
	for _, np := range replacements {
		p.delete(np.st, np.pod, RollingUpdateReason)
	}
	for _, np := range candidates[:remaining] {
		p.delete(np.st, np.pod, RollingUpdateReason)
	}
}

// updateWithSurge creates new pods next to old ones, at most maxSurge at a
// time for nodes whose old pod still serves, and deletes an old pod once its
// replacement is available.
func (p *planner) updateWithSurge(maxSurge, desired int) {
	numSurge, numAvailable := 0, 0
	var oldPodsToDelete, shouldNotRunPodsToDelete []nodePod
	var allowedNewNodes []*nodeState
	candidateNewNodes := p.candidateNodes[:0]
	for _, st := range p.order {
		if !considered(st) {
			continue
		}
		newPod, oldPod, ok := p.findUpdated(st)
		if !ok {
			// manage prunes the excess first; count the node as surging.
			numSurge++
			continue
		}
		// Availability counts every node, including those being sunset.
		if oldPod != nil {
			if oldPod.available {
				numAvailable++
			}
		} else if newPod != nil {
			if newPod.available {
				numAvailable++
			}
		}
		shouldRun := st.shouldRun
		switch {
		case oldPod == nil:
			// manage creates a missing pod.
		case newPod == nil:
			switch {
			case !oldPod.available && !shouldRun:
				oldPodsToDelete = append(oldPodsToDelete, nodePod{st, oldPod.Pod})
			case !oldPod.available:
				allowedNewNodes = append(allowedNewNodes, st)
			case !shouldRun:
				shouldNotRunPodsToDelete = append(shouldNotRunPodsToDelete, nodePod{st, oldPod.Pod})
			default:
				candidateNewNodes = append(candidateNewNodes, st)
			}
		default:
			if !newPod.available {
				numSurge++ // waiting for the new pod; newPlanner set the requeue
				continue
			}
			oldPodsToDelete = append(oldPodsToDelete, nodePod{st, oldPod.Pod})
		}
	}

	// Surge promises full availability: when the constraints moved a pod to
	// another node, the old one goes only once more pods are available than desired.
	deletable := min(max(numAvailable-desired, 0), len(shouldNotRunPodsToDelete))
	firstByName(shouldNotRunPodsToDelete, deletable, nodePod.node)
	oldPodsToDelete = append(oldPodsToDelete, shouldNotRunPodsToDelete[:deletable]...)
	for _, np := range oldPodsToDelete {
		p.delete(np.st, np.pod, RollingUpdateReason)
	}

	p.candidateNodes = candidateNewNodes // for the next sync
	remaining := min(max(maxSurge-numSurge, 0), len(candidateNewNodes))
	firstByName(candidateNewNodes, remaining, (*nodeState).nodeName)
	for _, st := range append(allowedNewNodes, candidateNewNodes[:remaining]...) {
		p.create(st)
	}
}

// findUpdatedPodsOnNode: the node's one new and one old pod, ignoring pods
// being deleted; ok is false when there are more than one of either.
func (p *planner) findUpdated(st *nodeState) (newPod, oldPod *podState, ok bool) {
	for i := range st.pods {
		pod := &st.pods[i]
		if pod.terminating {
			continue
		}
		if pod.updated {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = pod
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = pod
		}
	}
	return newPod, oldPod, true
}
