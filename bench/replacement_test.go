package bench

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/reports"
)

// rolloutClock is a rollout's start and the time s seconds after it.
func rolloutClock() (time.Time, func(s float64) time.Time) {
	start := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	return start, func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
}

func TestReplacementSplitsOnlyReplacedNodes(t *testing.T) {
	start, at := rolloutClock()
	tests := []struct {
		name string
		node oracle.NodeRollout
		want reports.Replacement
		ok   bool
	}{
		{
			name: "deleted, gone, recreated, available",
			node: oracle.NodeRollout{Node: "n", OldPodGone: at(1), OldPodVanished: at(1.5), NewPodCreated: at(2.25), NewPodReady: at(3), NewPodAvailable: at(4)},
			want: reports.Replacement{Node: "n", Deleting: 0.5, Recreating: 0.75, Starting: 1.75},
			ok:   true,
		},
		{
			name: "deleted without grace: gone and vanished at once",
			node: oracle.NodeRollout{Node: "n", OldPodGone: at(1), OldPodVanished: at(1), NewPodCreated: at(1), NewPodAvailable: at(2)},
			want: reports.Replacement{Node: "n", Starting: 1},
			ok:   true,
		},
		{
			name: "surge: the new pod came before the old one went",
			node: oracle.NodeRollout{Node: "n", OldPodGone: at(5), OldPodVanished: at(6), NewPodCreated: at(1), NewPodAvailable: at(3)},
		},
		{
			name: "created while the old pod was still terminating",
			node: oracle.NodeRollout{Node: "n", OldPodGone: at(1), OldPodVanished: at(3), NewPodCreated: at(2), NewPodAvailable: at(4)},
		},
		{
			name: "a new node: no old pod",
			node: oracle.NodeRollout{Node: "n", NewPodCreated: at(1), NewPodAvailable: at(2)},
		},
		{
			name: "old pod lost before the rollout began",
			node: oracle.NodeRollout{Node: "n", OldPodGone: at(-1), OldPodVanished: at(0.5), NewPodCreated: at(1), NewPodAvailable: at(2)},
		},
		{
			name: "still terminating at the end",
			node: oracle.NodeRollout{Node: "n", OldPodGone: at(1)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := replacement(start, tc.node)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("replacement (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeRolloutSecondsCountFromTheNodesTurn(t *testing.T) {
	start, at := rolloutClock()
	tests := []struct {
		name string
		node oracle.NodeRollout
		want float64
	}{
		{
			name: "no surge: from the old pod's deletion",
			node: oracle.NodeRollout{OldPodGone: at(5), OldPodVanished: at(6), NewPodCreated: at(6.5), NewPodAvailable: at(8)},
			want: 3,
		},
		{
			name: "surge: from the new pod's creation, not the old pod's later deletion",
			node: oracle.NodeRollout{OldPodGone: at(9), OldPodVanished: at(10), NewPodCreated: at(5), NewPodReady: at(7), NewPodAvailable: at(8)},
			want: 3,
		},
		{
			name: "a node that joined: from the rollout's start",
			node: oracle.NodeRollout{NewPodCreated: at(4), NewPodAvailable: at(6)},
			want: 6,
		},
		{
			name: "old pod lost before the rollout: from its start",
			node: oracle.NodeRollout{OldPodGone: at(-2), NewPodCreated: at(1), NewPodAvailable: at(2)},
			want: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeRolloutSeconds(start, tc.node); got != tc.want {
				t.Errorf("nodeRolloutSeconds = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRepairSplitsOnlyReplacedPods(t *testing.T) {
	_, at := rolloutClock()
	tests := []struct {
		name   string
		repair oracle.NodeRepair
		want   reports.Replacement
		ok     bool
	}{
		{
			name:   "deleted, gone, recreated, available",
			repair: oracle.NodeRepair{Node: "n", Deleted: at(1), Vanished: at(1.5), Created: at(2.25), Ready: at(3), Available: at(4)},
			want:   reports.Replacement{Node: "n", Deleting: 0.5, Recreating: 0.75, Starting: 1.75},
			ok:     true,
		},
		{
			name:   "created while the deleted pod was still terminating",
			repair: oracle.NodeRepair{Node: "n", Deleted: at(1), Vanished: at(3), Created: at(2), Available: at(4)},
		},
		{
			name:   "the node went first",
			repair: oracle.NodeRepair{Node: "n", Deleted: at(1), Vanished: at(1.5), Ended: at(2), EndedBy: oracle.RepairNodeGone},
		},
		{
			name:   "not available yet",
			repair: oracle.NodeRepair{Node: "n", Deleted: at(1), Vanished: at(1.5), Created: at(2), Ready: at(3)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := repair(tc.repair)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("repair (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRepairStepIsTheLastPodsStepBefore: a repair belongs to the last pods
// step that began before its deletion, acknowledged or not, named as the
// step metrics name it (a repeated name numbered).
func TestRepairStepIsTheLastPodsStepBefore(t *testing.T) {
	_, at := rolloutClock()
	// Each step's writes acknowledged 2 s after it began.
	recs := []stepRecord{
		{name: "create", kind: "create", began: at(0), start: at(2)},
		{name: "repair", kind: "pods", began: at(10), start: at(12)},
		{name: "wait", kind: "waitConverged", began: at(13), start: at(13)},
		{name: "repair", kind: "pods", began: at(20), start: at(22)},
		{name: "update", kind: "update", began: at(30), start: at(32)},
	}
	steps := make([]reports.Step, len(recs))
	for i, r := range recs {
		steps[i] = reports.Step{Name: r.name, Kind: r.kind, Start: r.start}
	}
	for _, tc := range []struct {
		deleted float64
		want    string
	}{{5, ""}, {10, "repair"}, {15, "repair"}, {20.5, "repair#2"}, {21.9, "repair#2"}, {35, "repair#2"}} {
		if got := repairStep(recs, steps, at(tc.deleted)); got != tc.want {
			t.Errorf("deleted at %v s: step %q, want %q", tc.deleted, got, tc.want)
		}
	}
}
