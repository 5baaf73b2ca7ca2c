package oracle_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dsbench/dsbench/bench/oracle"
)

// A correct controller's life: creation, a node joining kwok-style, a
// maintenance taint, a rolling update, a node deletion cleaned up by pod GC.
// No violations; exact convergence, rollout and join timings.
func TestCorrectScenario(t *testing.T) {
	ds := daemonSet("d")
	upd := daemonSet("d", image("pause:2", 2))
	var tl timeline
	tl.add(0, node("n1")).add(0, node("n2")).add(0, ds)
	tl.add(1, pod(ds, "a", "n1")).add(1, pod(ds, "b", "n2"))
	tl.mod(3, pod(ds, "a", "n1", ready(at(3)))).mod(3, pod(ds, "b", "n2", ready(at(3))))
	// A node joins: not-ready:NoSchedule until the lifecycle controller lifts it.
	tl.add(5, node("n3", createdAt(at(4)), withTaint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoSchedule)))
	tl.mod(7, node("n3", createdAt(at(4))))
	tl.add(8, pod(ds, "c", "n3", pinned)).mod(9, pod(ds, "c", "n3", ready(at(9))))
	// Maintenance: the pod on n1 may stay.
	n1Tainted := node("n1", withTaint("maintenance", "", corev1.TaintEffectNoSchedule))
	tl.mod(10, n1Tainted)
	// Rolling update, maxUnavailable 1. The old pod on n1 goes and is not replaced.
	tl.mod(12, upd)
	tl.mod(13, pod(ds, "a", "n1", ready(at(3)), terminating)).del(14, pod(ds, "a", "n1", terminating))
	tl.mod(14, pod(ds, "b", "n2", ready(at(3)), terminating)).del(15, pod(ds, "b", "n2", terminating))
	tl.add(15, pod(upd, "b2", "n2")).mod(17, pod(upd, "b2", "n2", ready(at(17))))
	tl.mod(18, pod(ds, "c", "n3", ready(at(9)), terminating)).del(19, pod(ds, "c", "n3", terminating))
	tl.add(19, pod(upd, "c2", "n3")).mod(21, pod(upd, "c2", "n3", ready(at(21))))
	// n2 goes away; pod GC removes its pod.
	tl.del(22, node("n2")).mod(22, pod(upd, "b2", "n2", ready(at(17)), terminating)).del(23, pod(upd, "b2", "n2", terminating))

	c := oracle.NewChecker(oracle.Config{Grace: map[oracle.Kind]time.Duration{
		oracle.MissingPod:       5 * time.Second,
		oracle.PodOnDeletedNode: 5 * time.Second,
	}})
	create := c.AddBarrier(oracle.Barrier{Name: "create", DaemonSet: dsKey, Start: at(0), Visible: oracle.GenerationObserved(dsKey, 1)})
	var join, rollout, drain oracle.BarrierID
	for i, ev := range tl {
		switch ev.Time {
		case at(5):
			if ev.Kind == oracle.Added {
				// NodesPresent("n3") would complete at once: n3 is not must-run yet.
				join = c.AddBarrier(oracle.Barrier{Name: "join", DaemonSet: dsKey, Start: at(4.9), Visible: oracle.MustRunOn(dsKey, "n3")})
			}
		case at(12):
			// The write was acknowledged at 11.5; the watch event comes at 12.
			rollout = c.AddBarrier(oracle.Barrier{Name: "rollout", DaemonSet: dsKey, Start: at(11.5), Visible: oracle.GenerationObserved(dsKey, 2)})
		case at(22):
			if ev.Kind == oracle.Deleted {
				drain = c.AddBarrier(oracle.Barrier{Name: "drain", DaemonSet: dsKey, Start: at(21.9), Visible: oracle.NodesAbsent("n2")})
			}
		}
		if err := c.Apply(ev); err != nil {
			t.Fatal(err)
		}
		agree(t, c, i)
	}

	if got := c.Finish(at(30)); len(got) != 0 {
		t.Errorf("violations: %+v, want none", got)
	}

	var gotConv []oracle.Convergence
	for _, id := range []oracle.BarrierID{create, join, rollout, drain} {
		cv, ok := c.ConvergedAt(id)
		if !ok {
			t.Errorf("barrier %d not converged", id)
		}
		gotConv = append(gotConv, cv)
	}
	wantConv := []oracle.Convergence{
		{Barrier: "create", DaemonSet: dsKey, Start: at(0), At: at(3), Event: oracle.EventRef{Time: at(3), Kind: oracle.Modified, Object: "Pod default/b"}, Placed: at(1)},
		{Barrier: "join", DaemonSet: dsKey, Start: at(4.9), At: at(9), Event: oracle.EventRef{Time: at(9), Kind: oracle.Modified, Object: "Pod default/c"}, Placed: at(8)},
		{Barrier: "rollout", DaemonSet: dsKey, Start: at(11.5), At: at(21), Event: oracle.EventRef{Time: at(21), Kind: oracle.Modified, Object: "Pod default/c2"}, Placed: at(19)},
		{Barrier: "drain", DaemonSet: dsKey, Start: at(21.9), At: at(22), Event: oracle.EventRef{Time: at(22), Kind: oracle.Modified, Object: "Pod default/b2"}, Placed: at(22)},
	}
	if diff := cmp.Diff(wantConv, gotConv); diff != "" {
		t.Errorf("barriers (-want +got):\n%s", diff)
	}
	if got, want := gotConv[2].Latency(), 9500*time.Millisecond; got != want {
		t.Errorf("rollout latency = %v, want %v", got, want)
	}

	wantRollouts := []oracle.Rollout{{
		DaemonSet: dsKey, FromHash: oracle.CurrentHash(ds), ToHash: oracle.CurrentHash(upd),
		Start: at(12), End: at(21), Outcome: oracle.RolloutConverged,
		PeakUnavailable: 1, AllowedAtPeak: 1, LastNodeAvailable: at(21),
		Nodes: []oracle.NodeRollout{
			{Node: "n1", OldPodGone: at(13), OldPodVanished: at(14)},
			{Node: "n2", OldPodGone: at(14), OldPodVanished: at(15), NewPodCreated: at(15), NewPodReady: at(17), NewPodAvailable: at(17)},
			{Node: "n3", OldPodGone: at(18), OldPodVanished: at(19), NewPodCreated: at(19), NewPodReady: at(21), NewPodAvailable: at(21)},
		},
	}}
	if diff := cmp.Diff(wantRollouts, c.Rollouts()); diff != "" {
		t.Errorf("rollouts (-want +got):\n%s", diff)
	}
	if got, want := c.Rollouts()[0].Duration(), 9*time.Second; got != want {
		t.Errorf("rollout duration = %v, want %v", got, want)
	}

	wantJoins := []oracle.NodeJoin{{DaemonSet: dsKey, Node: "n3", NodeAdded: at(5), NodeCreated: at(4), MustRun: at(7), PodCreated: at(8), PodReady: at(9)}}
	if diff := cmp.Diff(wantJoins, c.NodeJoins()); diff != "" {
		t.Errorf("node joins (-want +got):\n%s", diff)
	}
	// The controller's share runs from eligibility (7) to Ready (9); the
	// cluster's from the Added event (5) to eligibility.
	if got, want := c.NodeJoins()[0].Latency(), 2*time.Second; got != want {
		t.Errorf("join latency = %v, want %v", got, want)
	}
	if got, want := c.NodeJoins()[0].ClusterShare(), 2*time.Second; got != want {
		t.Errorf("join cluster share = %v, want %v", got, want)
	}
}

