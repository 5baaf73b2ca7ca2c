package oracle_test

import (
	"fmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dsbench/dsbench/bench/oracle"
)

const dsKey = "default/d"

var ignoreDetail = cmpopts.IgnoreFields(oracle.Violation{}, "Detail")

// Misbehaving controllers, written as the event timelines they produce, and
// correct ones next to them. Each must yield exactly the listed violations.
func TestCheckerViolations(t *testing.T) {
	const (
		NoSchedule = corev1.TaintEffectNoSchedule
		NoExecute  = corev1.TaintEffectNoExecute
	)
	sec := time.Second
	ds := daemonSet("d")
	upd := daemonSet("d", image("pause:2", 2))
	sds := daemonSet("d", maxSurge(intstr.FromInt32(1)), maxUnavailable(intstr.FromInt32(0)))
	supd := daemonSet("d", maxSurge(intstr.FromInt32(1)), maxUnavailable(intstr.FromInt32(0)), image("pause:2", 2))

	tests := []struct {
		name     string
		grace    map[oracle.Kind]time.Duration
		cacheLag time.Duration
		events   func(tl *timeline)
		finish   float64
		want     []oracle.Violation
	}{
		{
			name: "correct: create, ready",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(0, pod(ds, "a", "n1")).mod(2, pod(ds, "a", "n1", ready(at(2))))
			},
		},
		{
			name: "double create",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds)
				tl.add(1, pod(ds, "a", "n1")).add(1, pod(ds, "b", "n1"))
				tl.mod(3, pod(ds, "a", "n1", ready(at(3)))).mod(3, pod(ds, "b", "n1", ready(at(3))))
				tl.mod(4, pod(ds, "b", "n1", ready(at(3)), terminating)).del(5, pod(ds, "b", "n1", terminating))
			},
			grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * sec},
			want:  []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.DuplicatePods, Node: "n1", Start: at(1), End: at(4), Peak: 2, Allowed: 1}},
		},
		{
			name: "double create surging: old plus two new",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, sds).add(0, pod(sds, "a", "n1", ready(at(0))))
				tl.mod(1, supd).add(2, pod(supd, "b", "n1")).add(2, pod(supd, "c", "n1"))
				tl.del(3, pod(supd, "c", "n1"))
			},
			want: []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.DuplicatePods, Node: "n1", Start: at(2), End: at(3), Peak: 3, Allowed: 2}},
		},
		{
			name: "correct surge: old and new side by side",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, sds).add(0, pod(sds, "a", "n1", ready(at(0))))
				tl.mod(5, supd).add(6, pod(supd, "a2", "n1")).mod(8, pod(supd, "a2", "n1", ready(at(8))))
				tl.mod(9, pod(sds, "a", "n1", ready(at(0)), terminating)).del(10, pod(sds, "a", "n1", terminating))
			},
		},
		{
			name: "surge deletes the old pod before the new one is available",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, sds).add(0, pod(sds, "a", "n1", ready(at(0))))
				tl.mod(5, supd).mod(6, pod(sds, "a", "n1", ready(at(0)), terminating)).add(6, pod(supd, "a2", "n1"))
				tl.del(7, pod(sds, "a", "n1", terminating)).mod(8, pod(supd, "a2", "n1", ready(at(8))))
			},
			grace: map[oracle.Kind]time.Duration{oracle.MissingPod: sec},
			want:  []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.Overunavailable, Start: at(6), End: at(8), Peak: 1, Allowed: 0}},
		},
		{
			name: "ignores a NoSchedule taint when creating",
			events: func(tl *timeline) {
				tl.add(0, node("n1", withTaint("dedicated", "x", NoSchedule))).add(0, node("n2")).add(0, ds)
				tl.add(1, pod(ds, "a", "n2")).add(1, pod(ds, "b", "n1"))
				tl.mod(3, pod(ds, "a", "n2", ready(at(3)))).mod(3, pod(ds, "b", "n1", ready(at(3))))
			},
			finish: 10,
			want:   []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.PodOnIneligibleNode, Node: "n1", Start: at(1), End: at(10), Unresolved: true}},
		},
		{
			name: "NoSchedule taint after the pod runs: it may stay",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1))))
				tl.mod(5, node("n1", withTaint("maintenance", "", NoSchedule)))
				tl.mod(6, pod(ds, "a", "n1", notReady)).mod(7, pod(ds, "a", "n1", ready(at(7))))
			},
			finish: 10,
		},
		{
			name: "stale cache: created just after the taint, within the cache lag",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).mod(5, node("n1", withTaint("maintenance", "", NoSchedule)))
				tl.add(5.5, pod(ds, "a", "n1"))
			},
			grace:    map[oracle.Kind]time.Duration{oracle.MissingPod: 10 * sec},
			cacheLag: sec,
			finish:   10,
		},
		{
			// Beyond the cache lag no grace excuses it, however long.
			name: "created after the taint, beyond the cache lag",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).mod(5, node("n1", withTaint("maintenance", "", NoSchedule)))
				tl.add(6.5, pod(ds, "a", "n1")).mod(7, pod(ds, "a", "n1", terminating))
			},
			grace:    map[oracle.Kind]time.Duration{oracle.MissingPod: 10 * sec, oracle.PodOnIneligibleNode: time.Minute},
			cacheLag: sec,
			finish:   10,
			want:     []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.PodOnIneligibleNode, Node: "n1", Start: at(6.5), End: at(7)}},
		},
		{
			// A joining node keeps not-ready:NoSchedule until the node
			// lifecycle controller lifts it: no cache ever showed it
			// must-run, so a pod on it is wrong at once.
			name: "creates on a joining node before its not-ready taint is lifted",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1))))
				tl.add(5, node("n2", createdAt(at(5)), withTaint(corev1.TaintNodeNotReady, "", NoSchedule)))
				tl.add(5.2, pod(ds, "b", "n2", podCreated(at(5))))
				tl.mod(6, node("n2", createdAt(at(5))))
			},
			grace:    map[oracle.Kind]time.Duration{oracle.MissingPod: 10 * sec, oracle.PodOnIneligibleNode: time.Minute},
			cacheLag: 2 * sec,
			finish:   10,
			want:     []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.PodOnIneligibleNode, Node: "n2", Start: at(5.2), End: at(6)}},
		},
		{
			name: "a new DaemonSet on a node tainted from the start",
			events: func(tl *timeline) {
				tl.add(0, node("n1", createdAt(at(0)), withTaint("dedicated", "db", NoSchedule))).add(3, ds)
				tl.add(3.1, pod(ds, "a", "n1", podCreated(at(3))))
			},
			grace:    map[oracle.Kind]time.Duration{oracle.PodOnIneligibleNode: time.Minute},
			cacheLag: 2 * sec,
			finish:   10,
			want:     []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.PodOnIneligibleNode, Node: "n1", Start: at(3.1), End: at(10), Unresolved: true}},
		},
		{
			// The DaemonSet appeared 0.1 s after the taint: the
			// controller's first sight of it may pair it with the node
			// as it was, within the cache lag of the taint.
			name:     "a new DaemonSet just after a node's taint, within the cache lag",
			events:   dsJustAfterTaint(ds, 4.5),
			grace:    map[oracle.Kind]time.Duration{oracle.PodOnIneligibleNode: time.Minute},
			cacheLag: 2 * sec,
			finish:   10,
		},
		{
			// The same, placed after the cache lag has passed.
			name:     "a new DaemonSet just after a node's taint, beyond the cache lag",
			events:   dsJustAfterTaint(ds, 6.2),
			grace:    map[oracle.Kind]time.Duration{oracle.PodOnIneligibleNode: time.Minute},
			cacheLag: 2 * sec,
			finish:   10,
			want:     []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.PodOnIneligibleNode, Node: "n1", Start: at(6.2), End: at(10), Unresolved: true}},
		},
		{
			// A version of the node older than the cache lag excuses
			// nothing, even if the node changed since in other ways.
			name: "a new DaemonSet long after a node's taint, the node changed since",
			events: func(tl *timeline) {
				tl.add(0, node("n1", createdAt(at(0)))).mod(1, node("n1", createdAt(at(0)), withTaint(corev1.TaintNodeNotReady, "", NoSchedule)))
				tl.mod(4, node("n1", createdAt(at(0)), withLabels("zone", "a"), withTaint(corev1.TaintNodeNotReady, "", NoSchedule)))
				tl.add(4.1, ds).add(4.5, pod(ds, "a", "n1", podCreated(at(4))))
			},
			grace:    map[oracle.Kind]time.Duration{oracle.PodOnIneligibleNode: time.Minute},
			cacheLag: 2 * sec,
			finish:   10,
			want:     []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.PodOnIneligibleNode, Node: "n1", Start: at(4.5), End: at(10), Unresolved: true}},
		},
		{
			// A DaemonSet's selector changed just after the node's label:
			// the controller may see the new selector with the old labels.
			name: "a DaemonSet's selector changed just after a node's label",
			events: func(tl *timeline) {
				tl.add(0, node("n1", createdAt(at(0)), withLabels("pool", "a"))).add(0, ds).add(0.5, pod(ds, "a", "n1", podCreated(at(0)), ready(at(1))))
				tl.mod(3, node("n1", createdAt(at(0)), withLabels("pool", "b")))
				sel := daemonSet("d", nodeSelector("pool", "a"), image("pause:2", 2))
				tl.mod(3.2, sel).mod(3.3, pod(ds, "a", "n1", podCreated(at(0)), ready(at(1)), terminating)).del(3.4, pod(ds, "a", "n1", podCreated(at(0)), terminating))
				tl.add(3.8, pod(sel, "b", "n1", podCreated(at(3)))).mod(4.5, pod(sel, "b", "n1", podCreated(at(3)), terminating)).del(5, pod(sel, "b", "n1", podCreated(at(3)), terminating))
			},
			grace:    map[oracle.Kind]time.Duration{oracle.PodOnIneligibleNode: time.Minute},
			cacheLag: 2 * sec,
			finish:   10,
		},
		{
			name: "a pod there before a NoSchedule taint stays",
			events: func(tl *timeline) {
				tl.add(0, node("n1", createdAt(at(0)))).add(0, ds).add(1, pod(ds, "a", "n1", podCreated(at(1)), ready(at(1))))
				tl.mod(5, node("n1", createdAt(at(0)), withTaint("maintenance", "", NoSchedule)))
			},
			cacheLag: 2 * sec,
			finish:   30,
		},
		{
			name: "creationTimestamp before the taint excuses a pod seen late",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).mod(5, node("n1", withTaint("maintenance", "", NoSchedule)))
				tl.add(7, pod(ds, "a", "n1", podCreated(at(4))))
			},
			grace:  map[oracle.Kind]time.Duration{oracle.MissingPod: 10 * sec},
			finish: 10,
		},
		{
			name: "ignores a NoExecute taint",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1))))
				tl.mod(5, node("n1", withTaint("evict", "", NoExecute)))
				tl.mod(9, pod(ds, "a", "n1", ready(at(1)), terminating)).del(10, pod(ds, "a", "n1", terminating))
			},
			want: []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.PodOnIneligibleNode, Node: "n1", Start: at(5), End: at(9)}},
		},
		{
			name: "ignores a nodeSelector change",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1))))
				tl.mod(5, daemonSet("d", nodeSelector("role", "edge"), image("pause:1", 2)))
			},
			finish: 8,
			want:   []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.PodOnIneligibleNode, Node: "n1", Start: at(5), End: at(8), Unresolved: true}},
		},
		{
			// Upstream leaves bound pods of a deleted node to the pod GC.
			name: "leaves a bound pod on a deleted node to the pod GC",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, node("n2")).add(0, ds)
				tl.add(1, pod(ds, "a", "n1", ready(at(1)))).add(1, pod(ds, "b", "n2", ready(at(1))))
				tl.del(4, node("n2"))
			},
			finish: 20,
		},
		{
			name: "leaves an unbound pod pinned to a deleted node",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, node("n2")).add(0, ds)
				tl.add(1, pod(ds, "a", "n1", ready(at(1)))).add(1, pod(ds, "b", "n2", pinned))
				tl.del(4, node("n2"))
			},
			grace:  map[oracle.Kind]time.Duration{oracle.PodOnDeletedNode: 5 * sec},
			finish: 20,
			want:   []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.PodOnDeletedNode, Node: "n2", Start: at(4), End: at(20), Unresolved: true}},
		},
		{
			// A stale node list: however briefly the pod lives, it was made
			// for a node already gone, and no grace excuses that.
			name: "creates a pod for a node already deleted",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, node("n2")).add(0, ds)
				tl.add(1, pod(ds, "a", "n1", ready(at(1)))).add(1, pod(ds, "b0", "n2", ready(at(1))))
				tl.del(4, node("n2")).del(5, pod(ds, "b0", "n2", ready(at(1)))).add(7, pod(ds, "b", "n2", podCreated(at(7))))
				tl.mod(7.5, pod(ds, "b", "n2", podCreated(at(7)), terminating))
			},
			grace:  map[oracle.Kind]time.Duration{oracle.PodOnDeletedNode: 30 * sec},
			finish: 20,
			want:   []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.PodOnDeletedNode, Node: "n2", Start: at(7), End: at(7.5)}},
		},
		{
			name: "pod on a deleted node cleaned up within grace",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1))))
				tl.del(4, node("n1")).mod(4.5, pod(ds, "a", "n1", ready(at(1)), terminating)).del(5, pod(ds, "a", "n1", terminating))
			},
			grace:  map[oracle.Kind]time.Duration{oracle.PodOnDeletedNode: sec},
			finish: 20,
		},
		{
			name: "exceeds maxUnavailable",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, node("n2")).add(0, node("n3")).add(0, ds)
				for _, n := range []string{"1", "2", "3"} {
					tl.add(1, pod(ds, "p"+n, "n"+n, ready(at(1))))
				}
				tl.mod(5, upd)
				for _, n := range []string{"1", "2", "3"} {
					tl.mod(6, pod(ds, "p"+n, "n"+n, ready(at(1)), terminating))
				}
				for _, n := range []string{"1", "2", "3"} {
					tl.del(7, pod(ds, "p"+n, "n"+n, terminating)).add(7, pod(upd, "q"+n, "n"+n))
				}
				for _, n := range []string{"1", "2", "3"} {
					tl.mod(9, pod(upd, "q"+n, "n"+n, ready(at(9))))
				}
			},
			grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * sec},
			want:  []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.Overunavailable, Start: at(6), End: at(9), Peak: 3, Allowed: 1}},
		},
		{
			name:   "a limit that shrinks as nodes leave is not the rollout's doing",
			events: shrinkingLimit(0),
			grace:  map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * sec, oracle.PodOnDeletedNode: sec},
		},
		{
			name:   "disrupting another node while over a shrunk limit is",
			events: shrinkingLimit(8),
			grace:  map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * sec, oracle.PodOnDeletedNode: sec},
			// It ends when the disruption is back to the level excused.
			want: []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.Overunavailable, Start: at(8), End: at(8.5), Peak: 3, Allowed: 1}},
		},
		{
			name:   "recovering one node and disrupting another while still over a shrunk limit is",
			events: overAfterRecovery,
			grace:  map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * sec, oracle.PodOnDeletedNode: sec},
			// Not more than the 3 once excused, but a node disrupted while
			// over the limit; it ends when the count is back to 2.
			want: []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.Overunavailable, Start: at(8.2), End: at(8.6), Peak: 3, Allowed: 1}},
		},
		{
			name: "new nodes without pods are not the rollout's doing",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1))))
				tl.mod(5, upd).add(5, node("n2")).add(5, node("n3"))
				tl.mod(6, pod(ds, "a", "n1", ready(at(1)), terminating)).del(7, pod(ds, "a", "n1", terminating))
				tl.add(7, pod(upd, "a2", "n1")).add(7, pod(upd, "b", "n2")).add(7, pod(upd, "c", "n3"))
				tl.mod(8, pod(upd, "a2", "n1", ready(at(8)))).mod(8, pod(upd, "b", "n2", ready(at(8)))).mod(8, pod(upd, "c", "n3", ready(at(8))))
			},
			grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * sec},
		},
		{
			name: "never creates on a new node",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1))))
				tl.add(5, node("n2", withTaint(corev1.TaintNodeNotReady, "", NoSchedule))).mod(6, node("n2"))
			},
			grace:  map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * sec},
			finish: 30,
			want:   []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.MissingPod, Node: "n2", Start: at(6), End: at(30), Unresolved: true}},
		},
		{
			name: "slow on a new node, within grace",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1))))
				tl.add(5, node("n2", withTaint(corev1.TaintNodeNotReady, "", NoSchedule))).mod(6, node("n2")).add(8, pod(ds, "b", "n2"))
			},
			grace:  map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * sec},
			finish: 30,
		},
		{
			name: "failed pod not replaced",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1))))
				tl.mod(3, pod(ds, "a", "n1", failed))
			},
			finish: 10,
			want:   []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.MissingPod, Node: "n1", Start: at(3), End: at(10), Unresolved: true}},
		},
		{
			name: "orphan adopted late, then the extra pod removed",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1))))
				tl.add(2, pod(ds, "o", "n1", ready(at(2)), orphaned)).mod(6, pod(ds, "o", "n1", ready(at(2))))
				tl.mod(7, pod(ds, "o", "n1", ready(at(2)), terminating))
			},
			want: []oracle.Violation{
				{DaemonSet: dsKey, Kind: oracle.OrphanPod, Node: "n1", Pod: "default/o", Start: at(2), End: at(6)},
				{DaemonSet: dsKey, Kind: oracle.DuplicatePods, Node: "n1", Start: at(6), End: at(7), Peak: 2, Allowed: 1},
			},
		},
		{
			name: "orphan of a DaemonSet created later",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, pod(ds, "o", "n1", orphaned)).add(3, ds)
				tl.mod(4, pod(ds, "o", "n1"))
			},
			grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * sec},
			want:  []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.OrphanPod, Node: "n1", Pod: "default/o", Start: at(3), End: at(4)}},
		},
		{
			name: "deleting the DaemonSet ends its violations",
			events: func(tl *timeline) {
				tl.add(0, node("n1")).add(0, ds).add(1, pod(ds, "a", "n1")).add(1, pod(ds, "b", "n1"))
				tl.del(4, ds)
			},
			finish: 10,
			want:   []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.DuplicatePods, Node: "n1", Start: at(1), End: at(4), Peak: 2, Allowed: 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tl timeline
			tc.events(&tl)
			grace := map[oracle.Kind]time.Duration{oracle.MissingPod: 2 * time.Second} // initial creation
			for k, v := range tc.grace {
				grace[k] = v
			}
			c := feed(t, oracle.Config{Grace: grace, CacheLag: tc.cacheLag}, tl)
			end := tl[len(tl)-1].Time
			if tc.finish != 0 {
				end = at(tc.finish)
			}
			got := c.Finish(end)
			if diff := cmp.Diff(tc.want, got, ignoreDetail, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			for _, v := range got {
				if v.Detail == "" && v.Kind != oracle.OrphanPod && v.Kind != oracle.MissingPod {
					t.Errorf("violation %+v has no detail", v)
				}
			}
		})
	}
}

