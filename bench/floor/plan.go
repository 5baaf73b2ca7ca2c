package floor

import (
	"cmp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/dsbench/dsbench/bench/oracle"
)

// Input is one instant of the oracle's view, plus the executor's own
// expectations (creates and deletes it issued that the view does not show
// yet).
type Input struct {
	DaemonSets []DaemonSet
}

// DaemonSet is a live DaemonSet (not being deleted) and the nodes it
// concerns: every existing node where its pod may run or where it holds a
// pod.
type DaemonSet struct {
	// Key is namespace/name.
	Key      string
	Strategy appsv1.DaemonSetUpdateStrategy
	Nodes    []Node
}

// Node is one existing node for one DaemonSet.
type Node struct {
	Name string
	// MustRun and MayRun are the oracle's eligibility verdict.
	MustRun, MayRun bool
	// Creating says a create for this node is in flight or not yet seen.
	Creating bool
	// Pods are the DaemonSet's pods on the node, and orphans it selects.
	Pods []Pod
}

// Pod is one pod as the view shows it.
type Pod struct {
	// Key is namespace/name.
	Key     string
	Created time.Time
	// Current: of the DaemonSet's current revision.
	Current bool
	// Terminal: Failed or Succeeded.
	Terminal bool
	// Terminating: the view shows its deletionTimestamp.
	Terminating bool
	// Deleting: the executor's delete is in flight or not yet seen.
	Deleting bool
	// Ready, and Available (Ready for minReadySeconds).
	Ready, Available bool
	// Orphan: no controller yet; the DaemonSet's selector matches it.
	Orphan bool
}

// Plan is what to do now; each list is sorted.
type Plan struct {
	Creates []Create
	Deletes []Delete
	Adopts  []Adopt
}

// Create is a pod to create on Node.
type Create struct{ DaemonSet, Node string }

// Delete is a pod to delete, and why.
type Delete struct {
	DaemonSet, Node, Pod string
	Reason               Reason
}

// Adopt is an orphan to take a controller reference to.
type Adopt struct{ DaemonSet, Pod string }

// Reason says why a pod is deleted.
type Reason string

// The reasons, after upstream's manage and rollingUpdate.
const (
	// IneligibleReason: the pod may not run on its node.
	IneligibleReason Reason = "Ineligible"
	// FailedReason: the pod is Failed or Succeeded.
	FailedReason Reason = "Failed"
	// ExcessReason: more active pods on the node than allowed.
	ExcessReason Reason = "Excess"
	// OutdatedReason: an old revision that the rolling update replaces.
	OutdatedReason Reason = "Outdated"
	// SurgedReason: an old pod whose surged replacement is available, or
	// that is not Ready beside its replacement.
	SurgedReason Reason = "Surged"
)

// Compute plans every DaemonSet. It is deterministic: the same Input gives
// the same Plan whatever the order of its slices.
func Compute(in Input) Plan {
	var p Plan
	for _, ds := range in.DaemonSets {
		planDaemonSet(ds, &p)
	}
	slices.SortFunc(p.Creates, func(a, b Create) int {
		return cmp.Or(cmp.Compare(a.DaemonSet, b.DaemonSet), cmp.Compare(a.Node, b.Node))
	})
	slices.SortFunc(p.Deletes, func(a, b Delete) int {
		return cmp.Or(cmp.Compare(a.DaemonSet, b.DaemonSet), cmp.Compare(a.Pod, b.Pod))
	})
	slices.SortFunc(p.Adopts, func(a, b Adopt) int {
		return cmp.Or(cmp.Compare(a.DaemonSet, b.DaemonSet), cmp.Compare(a.Pod, b.Pod))
	})
	return p
}

// Limits resolves maxSurge and maxUnavailable against the must-run nodes as
// upstream does, with the oracle's own resolution (the floor is judged by the
// same rule it follows): percentages rounded up, maxUnavailable 1 when both
// are 0. Both are 0 for OnDelete.
func Limits(s appsv1.DaemonSetUpdateStrategy, mustRun int) (maxSurge, maxUnavailable int) {
	return oracle.StrategyLimits(s, mustRun)
}