// minReadySeconds: convergence happens when time passes, with no event; the
// Checker evaluates that instant itself. Availability counts from the Ready
// condition's lastTransitionTime (1.5), as the API defines it, not from the
// event that carried it (2).
func TestConvergenceAfterMinReadySeconds(t *testing.T) {
	ds := daemonSet("d", minReady(10))
	c := oracle.NewChecker(oracle.Config{})
	id := c.AddBarrier(oracle.Barrier{Name: "create", DaemonSet: dsKey, Start: at(0), Visible: oracle.GenerationObserved(dsKey, 1)})
	var tl timeline
	tl.add(0, node("n1")).add(0, ds).add(0, pod(ds, "a", "n1")).mod(2, pod(ds, "a", "n1", ready(at(1.5))))
	tl.mod(30, node("n1", withLabels("x", "y")))
	for i, ev := range tl {
		if err := c.Apply(ev); err != nil {
			t.Fatal(err)
		}
		agree(t, c, i)
	}
	got, ok := c.ConvergedAt(id)
	want := oracle.Convergence{Barrier: "create", DaemonSet: dsKey, Start: at(0), At: at(11.5), Event: oracle.EventRef{Time: at(11.5), Kind: oracle.Timer, Object: "Node n1"}, Placed: at(0)}
	if diff := cmp.Diff(want, got); !ok || diff != "" {
		t.Errorf("ConvergedAt ok=%v (-want +got):\n%s", ok, diff)
	}
	if conv, since := c.Converged(dsKey); !conv || !since.Equal(at(11.5)) {
		t.Errorf("Converged = %v since %v, want true since %v", conv, since, at(11.5))
	}
}

