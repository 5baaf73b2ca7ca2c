package oracle_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dsbench/dsbench/bench/oracle"
)

// TestNodeRepair: a repair opens only when the harness's own deletion leaves
// a must-run node without an active pod, and splits the return of the pod
// into its parts; one that cannot finish says why.
func TestNodeRepair(t *testing.T) {
	ds := daemonSet("d")
	// start: two nodes, each with a Ready pod from 1 s.
	start := func(tl *timeline) {
		tl.add(0, node("n1")).add(0, node("n2")).add(0, ds)
		tl.add(1, pod(ds, "a", "n1", ready(at(1)))).add(1, pod(ds, "b", "n2", ready(at(1))))
	}
	// deleteA: a terminating at 10, gone at 11.
	deleteA := func(tl *timeline) {
		tl.mod(10, pod(ds, "a", "n1", ready(at(1)), terminating)).del(11, pod(ds, "a", "n1", ready(at(1)), terminating))
	}
	tests := []struct {
		name      string
		requested []string
		events    func(tl *timeline)
		finish    float64
		want      []oracle.NodeRepair
	}{
		{
			name:      "deleted, finalized, replaced",
			requested: []string{"default/a"},
			events: func(tl *timeline) {
				start(tl)
				deleteA(tl)
				tl.add(11.25, pod(ds, "a2", "n1")).mod(12.5, pod(ds, "a2", "n1", ready(at(12.5))))
			},
			want: []oracle.NodeRepair{{DaemonSet: dsKey, Node: "n1", Pod: "default/a", Deleted: at(10), Vanished: at(11), Created: at(11.25), Ready: at(12.5), Available: at(12.5)}},
		},
		{
			name: "the controller's own deletion is no repair",
			events: func(tl *timeline) {
				start(tl)
				deleteA(tl)
				tl.add(11.25, pod(ds, "a2", "n1")).mod(12.5, pod(ds, "a2", "n1", ready(at(12.5))))
			},
		},
		{
			name:      "deleted without grace: gone at once",
			requested: []string{"default/b"},
			events: func(tl *timeline) {
				start(tl)
				tl.del(10, pod(ds, "b", "n2", ready(at(1))))
				tl.add(10.5, pod(ds, "b2", "n2")).mod(11, pod(ds, "b2", "n2", ready(at(11))))
			},
			want: []oracle.NodeRepair{{DaemonSet: dsKey, Node: "n2", Pod: "default/b", Deleted: at(10), Vanished: at(10), Created: at(10.5), Ready: at(11), Available: at(11)}},
		},
		{
			name:      "available only after minReadySeconds",
			requested: []string{"default/a"},
			events: func(tl *timeline) {
				slow := daemonSet("d", minReady(3))
				tl.add(0, node("n1")).add(0, slow).add(1, pod(slow, "a", "n1", ready(at(1))))
				tl.mod(10, pod(slow, "a", "n1", ready(at(1)), terminating)).del(11, pod(slow, "a", "n1", ready(at(1)), terminating))
				tl.add(11.5, pod(slow, "a2", "n1")).mod(12, pod(slow, "a2", "n1", ready(at(12))))
			},
			finish: 20,
			want:   []oracle.NodeRepair{{DaemonSet: dsKey, Node: "n1", Pod: "default/a", Deleted: at(10), Vanished: at(11), Created: at(11.5), Ready: at(12), Available: at(15)}},
		},
		{
			name:      "the node went before the pod came back",
			requested: []string{"default/a"},
			events: func(tl *timeline) {
				start(tl)
				deleteA(tl)
				tl.del(11.5, node("n1"))
			},
			want: []oracle.NodeRepair{{DaemonSet: dsKey, Node: "n1", Pod: "default/a", Deleted: at(10), Vanished: at(11), Ended: at(11.5), EndedBy: oracle.RepairNodeGone}},
		},
		{
			name:      "the DaemonSet went before the pod came back",
			requested: []string{"default/a"},
			events: func(tl *timeline) {
				start(tl)
				tl.mod(10, pod(ds, "a", "n1", ready(at(1)), terminating))
				tl.del(10.5, ds)
			},
			want: []oracle.NodeRepair{{DaemonSet: dsKey, Node: "n1", Pod: "default/a", Deleted: at(10), Ended: at(10.5), EndedBy: oracle.RepairDaemonSetGone}},
		},
		{
			name:      "a second pod left beside the deleted one: nothing to repair",
			requested: []string{"default/a"},
			events: func(tl *timeline) {
				start(tl)
				tl.add(5, pod(ds, "a9", "n1", ready(at(5))))
				deleteA(tl)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tl timeline
			tc.events(&tl)
			c := oracle.NewChecker(oracle.Config{Grace: map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * time.Second}})
			for _, p := range tc.requested {
				c.RequestDeletion(p)
			}
			for i, ev := range tl {
				if err := c.Apply(ev); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
			}
			if tc.finish > 0 {
				c.Finish(at(tc.finish))
			}
			if diff := cmp.Diff(tc.want, c.NodeRepairs(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("repairs (-want +got):\n%s", diff)
			}
			for _, r := range c.NodeRepairs() {
				if got, want := r.Measured(), r.EndedBy == ""; got != want {
					t.Errorf("repair of %s: Measured() = %v, want %v", r.Node, got, want)
				}
			}
		})
	}
}