func TestViolationDetailAndOpenEpisodes(t *testing.T) {
	var tl timeline
	tl.add(0, node("n1")).add(0, daemonSet("d")).add(1, pod(daemonSet("d"), "a", "n1", ready(at(1))))
	tl.mod(5, node("n1", withTaint("evict", "now", corev1.TaintEffectNoExecute)))
	c := feed(t, oracle.Config{Grace: map[oracle.Kind]time.Duration{oracle.PodOnIneligibleNode: 3 * time.Second, oracle.MissingPod: 2 * time.Second}}, tl)

	c.Advance(at(7.9))
	if got := c.Violations(); len(got) != 0 {
		t.Fatalf("at 7.9s, within grace: got %+v, want none", got)
	}
	c.Advance(at(8))
	want := []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.PodOnIneligibleNode, Node: "n1", Start: at(5),
		Detail: "untolerated taint evict=now:NoExecute"}}
	if diff := cmp.Diff(want, c.Violations()); diff != "" {
		t.Errorf("open violation at 8s (-want +got):\n%s", diff)
	}
	if d := c.Violations()[0].Duration(); d != 0 {
		t.Errorf("open violation Duration = %v, want 0", d)
	}
}

// dsJustAfterTaint: n1 is tainted not-ready at 3, the DaemonSet ds is
// created at 3.1 and its pod placed on n1 at podAt (created in that
// second).
func dsJustAfterTaint(ds *appsv1.DaemonSet, podAt float64) func(tl *timeline) {
	return func(tl *timeline) {
		tl.add(0, node("n1", createdAt(at(0)))).mod(3, node("n1", createdAt(at(0)), withTaint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoSchedule)))
		tl.add(3.1, ds).add(podAt, pod(ds, "a", "n1", podCreated(at(math.Floor(podAt)))))
	}
}

