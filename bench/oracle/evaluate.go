package oracle

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Verdict is the oracle's judgement of one DaemonSet at one instant.
//
// Converged holds when the DaemonSet exists, is not being deleted, and every
// list below except Terminating and Orphans is empty. Node by node that means:
//   - a node where the pod must run has exactly one active pod (not
//     terminating, not Failed or Succeeded), and that pod is available (Ready
//     for minReadySeconds) and, unless the strategy is OnDelete, current;
//   - a node where the pod may run but must not (a NoSchedule taint came after
//     the pod) has at most one active pod, current unless OnDelete: upstream
//     replaces old pods there by deleting them, so none may be left;
//   - a node where the pod may not run, or a node that no longer exists, has
//     no pod at all except terminating ones;
//   - no pod without a target node, and no Failed or Succeeded pod not yet
//     deleted.
//
// Terminating pods never block convergence: the controller has done its part
// by deleting them, and finishing the deletion is the kubelet's (or kwok's)
// job; they are listed in Terminating for callers who want to wait for them
// too. Orphans (pods without a controller that the selector matches) are
// listed but do not block either: adopting them is a separate concern.
//
// When the DaemonSet is absent or being deleted, Converged means that none of
// its pods is left except terminating ones (Leftover is empty).
type Verdict struct {
	DaemonSet string
	Exists    bool
	Converged bool
	// Hash is the oracle's own current revision hash.
	Hash string
	// MustRun counts existing nodes where the pod must run; MaxSurge and
	// MaxUnavailable are the strategy resolved against it, percentages
	// rounded up, with upstream's fallback of maxUnavailable 1 when both are 0
	// (both 0 for OnDelete).
	MustRun                  int
	MaxSurge, MaxUnavailable int
	Unavailable              int      // must-run nodes without an available pod
	Missing                  []string // must-run nodes without an active pod
	NotAvailable             []string // must-run nodes whose pod is there but not (current and) available
	Outdated                 []string // nodes with an active pod of an old revision (not for OnDelete)
	Duplicates               []string // nodes with more active pods than allowed (see DuplicatePods)
	Ineligible               []string // existing nodes where the pod may not run, holding one
	OnDeletedNodes           []string // nodes absent from the view, holding a pod the controller must delete (see PodOnDeletedNode)
	AwaitingPodGC            []string // nodes absent from the view, holding only pods left to the pod garbage collector
	Failed                   []string // nodes holding a Failed or Succeeded pod not yet deleted
	Unplaced                 []string // pods without a target node
	Terminating              []string // pods being deleted (informational)
	Orphans                  []string // pods without a controller that the selector matches (informational)
	Leftover                 []string // absent DaemonSet: its pods that are not terminating
}

