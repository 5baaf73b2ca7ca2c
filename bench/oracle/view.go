package oracle

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Read-only accessors for a controller that acts on the oracle's own view
// (the harness's floor): what each DaemonSet controls, where it must run and
// which orphans it could adopt, computed as the Checker computes them.

// OwnedPod is a pod of a DaemonSet in the view: its namespace/name, the
// object (the view's: do not mutate it), and when it became Ready as the
// Checker judges it (zero while it is not; see PodReadySince).
type OwnedPod struct {
	Key        string
	Pod        *corev1.Pod
	ReadySince time.Time
}

// PodsOn returns the pods the live DaemonSet key controls that target node,
// sorted by key.
func (w *World) PodsOn(key, node string) []OwnedPod {
	e, ok := w.dss[key]
	if !ok {
		return nil
	}
	pods := w.owned[e.ds.UID][node]
	if len(pods) == 0 {
		return nil
	}
	out := make([]OwnedPod, 0, len(pods))
	for _, p := range pods {
		out = append(out, OwnedPod{Key: p.key, Pod: p.pod, ReadySince: p.readySince})
	}
	if len(out) > 1 {
		slices.SortFunc(out, func(a, b OwnedPod) int { return strings.Compare(a.Key, b.Key) })
	}
	return out
}

// Eligibility says whether the live DaemonSet key's pod must run and may run
// on the node, as the Checker decides it (see the package's Eligibility);
// ok is false when either is absent from the view.
func (w *World) Eligibility(key, node string) (mustRun, mayRun, ok bool) {
	e, okDS := w.dss[key]
	n, okNode := w.nodes[node]
	if !okDS || !okNode {
		return false, false, false
	}
	d := e.pl.decide(n.node)
	return d.mustRun, d.mayRun, true
}

// PodAvailable says whether the pod has been Ready for minReady at now, as
// the Checker judges availability (see PodReadySince).
func (w *World) PodAvailable(key string, minReady time.Duration, now time.Time) bool {
	since := w.PodReadySince(key)
	return !since.IsZero() && !since.Add(minReady).After(now)
}

// Orphans returns the non-terminating pods without a controller that the
// live DaemonSet key's selector matches in its namespace, sorted by key.
func (w *World) Orphans(key string) []*corev1.Pod {
	e, ok := w.dss[key]
	if !ok {
		return nil
	}
	var out []*corev1.Pod
	for _, k := range w.orphansOf(e) {
		out = append(out, w.pods[k].pod)
	}
	return out
}