// shrinkingLimit: 11 nodes, maxUnavailable 10% (2). The rollout disrupts n1
// and n2; at 7 n11 leaves and the limit becomes 1. With moreAt > 0 the
// controller disrupts n3 then, while over the shrunk limit.
func shrinkingLimit(moreAt float64) func(tl *timeline) {
	more := moreAt > 0
	return func(tl *timeline) {
		old, upd := tenPercentRollout(tl, 11)
		tl.mod(6, pod(old, "pn1", "n1", ready(at(0)), terminating)).mod(6, pod(old, "pn2", "n2", ready(at(0)), terminating))
		tl.del(7, node("n11")).del(7, pod(old, "pn11", "n11"))
		if more {
			tl.mod(moreAt, pod(old, "pn3", "n3", ready(at(0)), terminating))
		}
		tl.del(8.5, pod(old, "pn1", "n1", terminating)).add(8.5, pod(upd, "qn1", "n1", ready(at(8.5))))
		tl.del(9, pod(old, "pn2", "n2", terminating)).add(9, pod(upd, "qn2", "n2", ready(at(9))))
		if more {
			tl.del(9.5, pod(old, "pn3", "n3", terminating)).add(9.5, pod(upd, "qn3", "n3", ready(at(9.5))))
		}
		for i := 3; i <= 10; i++ {
			if i == 3 && more {
				continue
			}
			n := fmt.Sprintf("n%d", i)
			tl.mod(10, pod(old, "p"+n, n, ready(at(0)), terminating)).del(10, pod(old, "p"+n, n, terminating)).add(10, pod(upd, "q"+n, n, ready(at(10))))
		}
	}
}

