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

// PodsByNode returns the pods the live DaemonSet key controls, by target
// node ("" for pods without one), each list sorted by key. The floor reads
// it for every node at every plan, so it allocates one slice for all the
// pods and sorts only the nodes that have more than one.
func (w *World) PodsByNode(key string) map[string][]OwnedPod {
	e, ok := w.dss[key]
	if !ok {
		return nil
	}
	byNode := w.owned[e.ds.UID]
	total := 0
	for _, pods := range byNode {
		total += len(pods)
	}
	all := make([]OwnedPod, 0, total)
	out := make(map[string][]OwnedPod, len(byNode))
	for node, pods := range byNode {
		start := len(all)
		for _, p := range pods {
			all = append(all, OwnedPod{Key: p.key, Pod: p.pod, ReadySince: p.readySince})
		}
		list := all[start:len(all):len(all)]
		if len(list) > 1 {
			slices.SortFunc(list, func(a, b OwnedPod) int { return strings.Compare(a.Key, b.Key) })
		}
		out[node] = list
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
