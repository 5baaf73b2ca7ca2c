package oracle_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsbench/dsbench/bench/oracle"
)

// The oracle places a pod on its node from the pod's first event, whether
// the controller set spec.nodeName itself (--bind-mode=direct, the floor,
// and upstream before 1.12) or pinned it with node affinity and left the
// binding to kube-scheduler: a node join, its latency and the verdict do not
// depend on who binds, nor on when the scheduler gets to it.
func TestBindingModesJudgedAlike(t *testing.T) {
	ds := daemonSet("d")
	joins := func(direct bool) ([]oracle.NodeJoin, []oracle.Violation) {
		t.Helper()
		var tl timeline
		tl.add(0, ds).add(1, node("n1"))
		if direct {
			tl.add(2, pod(ds, "a", "n1"))
		} else {
			// Pinned at creation, bound by the scheduler a second later.
			tl.add(2, pod(ds, "a", "n1", pinned)).mod(3, pod(ds, "a", "n1"))
		}
		tl.mod(4, pod(ds, "a", "n1", ready(at(4))))
		c := feed(t, oracle.Config{Grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * time.Second}}, tl)
		if ok, since := c.Converged(dsKey); !ok || !since.Equal(at(4)) {
			t.Errorf("direct %v: converged %v since %v, want since 4 s", direct, ok, since)
		}
		return c.NodeJoins(), c.Finish(at(10))
	}
	directJoins, directViolations := joins(true)
	schedJoins, schedViolations := joins(false)
	want := []oracle.NodeJoin{{DaemonSet: dsKey, Node: "n1", NodeAdded: at(1), MustRun: at(1), PodCreated: at(2), PodReady: at(4)}}
	if diff := cmp.Diff(want, directJoins); diff != "" {
		t.Errorf("direct binding: node joins (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, schedJoins); diff != "" {
		t.Errorf("scheduler binding: node joins (-want +got):\n%s", diff)
	}
	if len(directViolations)+len(schedViolations) != 0 {
		t.Errorf("violations: direct %+v, scheduler %+v; want none", directViolations, schedViolations)
	}
}

// A pod created for a node deleted within the cache lag is, bound, the pod
// GC's to remove (as any bound pod of a deleted node: PodGC deletes pods
// bound to a node that no longer exists) and, only pinned, the
// controller's: nothing else ever deletes a pod that no scheduler can bind
// (upstream's getUnscheduledPodsWithoutNode). So a directly bound pod is
// never excused where a pinned one would be caught, only left to whom it
// belongs; created later than the cache lag, it is caught either way.
func TestDirectlyBoundPodOnDeletedNode(t *testing.T) {
	ds := daemonSet("d")
	tests := []struct {
		name      string
		created   float64
		pinned    bool
		violation bool
	}{
		{name: "bound within the cache lag: the pod GC's", created: 5},
		{name: "pinned within the cache lag: the controller's", created: 5, pinned: true, violation: true},
		{name: "bound after the cache lag: the controller's mistake", created: 7, violation: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []podOpt
			if tt.pinned {
				opts = append(opts, pinned)
			}
			opts = append(opts, podCreated(at(tt.created)))
			var tl timeline
			tl.add(0, node("n1")).add(0, node("n2")).add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1))))
			tl.del(4, node("n2")).add(tt.created, pod(ds, "b", "n2", opts...))
			c := feed(t, oracle.Config{CacheLag: 2 * time.Second,
				Grace: map[oracle.Kind]time.Duration{oracle.PodOnDeletedNode: time.Second, oracle.MissingPod: 30 * time.Second}}, tl)
			v := c.Verdict(dsKey)
			if got := len(v.OnDeletedNodes) > 0; got != tt.violation {
				t.Errorf("OnDeletedNodes %v, AwaitingPodGC %v; want the controller's %v", v.OnDeletedNodes, v.AwaitingPodGC, tt.violation)
			}
			vs := c.Finish(at(20))
			if got := len(vs) > 0; got != tt.violation {
				t.Errorf("violations %+v, want some %v", vs, tt.violation)
			}
			for _, x := range vs {
				if x.Kind != oracle.PodOnDeletedNode || x.Node != "n2" {
					t.Errorf("violation %+v, want PodOnDeletedNode on n2", x)
				}
			}
		})
	}
}

// A pod the controller made for a node just created (or created again under
// a deleted node's name) can reach the oracle before the node does: the
// node watch trails the pod watch. If etcd wrote the node first, the pod was
// made for it and the episode is withdrawn; a pod written before the node,
// or for a node that never returns, stays the controller's mistake.
func TestPodBeforeItsNode(t *testing.T) {
	ds := daemonSet("d")
	tests := []struct {
		name string
		// hadNode: n2 exists from the start with a pod, removed at 2.5.
		hadNode   bool
		events    func(tl *timeline)
		violation bool
	}{{
		name: "a new node, written before its pod, arrives after it",
		events: func(tl *timeline) {
			tl.add(5, pod(ds, "b", "n2", withRV("21"))).add(5.01, node("n2", nodeRV("20")))
		},
	}, {
		name:    "a node created again under a deleted node's name",
		hadNode: true,
		events: func(tl *timeline) {
			tl.del(3, node("n2", nodeRV("15")))
			tl.add(10, pod(ds, "b", "n2", podCreated(at(10)), withRV("31"))).add(10.01, node("n2", nodeRV("30")))
		},
	}, {
		name: "a pod written before its node existed",
		events: func(tl *timeline) {
			tl.add(5, pod(ds, "b", "n2", withRV("19"))).add(5.01, node("n2", nodeRV("20")))
		},
		violation: true,
	}, {
		name:    "a pod for a deleted node that never returns",
		hadNode: true,
		events: func(tl *timeline) {
			tl.del(3, node("n2", nodeRV("15")))
			tl.add(10, pod(ds, "b", "n2", podCreated(at(10)), withRV("31")))
		},
		violation: true,
	}, {
		name:    "a pod for a deleted node, the node created again later",
		hadNode: true,
		events: func(tl *timeline) {
			tl.del(3, node("n2", nodeRV("15")))
			tl.add(10, pod(ds, "b", "n2", podCreated(at(10)), withRV("31"))).add(12, node("n2", nodeRV("40")))
		},
		violation: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tl timeline
			tl.add(0, node("n1", nodeRV("1")))
			if tt.hadNode {
				tl.add(0, node("n2", nodeRV("2")))
			}
			tl.add(0, ds).add(1, pod(ds, "a", "n1", ready(at(1)), withRV("3")))
			if tt.hadNode {
				tl.add(1, pod(ds, "c", "n2", ready(at(1)), withRV("4"))).del(2.5, pod(ds, "c", "n2", withRV("14")))
			}
			tt.events(&tl)
			c := feed(t, oracle.Config{CacheLag: 2 * time.Second, Grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 30 * time.Second}}, tl)
			var got []oracle.Violation
			for _, v := range c.Finish(at(20)) {
				if v.Kind == oracle.PodOnDeletedNode {
					got = append(got, v)
				}
			}
			if (len(got) > 0) != tt.violation {
				t.Errorf("PodOnDeletedNode %+v, want some: %v", got, tt.violation)
			}
		})
	}
}
