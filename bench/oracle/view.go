package oracle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Read-only accessors for a controller that acts on the oracle's own view
// (the harness's floor): what each DaemonSet controls, where it must run and
// which orphans it could adopt, computed as the Checker computes them.

// PodsByNode returns the pods the live DaemonSet key controls, by target
// node ("" for pods without one), each list sorted by key. The pods are the
// view's: do not mutate them.
func (w *World) PodsByNode(key string) map[string][]*corev1.Pod {
	e, ok := w.dss[key]
	if !ok {
		return nil
	}
	out := map[string][]*corev1.Pod{}
	for node, pods := range w.owned[e.ds.UID] {
		for _, p := range sortedValues(pods) {
			out[node] = append(out[node], p.pod)
		}
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