// overAfterRecovery: 21 nodes, maxUnavailable 10% (3). The rollout disrupts
// n1 to n3; at 7 eleven nodes leave and the limit becomes 1, which excuses
// the 3. At 8 n1 recovers (2, still over 1) and at 8.2 the controller
// disrupts n4.
func overAfterRecovery(tl *timeline) {
	old, upd := tenPercentRollout(tl, 21)
	for i := 1; i <= 3; i++ {
		n := fmt.Sprintf("n%d", i)
		tl.mod(6, pod(old, "p"+n, n, ready(at(0)), terminating))
	}
	for i := 11; i <= 21; i++ {
		n := fmt.Sprintf("n%d", i)
		tl.del(7, node(n)).del(7, pod(old, "p"+n, n))
	}
	tl.del(8, pod(old, "pn1", "n1", terminating)).add(8, pod(upd, "qn1", "n1", ready(at(8))))
	tl.mod(8.2, pod(old, "pn4", "n4", ready(at(0)), terminating))
	tl.del(8.6, pod(old, "pn4", "n4", terminating)).add(8.6, pod(upd, "qn4", "n4", ready(at(8.6))))
	for i := 2; i <= 10; i++ {
		n := fmt.Sprintf("n%d", i)
		if i == 4 {
			continue
		}
		if i > 3 {
			tl.mod(10, pod(old, "p"+n, n, ready(at(0)), terminating))
		}
		tl.del(10, pod(old, "p"+n, n, terminating)).add(10, pod(upd, "q"+n, n, ready(at(10))))
	}
}

