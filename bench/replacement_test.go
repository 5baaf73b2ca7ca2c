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