func rolling(s appsv1.DaemonSetUpdateStrategy) bool {
	return s.Type == appsv1.RollingUpdateDaemonSetStrategyType || s.Type == ""
}

// surges mirrors upstream's AllowsSurge: maxSurge scaled against one node.
func surges(s appsv1.DaemonSetUpdateStrategy) bool {
	n, _ := oracle.StrategyLimits(s, 1)
	return n > 0
}

// nodeState is a must-run node after the manage pass, for the rollout.
type nodeState struct {
	name     string
	creating bool
	old, cur *Pod // the remaining active pods (at most one of each)
	excess   bool // more than that remains
}

func planDaemonSet(ds DaemonSet, p *Plan) {
	// The input is read only; it comes sorted from the harness's view.
	nodes := ds.Nodes
	byName := func(a, b Node) int { return cmp.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(nodes, byName) {
		nodes = slices.Clone(nodes)
		slices.SortFunc(nodes, byName)
	}
	surge := surges(ds.Strategy)
	deleted := map[string]bool{}
	del := func(node string, pod *Pod, r Reason) {
		p.Deletes = append(p.Deletes, Delete{DaemonSet: ds.Key, Node: node, Pod: pod.Key, Reason: r})
		deleted[pod.Key] = true
	}
	// Orphans that stay are adopted, so that the oracle counts them as the
	// DaemonSet's and no second pod is created beside them.
	defer func() {
		for _, n := range nodes {
			for _, pod := range n.Pods {
				if pod.Orphan && !pod.Terminating && !pod.Deleting && !deleted[pod.Key] {
					p.Adopts = append(p.Adopts, Adopt{DaemonSet: ds.Key, Pod: pod.Key})
				}
			}
		}
	}()
	must := make([]nodeState, 0, len(nodes))
	var activeBuf []*Pod // one node's active pods, reused: none outlives its node
	byAge := func(a, b Pod) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Key, b.Key)) }
	for i := range nodes {
		n := &nodes[i]
		pods := n.Pods
		if !slices.IsSortedFunc(pods, byAge) {
			pods = slices.Clone(pods)
			slices.SortFunc(pods, byAge)
		}
		active := activeBuf[:0]
		unseenDelete := false // a delete of an active pod that the view does not show yet
		terminating := false  // a pod that is not Failed or Succeeded still terminates
		for j := range pods {
			pod := &pods[j]
			switch {
			case pod.Terminating:
				terminating = terminating || !pod.Terminal
				continue
			case pod.Deleting:
				unseenDelete = unseenDelete || !pod.Terminal
				continue
			}
			switch {
			case !n.MayRun:
				del(n.Name, pod, IneligibleReason)
			case pod.Terminal:
				del(n.Name, pod, FailedReason)
			default:
				active = append(active, pod)
			}
		}
		activeBuf = active
		switch {
		case !n.MayRun:
			continue
		case !n.MustRun:
			// The pod may stay, but only one, and for a rolling update only
			// a current one; nothing counts against the budget here.
			keep := slices.IndexFunc(active, func(q *Pod) bool { return q.Current })
			if keep < 0 {
				keep = 0
			}
			for j, pod := range active {
				switch {
				case j != keep:
					del(n.Name, pod, ExcessReason)
				case !pod.Current && rolling(ds.Strategy):
					del(n.Name, pod, OutdatedReason)
				}
			}
			continue
		}
		st := nodeState{name: n.Name, creating: n.Creating}
		if len(active) == 0 {
			// Never beside an active pod whose deletion the view does not
			// show yet: that would be two active pods on the node. Without
			// surge, not beside a terminating one either, as upstream: the
			// node would run two pods until it is gone.
			if !n.Creating && !unseenDelete && (surge || !terminating) {
				p.Creates = append(p.Creates, Create{DaemonSet: ds.Key, Node: n.Name})
				st.creating = true
			}
			must = append(must, st)
			continue
		}
		if !surge {
			// Keep an available pod if there is one, then a current one,
			// then the oldest (upstream keeps the oldest, which can take a
			// node's only available pod away).
			slices.SortStableFunc(active, func(a, b *Pod) int {
				return cmp.Or(-cmp.Compare(b2i(a.Available), b2i(b.Available)), -cmp.Compare(b2i(a.Current), b2i(b.Current)))
			})
			for _, pod := range active[1:] {
				del(n.Name, pod, ExcessReason)
			}
			if active[0].Current {
				st.cur = active[0]
			} else {
				st.old = active[0]
			}
			must = append(must, st)
			continue
		}
		// Surge: the oldest current and the oldest old pod may stay; the old
		// one goes once the current one is available, or if it is not Ready.
		for _, pod := range active {
			switch {
			case pod.Current && st.cur == nil:
				st.cur = pod
			case !pod.Current && st.old == nil:
				st.old = pod
			default:
				del(n.Name, pod, ExcessReason)
			}
		}
		if st.cur != nil && st.old != nil && (!st.old.Ready || st.cur.Available) {
			del(n.Name, st.old, SurgedReason)
			st.old = nil
		}
		must = append(must, st)
	}
	if !rolling(ds.Strategy) {
		return
	}
	maxSurge, maxUnavailable := Limits(ds.Strategy, countMustRun(nodes))
	if surge {
		rollSurge(ds.Key, must, maxSurge, p)
	} else {
		rollUnavailable(must, maxUnavailable, func(st nodeState) { del(st.name, st.old, OutdatedReason) })
	}
}