// lateDisruption: 11 nodes, maxUnavailable 10% (2). The rollout disrupts
// n1; at 7 n11 leaves and the limit becomes 1; at disruptAt the controller
// disrupts n2, within the limit it last saw.
func lateDisruption(disruptAt float64) func(tl *timeline) {
	return func(tl *timeline) {
		old, upd := tenPercentRollout(tl, 11)
		tl.mod(6, pod(old, "pn1", "n1", ready(at(0)), terminating))
		tl.del(7, node("n11")).del(7, pod(old, "pn11", "n11"))
		tl.mod(disruptAt, pod(old, "pn2", "n2", ready(at(0)), terminating))
		for i := 1; i <= 10; i++ {
			n := fmt.Sprintf("n%d", i)
			if i > 2 {
				tl.mod(10, pod(old, "p"+n, n, ready(at(0)), terminating))
			}
			tl.del(10, pod(old, "p"+n, n, terminating)).add(10, pod(upd, "q"+n, n, ready(at(10))))
		}
	}
}

// A controller whose cache has not seen a node leave still applies the
// larger limit, and one whose cache has not yet shown a pod the cluster
// failed may still use the budget that pod left; LimitLag allows each that
// long, and no longer.
func TestOverunavailableLimitLag(t *testing.T) {
	grace := map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * time.Second, oracle.PodOnDeletedNode: time.Second}
	nodeLeft := func(at float64) timeline {
		var tl timeline
		lateDisruption(at)(&tl)
		return tl
	}
	for _, tc := range []struct {
		name     string
		events   func(disruptAt float64) timeline
		moreAt   float64
		lag      time.Duration
		want     int
		wantPeak int
	}{
		{name: "a node left", events: nodeLeft, moreAt: 7.5, lag: time.Second, want: 0},
		{name: "a node left", events: nodeLeft, moreAt: 7.5, lag: 0, want: 1, wantPeak: 2},
		{name: "a node left", events: nodeLeft, moreAt: 8.2, lag: time.Second, want: 1, wantPeak: 2},
		{name: "a pod failed", events: clusterFillsBudget, moreAt: 7.5, lag: time.Second, want: 0},
		{name: "a pod failed", events: clusterFillsBudget, moreAt: 7.5, lag: 0, want: 1, wantPeak: 4},
		{name: "a pod failed", events: clusterFillsBudget, moreAt: 8.2, lag: time.Second, want: 1, wantPeak: 4},
	} {
		t.Run(fmt.Sprintf("%s, disrupt at %v, lag %v", tc.name, tc.moreAt, tc.lag), func(t *testing.T) {
			tl := tc.events(tc.moreAt)
			c := feed(t, oracle.Config{Grace: grace, LimitLag: tc.lag}, tl)
			got := c.Finish(tl[len(tl)-1].Time)
			if len(got) != tc.want {
				t.Errorf("got %d violations, want %d: %+v", len(got), tc.want, got)
			}
			for _, v := range got {
				if v.Kind != oracle.Overunavailable || !v.Start.Equal(at(tc.moreAt)) || v.Peak != tc.wantPeak {
					t.Errorf("got %+v, want an Overunavailable from %v with peak %d", v, tc.moreAt, tc.wantPeak)
				}
			}
		})
	}
}

