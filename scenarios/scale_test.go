package scenarios

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScaleCounts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pools []int
		nodes int
		want  []int
	}{
		{"identity", []int{3, 47, 50}, 100, []int{3, 47, 50}},
		{"up", []int{3, 47, 50}, 5000, []int{150, 2350, 2500}},
		{"largest remainder", []int{3, 47, 50}, 1001, []int{30, 470, 501}},
		{"down keeps every pool", []int{1, 98, 1}, 10, []int{1, 8, 1}},
		{"empty pools stay empty", []int{0, 10}, 1000, []int{0, 1000}},
		{"minimum", []int{98, 1, 1}, 3, []int{1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pools []NodePool
			def := 0
			for i, c := range tc.pools {
				pools = append(pools, NodePool{Name: string(rune('a' + i)), Count: c})
				def += c
			}
			if diff := cmp.Diff(tc.want, scaleCounts(pools, def, tc.nodes)); diff != "" {
				t.Errorf("scaleCounts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScaleSteps(t *testing.T) {
	s, _, err := LoadBytes("t.yaml", []byte(header+`- nodes: {action: leave, pool: workers, count: 8}
- labels: {pool: workers, count: 2, set: {a: b}}
- cordon: {pool: gpus, count: 2}
- nodes: {action: join, pool: gpus, count: 1}
- parallel:
  - - markNotReady: {pool: gpus, count: 3}
  - - uncordon: {fraction: 0.5}
- waitConverged: {timeout: 1m, timeoutPerNode: 1s}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		nodes  int
		pools  []int
		counts []int
	}{
		{12, []int{10, 2}, []int{8, 2, 2, 1, 3}},
		{120, []int{100, 20}, []int{80, 20, 20, 10, 30}},
		// Half the size: 8 leave -> 4 of the 5 workers; markNotReady's 3 -> 2,
		// which is what gpus has after the join.
		{6, []int{5, 1}, []int{4, 1, 1, 1, 2}},
	} {
		scaled, err := Scale(s, tc.nodes)
		if err != nil {
			t.Fatal(err)
		}
		var pools, counts []int
		for _, p := range scaled.Cluster.Pools {
			pools = append(pools, p.Count)
		}
		scaled.Walk(func(st *Step) bool {
			if tg := st.Target(); tg != nil && tg.Count > 0 {
				counts = append(counts, tg.Count)
			} else if tg != nil && tg.Fraction == 0 {
				counts = append(counts, 0)
			}
			return true
		})
		if diff := cmp.Diff(tc.pools, pools); diff != "" {
			t.Errorf("Scale(%d) pools (-want +got):\n%s", tc.nodes, diff)
		}
		if diff := cmp.Diff(tc.counts, counts); diff != "" {
			t.Errorf("Scale(%d) step counts (-want +got):\n%s", tc.nodes, diff)
		}
		if _, err := Validate(scaled); err != nil {
			t.Errorf("Validate(Scale(%d)):\n%v", tc.nodes, err)
		}
		if scaled.Cluster.Nodes != tc.nodes {
			t.Errorf("Scale(%d) cluster.nodes = %d", tc.nodes, scaled.Cluster.Nodes)
		}
	}
	// Scale does not change its input.
	if s.Cluster.Pools[0].Count != 10 || s.Steps[1].Nodes.Count != 8 {
		t.Errorf("Scale changed the original scenario")
	}
	if _, err := Scale(s, 1); err == nil {
		t.Errorf("Scale to fewer nodes than pools succeeded")
	}
}