func countMustRun(nodes []Node) int {
	n := 0
	for _, x := range nodes {
		if x.MustRun && x.MayRun {
			n++
		}
	}
	return n
}

// rollUnavailable deletes old pods so that at most maxUnavailable must-run
// nodes lack an available pod; the next plans create their replacements.
// Unlike upstream, a node whose old pod is unavailable counts as unavailable
// too (it is replaced at once all the same): the oracle counts it if it was
// available once.
func rollUnavailable(must []nodeState, maxUnavailable int, deleteOld func(nodeState)) {
	unavailable := 0
	var candidates []nodeState
	for _, st := range must {
		switch {
		case st.cur == nil && st.old == nil:
			unavailable++
		case st.cur != nil:
			if !st.cur.Available {
				unavailable++
			}
		case !st.old.Available:
			unavailable++
			deleteOld(st)
		default:
			candidates = append(candidates, st)
		}
	}
	room := min(max(maxUnavailable-unavailable, 0), len(candidates))
	for _, st := range candidates[:room] {
		deleteOld(st)
	}
}

// rollSurge creates a current pod beside an old one on at most maxSurge
// must-run nodes at a time (the manage pass deletes the old one once the new
// one is available); an unavailable old pod gets its replacement at once.
func rollSurge(ds string, must []nodeState, maxSurge int, p *Plan) {
	surging := 0
	var candidates []nodeState
	for _, st := range must {
		switch {
		case st.old == nil:
		case st.cur != nil || st.creating:
			if st.cur == nil || !st.cur.Available {
				surging++
			}
		case !st.old.Available:
			p.Creates = append(p.Creates, Create{DaemonSet: ds, Node: st.name})
		default:
			candidates = append(candidates, st)
		}
	}
	room := min(max(maxSurge-surging, 0), len(candidates))
	for _, st := range candidates[:room] {
		p.Creates = append(p.Creates, Create{DaemonSet: ds, Node: st.name})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ChooseInFlight picks the floor's pacing for the next repetition: the
// first candidate not tried yet, then, once all were, the one whose trial
// converged fastest (the first on a tie). tried maps a candidate to its trial
// run's convergence seconds (+Inf when it did not converge).
func ChooseInFlight(candidates []int, tried map[int]float64) int {
	best := 0
	for i, c := range candidates {
		sec, ok := tried[c]
		if !ok {
			return c
		}
		if i == 0 || sec < tried[best] {
			best = c
		}
	}
	return best
}