// TestPodGCWait: bound pods left on a deleted node are the pod GC's share.
// They are no violation, but convergence waits for them and the wait is
// measured from the node's deletion to the last pod gone.
func TestPodGCWait(t *testing.T) {
	ds := daemonSet("d")
	var tl timeline
	tl.add(0, node("n1")).add(0, node("n2")).add(0, ds)
	tl.add(1, pod(ds, "a", "n1", ready(at(1)))).add(1, pod(ds, "b", "n2", ready(at(1))))
	tl.del(4, node("n2"))
	// The initial creation takes 1 s.
	c := feed(t, oracle.Config{Grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 2 * time.Second}}, tl)
	if ok, _ := c.Converged(dsKey); ok {
		t.Error("converged while a pod still waits for the pod GC on deleted node n2")
	}
	if v := c.Verdict(dsKey); !slices.Equal(v.AwaitingPodGC, []string{"n2"}) || len(v.OnDeletedNodes) != 0 {
		t.Errorf("verdict: AwaitingPodGC %v, OnDeletedNodes %v; want [n2], []", v.AwaitingPodGC, v.OnDeletedNodes)
	}
	if err := c.Apply(oracle.Event{Time: at(45), Kind: oracle.Deleted, Object: pod(ds, "b", "n2", ready(at(1)))}); err != nil {
		t.Fatal(err)
	}
	if ok, since := c.Converged(dsKey); !ok || !since.Equal(at(45)) {
		t.Errorf("converged %v since %v, want true since the pod GC's delete at 45 s", ok, since)
	}
	want := []oracle.PodGCWait{{DaemonSet: dsKey, Node: "n2", NodeDeleted: at(4), PodsGone: at(45)}}
	if diff := cmp.Diff(want, c.PodGCWaits()); diff != "" {
		t.Errorf("pod GC waits (-want +got):\n%s", diff)
	}
	if vs := c.Finish(at(50)); len(vs) != 0 {
		t.Errorf("violations %+v, want none", vs)
	}
}