func TestBarriers(t *testing.T) {
	ds := daemonSet("d")
	upd := daemonSet("d", image("pause:2", 2))
	var tl timeline
	tl.add(0, node("n1")).add(0, ds).add(0, pod(ds, "a", "n1", ready(at(0))))
	c := feed(t, oracle.Config{}, tl)

	t.Run("already converged when added", func(t *testing.T) {
		id := c.AddBarrier(oracle.Barrier{Name: "noop", DaemonSet: dsKey, Start: at(1)})
		got, ok := c.ConvergedAt(id)
		want := oracle.Convergence{Barrier: "noop", DaemonSet: dsKey, Start: at(1), At: at(1), Immediate: true, Placed: at(1),
			Event: oracle.EventRef{Time: at(0), Kind: oracle.Added, Object: "Pod default/a"}}
		if diff := cmp.Diff(want, got); !ok || diff != "" {
			t.Errorf("ConvergedAt ok=%v (-want +got):\n%s", ok, diff)
		}
	})
	t.Run("not before the write is visible", func(t *testing.T) {
		id := c.AddBarrier(oracle.Barrier{Name: "update", DaemonSet: dsKey, Start: at(2), Visible: oracle.GenerationObserved(dsKey, 2)})
		// An unrelated event after the ack: the world still looks converged.
		if err := c.Apply(oracle.Event{Time: at(2.5), Kind: oracle.Modified, Object: node("n1", withLabels("x", "y"))}); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.ConvergedAt(id); ok {
			t.Fatal("converged before the update was visible")
		}
		for _, ev := range []oracle.Event{
			{Time: at(3), Kind: oracle.Modified, Object: upd},
			{Time: at(4), Kind: oracle.Modified, Object: pod(ds, "a", "n1", ready(at(0)), terminating)},
			{Time: at(5), Kind: oracle.Deleted, Object: pod(ds, "a", "n1", terminating)},
			{Time: at(5), Kind: oracle.Added, Object: pod(upd, "a2", "n1")},
			{Time: at(6), Kind: oracle.Modified, Object: pod(upd, "a2", "n1", ready(at(6)))},
		} {
			if err := c.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		got, ok := c.ConvergedAt(id)
		// Placed: a2, the first pod of the new template, exists at 5.
		want := oracle.Convergence{Barrier: "update", DaemonSet: dsKey, Start: at(2), At: at(6), Placed: at(5),
			Event: oracle.EventRef{Time: at(6), Kind: oracle.Modified, Object: "Pod default/a2"}}
		if diff := cmp.Diff(want, got); !ok || diff != "" {
			t.Errorf("ConvergedAt ok=%v (-want +got):\n%s", ok, diff)
		}
	})
	t.Run("deletion converges when no pod is left running", func(t *testing.T) {
		id := c.AddBarrier(oracle.Barrier{Name: "delete", DaemonSet: dsKey, Start: at(7), Visible: oracle.DaemonSetAbsent(dsKey)})
		for _, ev := range []oracle.Event{
			{Time: at(7.5), Kind: oracle.Deleted, Object: upd},
			{Time: at(8), Kind: oracle.Modified, Object: pod(upd, "a2", "n1", ready(at(6)), terminating)},
		} {
			if err := c.Apply(ev); err != nil {
				t.Fatal(err)
			}
			if _, ok := c.ConvergedAt(id); ok != (ev.Time == at(8)) {
				t.Errorf("after the event at %v: converged = %v", ev.Time, ok)
			}
		}
	})
	t.Run("unknown barrier", func(t *testing.T) {
		if _, ok := c.ConvergedAt(42); ok {
			t.Error("ConvergedAt(42) = true")
		}
	})
}

func TestRolloutStarts(t *testing.T) {
	ds := daemonSet("d")
	v2 := daemonSet("d", image("pause:2", 2))
	v3 := daemonSet("d", image("pause:3", 3))
	statusWrite := daemonSet("d")
	statusWrite.Status.NumberReady = 1
	collided := daemonSet("d")
	one := int32(1)
	collided.Status.CollisionCount = &one
	od := daemonSet("d", onDelete)
	odNew := daemonSet("d", onDelete, image("pause:2", 2))
	rollingNew := daemonSet("d", image("pause:2", 2))
	base := func(d0 *corev1.Node) timeline {
		var tl timeline
		tl.add(0, d0).add(0, ds).add(0, pod(ds, "a", "n1", ready(at(0))))
		return tl
	}
	type summary struct {
		From, To string
		Start    float64
		End      float64
		Outcome  oracle.RolloutOutcome
	}
	h := oracle.CurrentHash
	tests := []struct {
		name string
		evs  func(tl *timeline)
		want []summary
	}{
		{"status writes start nothing", func(tl *timeline) { tl.mod(1, statusWrite).mod(2, statusWrite) }, nil},
		{"a collision count changes the hash", func(tl *timeline) {
			tl.mod(1, collided).mod(2, pod(ds, "a", "n1", ready(at(0)), terminating)).add(3, pod(collided, "b", "n1", ready(at(3))))
		}, []summary{{h(ds), h(collided), 1, 3, oracle.RolloutConverged}}},
		{"superseded", func(tl *timeline) {
			tl.mod(1, v2).mod(2, v3).mod(3, pod(ds, "a", "n1", ready(at(0)), terminating)).add(4, pod(v3, "b", "n1", ready(at(4))))
		}, []summary{{h(ds), h(v2), 1, 2, oracle.RolloutSuperseded}, {h(v2), h(v3), 2, 4, oracle.RolloutConverged}}},
		{"abandoned for OnDelete", func(tl *timeline) { tl.mod(1, v2).mod(2, odNew) },
			[]summary{{h(ds), h(v2), 1, 2, oracle.RolloutAbandoned}}},
		{"deleted", func(tl *timeline) { tl.mod(1, v2).del(2, v2) },
			[]summary{{h(ds), h(v2), 1, 2, oracle.RolloutDeleted}}},
		{"OnDelete template change starts nothing", func(tl *timeline) { tl.mod(1, od).mod(2, odNew) }, nil},
		{"OnDelete to RollingUpdate with old pods", func(tl *timeline) {
			tl.mod(1, od).mod(2, odNew).mod(3, rollingNew).mod(4, pod(ds, "a", "n1", ready(at(0)), terminating)).add(5, pod(rollingNew, "b", "n1", ready(at(5))))
		}, []summary{{"", h(rollingNew), 3, 5, oracle.RolloutConverged}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := base(node("n1"))
			tc.evs(&tl)
			c := feed(t, oracle.Config{}, tl)
			var got []summary
			for _, r := range c.Rollouts() {
				got = append(got, summary{r.FromHash, r.ToHash, r.Start.Sub(t0).Seconds(), r.End.Sub(t0).Seconds(), r.Outcome})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rollouts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVisibility(t *testing.T) {
	ds := daemonSet("d", image("pause:2", 2), nodeSelector("role", "a"))
	w := world(t, ds,
		node("ready", withLabels("role", "a")),
		node("new", withLabels("role", "a"), withTaint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoSchedule)),
		node("other"),
		node("pressured", withLabels("role", "a"), withTaint(corev1.TaintNodeDiskPressure, "", corev1.TaintEffectNoSchedule)),
	)
	tests := []struct {
		name string
		v    oracle.Visibility
		want bool
	}{
		{"generation reached", oracle.GenerationObserved(dsKey, 2), true},
		{"generation not yet", oracle.GenerationObserved(dsKey, 3), false},
		{"generation of an absent DaemonSet", oracle.GenerationObserved("default/x", 0), false},
		{"DaemonSet absent", oracle.DaemonSetAbsent("default/x"), true},
		{"DaemonSet present", oracle.DaemonSetAbsent(dsKey), false},
		{"nodes present", oracle.NodesPresent("ready", "new"), true},
		{"a node missing", oracle.NodesPresent("ready", "gone"), false},
		{"nodes absent", oracle.NodesAbsent("gone", "gone2"), true},
		{"a node still there", oracle.NodesAbsent("gone", "ready"), false},
		{"settled", oracle.NodesSettled("ready", "other", "pressured"), true},
		{"not-ready taint not lifted", oracle.NodesSettled("ready", "new"), false},
		{"must run", oracle.MustRunOn(dsKey, "ready", "pressured"), true},
		{"must not run: selector", oracle.MustRunOn(dsKey, "other"), false},
		{"must not run: not-ready taint", oracle.MustRunOn(dsKey, "new"), false},
		{"all of", oracle.AllOf(oracle.NodesPresent("ready"), oracle.GenerationObserved(dsKey, 2)), true},
		{"not all of", oracle.AllOf(oracle.NodesPresent("ready"), oracle.GenerationObserved(dsKey, 3)), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v(w); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// Every join ends measured, ended by its node or DaemonSet going first, or
// open; the watches may deliver the node's eligibility after its pod's
// Ready, and the revision clock dates the eligibility by the first event of
// a later revision.
func TestNodeJoinAccounting(t *testing.T) {
	ds := daemonSet("d")
	notReady := withTaint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoSchedule)
	// n2 joins; its lift, revision 20, arrives at 9.5, after its pod (created
	// at 8 with podRV, Ready at 9 with readyRV).
	readyBeforeLift := func(podRV, readyRV string) func(tl *timeline) {
		return func(tl *timeline) {
			tl.add(5, node("n2", notReady, createdAt(at(4)), nodeRV("10")))
			tl.add(8, pod(ds, "b", "n2", pinned, podCreated(at(8)), withRV(podRV))).mod(9, pod(ds, "b", "n2", podCreated(at(8)), ready(at(9)), withRV(readyRV)))
			tl.mod(9.5, node("n2", createdAt(at(4)), nodeRV("20")))
		}
	}
	tests := []struct {
		name       string
		events     func(tl *timeline)
		want       []oracle.NodeJoin
		latency    time.Duration
		violations []oracle.Kind
	}{{
		name:    "the pod's Ready arrives before the node's lift, which etcd wrote first",
		events:  readyBeforeLift("21", "22"),
		want:    []oracle.NodeJoin{{DaemonSet: dsKey, Node: "n2", NodeAdded: at(5), NodeCreated: at(4), MustRun: at(8), PodCreated: at(8), PodReady: at(9)}},
		latency: time.Second,
	}, {
		name:       "a pod etcd wrote before the lift is misplaced; the join's latency is zero, not negative",
		events:     readyBeforeLift("15", "16"),
		want:       []oracle.NodeJoin{{DaemonSet: dsKey, Node: "n2", NodeAdded: at(5), NodeCreated: at(4), MustRun: at(9.5), PodCreated: at(8), PodReady: at(9)}},
		violations: []oracle.Kind{oracle.PodOnIneligibleNode},
	}, {
		name: "the node goes before its pod is Ready",
		events: func(tl *timeline) {
			tl.add(5, node("n2", notReady)).mod(6, node("n2")).add(7, pod(ds, "b", "n2"))
			tl.del(8, node("n2")).del(8.5, pod(ds, "b", "n2"))
		},
		want: []oracle.NodeJoin{{DaemonSet: dsKey, Node: "n2", NodeAdded: at(5), MustRun: at(6), PodCreated: at(7), Ended: at(8), EndedBy: oracle.JoinNodeGone}},
	}, {
		name: "the DaemonSet goes before the pod is Ready",
		events: func(tl *timeline) {
			tl.add(5, node("n2", notReady)).mod(6, node("n2")).del(7, ds)
		},
		want: []oracle.NodeJoin{{DaemonSet: dsKey, Node: "n2", NodeAdded: at(5), MustRun: at(6), Ended: at(7), EndedBy: oracle.JoinDaemonSetGone}},
	}, {
		name: "eligible, no pod by the end: open, unmeasured",
		events: func(tl *timeline) {
			tl.add(5, node("n2", notReady)).mod(6, node("n2"))
		},
		want:       []oracle.NodeJoin{{DaemonSet: dsKey, Node: "n2", NodeAdded: at(5), MustRun: at(6)}},
		violations: []oracle.Kind{oracle.MissingPod},
	}, {
		name: "a node the DaemonSet does not run on is no join",
		events: func(tl *timeline) {
			tl.add(5, node("n2", withTaint("dedicated", "db", corev1.TaintEffectNoSchedule)))
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tl timeline
			tl.add(0, node("n1", nodeRV("1"))).add(0, ds).add(1, pod(ds, "a", "n1", withRV("3"))).mod(2, pod(ds, "a", "n1", ready(at(2)), withRV("4")))
			tt.events(&tl)
			c := feed(t, oracle.Config{Grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * time.Second}}, tl)
			var kinds []oracle.Kind
			for _, v := range c.Finish(at(30)) {
				kinds = append(kinds, v.Kind)
			}
			if diff := cmp.Diff(tt.violations, kinds); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			got := c.NodeJoins()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("node joins (-want +got):\n%s", diff)
			}
			for _, j := range got {
				if j.Measured() != (j.EndedBy == "" && !j.PodReady.IsZero()) || j.Latency() != tt.latency {
					t.Errorf("join %s: measured %v, latency %v; want latency %v", j.Node, j.Measured(), j.Latency(), tt.latency)
				}
			}
		})
	}
}