// Evaluate judges the DaemonSet with key namespace/name in w at time now; now
// matters only for minReadySeconds. It is pure and recomputes everything; the
// Checker reaches the same answers incrementally.
func Evaluate(w *World, key string, now time.Time) Verdict {
	v := Verdict{DaemonSet: key}
	e, ok := w.dss[key]
	if !ok || e.ds.DeletionTimestamp != nil {
		if uid, ok := w.dsUID(key); ok {
			for _, node := range w.podNodes(uid) {
				for _, p := range sortedValues(w.podsOn(uid, node)) {
					if p.pod.DeletionTimestamp == nil {
						v.Leftover = append(v.Leftover, p.key)
					}
				}
			}
		}
		v.Converged = len(v.Leftover) == 0
		return v
	}
	v.Exists = true
	v.Hash = e.rev.hash
	uid := e.ds.UID
	names := w.NodeNames()
	for _, n := range w.podNodes(uid) {
		if n != "" {
			if _, ok := w.nodes[n]; !ok {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	for _, name := range names {
		var node *corev1.Node
		if ne, ok := w.nodes[name]; ok {
			node = ne.node
		}
		pods := w.podsOn(uid, name)
		nv := evalNode(e, node, pods, now)
		if node == nil && nv.active+nv.terminal > 0 {
			// Which list depends on whose job the pods are.
			if late, unbound, _, _ := w.splitOnMissingNode(pods, name); late+unbound > 0 {
				v.OnDeletedNodes = append(v.OnDeletedNodes, name)
			} else {
				v.AwaitingPodGC = append(v.AwaitingPodGC, name)
			}
			continue
		}
		if nv.mustRun {
			v.MustRun++
			if !nv.available {
				v.Unavailable++
			}
		}
		nv.classify(e, func(l listKind) { v.add(l, name) })
	}
	for _, p := range sortedValues(w.podsOn(uid, "")) {
		if p.pod.DeletionTimestamp == nil {
			v.Unplaced = append(v.Unplaced, p.key)
		}
	}
	for _, node := range w.podNodes(uid) {
		for _, p := range sortedValues(w.podsOn(uid, node)) {
			if p.pod.DeletionTimestamp != nil {
				v.Terminating = append(v.Terminating, p.key)
			}
		}
	}
	slices.Sort(v.Terminating)
	v.Orphans = w.orphansOf(e)
	v.MaxSurge, v.MaxUnavailable = e.limits(v.MustRun)
	v.Converged = len(v.Missing)+len(v.NotAvailable)+len(v.Outdated)+len(v.Duplicates)+
		len(v.Ineligible)+len(v.OnDeletedNodes)+len(v.AwaitingPodGC)+len(v.Failed)+len(v.Unplaced) == 0
	return v
}

type listKind int

const (
	listMissing listKind = iota
	listNotAvailable
	listOutdated
	listDuplicates
	listIneligible
	listOnDeleted
	listFailed
)

func (v *Verdict) add(l listKind, node string) {
	lists := [...]*[]string{&v.Missing, &v.NotAvailable, &v.Outdated, &v.Duplicates, &v.Ineligible, &v.OnDeletedNodes, &v.Failed}
	*lists[l] = append(*lists[l], node)
}

// nodeView is what the oracle sees of one DaemonSet on one node.
type nodeView struct {
	exists, mustRun, mayRun bool
	reason                  string
	// Pod counts: active means neither terminating nor Failed/Succeeded;
	// current counts the active pods of the current revision.
	active, current, terminating, terminal int
	ready, available                       bool // some active pod is Ready / available
	currentReady, currentAvailable         bool // some active current pod is Ready / available
	oldAvailable                           bool // some active pod of an old revision is available
	// nextAvailable is when an active Ready pod that is not available yet
	// will become available (minReadySeconds); zero if none.
	nextAvailable time.Time
}

func evalNode(e *dsEntry, node *corev1.Node, pods map[string]*podEntry, now time.Time) nodeView {
	var v nodeView
	if node != nil {
		d := e.pl.decide(node)
		v.exists, v.mustRun, v.mayRun, v.reason = true, d.mustRun, d.mayRun, d.reason
	}
	minReady := time.Duration(e.ds.Spec.MinReadySeconds) * time.Second
	for _, p := range pods {
		switch {
		case p.pod.DeletionTimestamp != nil:
			v.terminating++
			continue
		case p.pod.Status.Phase == corev1.PodFailed || p.pod.Status.Phase == corev1.PodSucceeded:
			v.terminal++
			continue
		}
		v.active++
		cur := e.rev.matches(p.pod)
		if cur {
			v.current++
		}
		if p.readySince.IsZero() {
			continue
		}
		v.ready = true
		v.currentReady = v.currentReady || cur
		if at := p.readySince.Add(minReady); at.After(now) {
			if v.nextAvailable.IsZero() || at.Before(v.nextAvailable) {
				v.nextAvailable = at
			}
			continue
		}
		v.available = true
		v.currentAvailable = v.currentAvailable || cur
		v.oldAvailable = v.oldAvailable || !cur
	}
	return v
}

// surging says whether the node counts against maxSurge, as upstream's
// numSurge: a must-run node where a new pod, not yet available, runs beside
// an available old one. (A replacement for an unavailable old pod is allowed
// beyond maxSurge, as upstream.)
func (v nodeView) surging() bool {
	return v.exists && v.mustRun && v.oldAvailable && v.current > 0 && !v.currentAvailable
}

// ok says whether the node is as it should be once converged (see Verdict).
func (v nodeView) ok(e *dsEntry) bool {
	onDelete := e.onDelete()
	switch {
	case !v.exists || !v.mayRun:
		return v.active+v.terminal == 0
	case v.mustRun:
		return v.terminal == 0 && v.active == 1 && (v.currentAvailable || onDelete && v.available)
	default:
		return v.terminal == 0 && v.active <= 1 && (onDelete || v.active == v.current)
	}
}

// classify reports every reason the node is not ok; it reports at least one
// exactly when ok is false.
func (v nodeView) classify(e *dsEntry, report func(listKind)) {
	onDelete := e.onDelete()
	if !v.exists {
		if v.active+v.terminal > 0 {
			report(listOnDeleted)
		}
		return
	}
	if !v.mayRun {
		if v.active+v.terminal > 0 {
			report(listIneligible)
		}
		return
	}
	if v.terminal > 0 {
		report(listFailed)
	}
	if v.duplicate(e) {
		report(listDuplicates)
	}
	if !onDelete && v.active > v.current {
		report(listOutdated)
	}
	if v.mustRun {
		switch {
		case v.active == 0:
			report(listMissing)
		case !v.currentAvailable && !(onDelete && v.available):
			report(listNotAvailable)
		}
	}
}

// duplicate: more than one active pod, except the one old plus one current
// pair that a surging rolling update keeps while the new pod comes up.
func (v nodeView) duplicate(e *dsEntry) bool {
	if v.active <= 1 {
		return false
	}
	return !(e.surge() && v.active == 2 && v.current == 1)
}

func (e *dsEntry) onDelete() bool {
	return e.ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
}

// rolling: an empty type counts as RollingUpdate, the apiserver's default.
func (e *dsEntry) rolling() bool { return rolling(e.ds.Spec.UpdateStrategy) }

func rolling(s appsv1.DaemonSetUpdateStrategy) bool {
	return s.Type == appsv1.RollingUpdateDaemonSetStrategyType || s.Type == ""
}

// surge says whether the DaemonSet surges (upstream's AllowsSurge).
func (e *dsEntry) surge() bool {
	s, _ := scaledLimits(e.ds.Spec.UpdateStrategy, 1)
	return s > 0
}

func (e *dsEntry) limits(desired int) (maxSurge, maxUnavailable int) {
	return StrategyLimits(e.ds.Spec.UpdateStrategy, desired)
}

// StrategyLimits resolves maxSurge and maxUnavailable against desired nodes,
// rounding percentages up; when both come out 0 on a non-empty set,
// maxUnavailable is 1. Both are 0 for OnDelete, which has no rolling update
// to limit.
func StrategyLimits(s appsv1.DaemonSetUpdateStrategy, desired int) (maxSurge, maxUnavailable int) {
	if !rolling(s) {
		return 0, 0
	}
	maxSurge, maxUnavailable = scaledLimits(s, desired)
	if desired > 0 && maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable
}

func scaledLimits(s appsv1.DaemonSetUpdateStrategy, desired int) (maxSurge, maxUnavailable int) {
	ru := s.RollingUpdate
	if !rolling(s) || ru == nil {
		return 0, 0
	}
	// Invalid values (rejected by validation anyway) count as 0.
	if ru.MaxSurge != nil {
		maxSurge, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
	}
	if ru.MaxUnavailable != nil {
		maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true)
	}
	return maxSurge, maxUnavailable
}

// selector is the DaemonSet's pod selector; an empty or invalid one selects
// nothing (upstream refuses to act on it).
func (e *dsEntry) selector() labels.Selector {
	s := e.ds.Spec.Selector
	if s == nil || len(s.MatchLabels)+len(s.MatchExpressions) == 0 {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// orphansOf lists the non-terminating pods without a controller in the
// DaemonSet's namespace that its selector matches.
func (w *World) orphansOf(e *dsEntry) []string {
	sel := e.selector()
	var out []string
	for _, p := range w.orphans {
		if p.pod.Namespace == e.ds.Namespace && p.pod.DeletionTimestamp == nil && sel.Matches(labels.Set(p.pod.Labels)) {
			out = append(out, p.key)
		}
	}
	slices.Sort(out)
	return out
}

func sortedValues(m map[string]*podEntry) []*podEntry {
	out := make([]*podEntry, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// Problems describes what keeps v from converging, naming up to max nodes per
// kind of problem, e.g. "ns/ds: 3 nodes missing a pod (a, b, c), 1 not
// available (d)". It is "" when v is converged.
func (v Verdict) Problems(max int) string {
	if v.Converged {
		return ""
	}
	if !v.Exists {
		return fmt.Sprintf("%s: deleted, %s", v.DaemonSet, listed(v.Leftover, "pod", "left", max))
	}
	var parts []string
	add := func(list []string, what string) {
		if len(list) > 0 {
			parts = append(parts, listed(list, "node", what, max))
		}
	}
	add(v.Missing, "missing a pod")
	add(v.NotAvailable, "with a pod not (current and) available")
	add(v.Outdated, "with an outdated pod")
	add(v.Duplicates, "with duplicate pods")
	add(v.Ineligible, "ineligible but holding a pod")
	add(v.OnDeletedNodes, "deleted but holding a pod")
	add(v.AwaitingPodGC, "deleted, pods left to the pod garbage collector")
	add(v.Failed, "holding a Failed or Succeeded pod")
	if len(v.Unplaced) > 0 {
		parts = append(parts, listed(v.Unplaced, "pod", "without a target node", max))
	}
	return v.DaemonSet + ": " + strings.Join(parts, ", ")
}

// listed renders "3 nodes missing a pod (a, b, c, ...)".
func listed(names []string, noun, what string, max int) string {
	if len(names) != 1 {
		noun += "s"
	}
	s := fmt.Sprintf("%d %s", len(names), noun)
	if what != "" {
		s += " " + what
	}
	shown := names[:min(len(names), max)]
	s += " (" + strings.Join(shown, ", ")
	if len(names) > len(shown) {
		s += ", ..."
	}
	return s + ")"
}