// TestOversurge: with maxSurge 1 a correct controller surges one node at a
// time; one that surges every node at once is caught at once; a replacement
// beside an old pod that is not available is allowed beyond the limit, as
// upstream allows it.
func TestOversurge(t *testing.T) {
	surge := []dsOpt{maxSurge(intstr.FromInt32(1)), maxUnavailable(intstr.FromInt32(0))}
	ds := daemonSet("d", surge...)
	upd := daemonSet("d", append([]dsOpt{image("pause:2", 2)}, surge...)...)
	nodes := []string{"n1", "n2", "n3"}
	start := func(tl *timeline) {
		for i, n := range nodes {
			tl.add(0, node(n)).add(1, pod(ds, fmt.Sprint("p", i), n, ready(at(1))))
		}
		tl.add(0, ds).mod(5, upd)
	}
	// replace surges node i at time at: the new pod, Ready 1 s later, then
	// the old pod deleted.
	replace := func(tl *timeline, i int, from float64) {
		n, q := nodes[i], fmt.Sprint("q", i)
		tl.add(from, pod(upd, q, n)).mod(from+1, pod(upd, q, n, ready(at(from+1))))
		tl.mod(from+1.2, pod(ds, fmt.Sprint("p", i), n, ready(at(1)), terminating)).del(from+1.5, pod(ds, fmt.Sprint("p", i), n, terminating))
	}
	tests := []struct {
		name   string
		events func(tl *timeline)
		want   []oracle.Violation
	}{
		{name: "one node at a time", events: func(tl *timeline) {
			start(tl)
			for i := range nodes {
				replace(tl, i, 6+2*float64(i))
			}
		}},
		{name: "every node at once", events: func(tl *timeline) {
			start(tl)
			for i := range nodes {
				replace(tl, i, 6)
			}
		}, want: []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.Oversurge, Start: at(6), End: at(7), Peak: 3, Allowed: 1}}},
		{name: "beside an unavailable old pod", events: func(tl *timeline) {
			start(tl)
			tl.mod(4, pod(ds, "p2", "n3", notReady))
			replace(tl, 0, 6)
			tl.add(6, pod(upd, "q2", "n3")).mod(7, pod(upd, "q2", "n3", ready(at(7)))).mod(7.2, pod(ds, "p2", "n3", notReady, terminating)).del(7.5, pod(ds, "p2", "n3", terminating))
			replace(tl, 1, 8)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tl timeline
			tc.events(&tl)
			slices.SortStableFunc(tl, func(a, b oracle.Event) int { return a.Time.Compare(b.Time) })
			c := feed(t, oracle.Config{Grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 2 * time.Second}}, tl)
			got := c.Finish(at(20))
			if diff := cmp.Diff(tc.want, got, ignoreDetail, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodSeenBeforeTheNodeUpdateItFollowed: the pod and node watches are
// separate streams. A pod created after a node's taint was lifted may reach
// the oracle before the lift (seen at 1000 nodes: 7 ms, for a joining node's
// not-ready taint; and in make mutants, for a NoExecute taint lifted from a
// node that had been must-run before it). The resourceVersions, which one
// etcd orders, tell it apart from a pod created before the lift, which is a
// violation whichever stream came first.
func TestPodSeenBeforeTheNodeUpdateItFollowed(t *testing.T) {
	ds := daemonSet("d")
	rv := func(o metav1.Object, v string) { o.SetResourceVersion(v) }
	untainted := node("n1", createdAt(at(0)))
	rv(untainted, "5")
	notReady := node("n1", createdAt(at(0)), withTaint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoSchedule))
	rv(notReady, "10")
	evicting := node("n1", createdAt(at(0)), withTaint("dsbench.dev/evict", "", corev1.TaintEffectNoExecute))
	rv(evicting, "10")
	lifted := node("n1", createdAt(at(0)))
	rv(lifted, "20")
	for _, tc := range []struct {
		name   string
		before []*corev1.Node // the node's states from 0 s on, one a second
		podRV  string
		want   int
	}{
		{"joining node: created after the lift, seen before it", []*corev1.Node{notReady}, "21", 0},
		{"joining node: created before the lift", []*corev1.Node{notReady}, "15", 1},
		{"must-run node tainted: created after the lift, seen before it", []*corev1.Node{untainted, evicting}, "21", 0},
		{"must-run node tainted: created before the lift", []*corev1.Node{untainted, evicting}, "15", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(ds, "a", "n1", podCreated(at(5)))
			rv(p, tc.podRV)
			var tl timeline
			tl.add(0, tc.before[0]).add(0, ds)
			for i, n := range tc.before[1:] {
				tl.mod(float64(i+1), n)
			}
			tl.add(5, p).mod(5.007, lifted)
			c := feed(t, oracle.Config{CacheLag: 2 * time.Second, Grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 10 * time.Second}}, tl)
			if got := c.Finish(at(10)); len(got) != tc.want {
				t.Errorf("violations %+v, want %d", got, tc.want)
			}
		})
	}
}

// TestMisplacedPodAwaitsAReorderedLift: a run that stops at its first
// violation must not stop on a misplaced pod before the node update that may
// excuse it had time to arrive on its own stream (make mutants stopped a
// correct controller's run 70 ms after such a pod). The wait is CacheLag; a
// pod that no lift follows is a violation after it.
func TestMisplacedPodAwaitsAReorderedLift(t *testing.T) {
	ds := daemonSet("d")
	n := node("n1", createdAt(at(0)), withTaint("dsbench.dev/evict", "", corev1.TaintEffectNoExecute))
	n.SetResourceVersion("10")
	p := pod(ds, "a", "n1", podCreated(at(5)))
	p.SetResourceVersion("21")
	var tl timeline
	tl.add(0, n).add(0, ds).add(5, p)
	c := feed(t, oracle.Config{CacheLag: 2 * time.Second}, tl)
	c.Advance(at(6.9))
	if got := c.Violations(); len(got) != 0 {
		t.Errorf("1.9 s after the pod: violations %+v, want none yet", got)
	}
	c.Advance(at(7))
	got := c.Violations()
	if len(got) != 1 || got[0].Kind != oracle.PodOnIneligibleNode || !got[0].Start.Equal(at(5)) {
		t.Errorf("2 s after the pod: violations %+v, want the PodOnIneligibleNode that began at 5 s", got)
	}
}

// Pod and node events come on separate watch streams. During a rollout with
// maxUnavailable 0, a node loses the label that selects it and the
// controller deletes its pods: correct, and what make mutants saw the
// correct controller do (1 of 52 disrupted, maxUnavailable 0, for 47 µs)
// when the oracle got the deletion before the label change. The
// resourceVersions decide: an episode that a lower-versioned event ended
// is retracted, peak included; one whose end came later in etcd's order
// stays, so a controller that deletes first and relabels never hides.
func TestLimitEpisodeEndedByAnEarlierNodeChange(t *testing.T) {
	surge := []dsOpt{nodeSelector("disk", "ssd"), maxSurge(intstr.FromInt32(1)), maxUnavailable(intstr.FromInt32(0))}
	ds := daemonSet("d", surge...)
	upd := daemonSet("d", append([]dsOpt{image("pause:2", 2)}, surge...)...)
	rv := func(o metav1.Object, v string) metav1.Object { o.SetResourceVersion(v); return o }
	for _, tc := range []struct {
		name           string
		podRV, nodeRV  string
		wantViolations int
		wantPeak       int
	}{
		{"label removed first, seen second", "101", "100", 0, 0},
		{"pod deleted first: a real disruption", "100", "101", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tl timeline
			tl.add(0, node("n1", withLabels("disk", "ssd"))).add(0, node("n2", withLabels("disk", "ssd"))).add(0, ds)
			tl.add(1, pod(ds, "p1", "n1", ready(at(1)))).add(1, pod(ds, "p2", "n2", ready(at(1))))
			tl.mod(5, upd)
			gone := pod(ds, "p1", "n1", ready(at(1)), terminating)
			tl.mod(6, rv(gone, tc.podRV).(*corev1.Pod))
			tl.mod(6.0001, rv(node("n1", withLabels("disk", "hdd")), tc.nodeRV).(*corev1.Node))
			c := feed(t, oracle.Config{Grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 2 * time.Second}}, tl)
			var over []oracle.Violation
			for _, v := range c.Finish(at(8)) {
				if v.Kind == oracle.Overunavailable {
					over = append(over, v)
				}
			}
			if len(over) != tc.wantViolations {
				t.Errorf("Overunavailable %+v, want %d", over, tc.wantViolations)
			}
			if len(c.Rollouts()) != 1 || c.Rollouts()[0].PeakUnavailable != tc.wantPeak {
				t.Errorf("rollouts %+v, want one with peak %d", c.Rollouts(), tc.wantPeak)
			}
			if got, want := c.Retracted(), 1-tc.wantViolations; got != want {
				t.Errorf("retracted %d, want %d", got, want)
			}
		})
	}
}
