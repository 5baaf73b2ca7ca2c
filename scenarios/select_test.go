package scenarios

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func nodeNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func TestSelectDeterministic(t *testing.T) {
	nodes := nodeNames("worker", 100)
	first := Select(42, 3, nodes, 5)
	// Pinned: a change here changes which nodes every recorded run picked.
	want := []string{"worker-80", "worker-70", "worker-91", "worker-68", "worker-6"}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("Select(42, 3, ...) (-want +got):\n%s", diff)
	}
	for range 10 {
		if diff := cmp.Diff(first, Select(42, 3, nodes, 5)); diff != "" {
			t.Fatalf("same inputs, different result:\n%s", diff)
		}
	}
	shuffled := slices.Clone(nodes)
	slices.Reverse(shuffled)
	shuffled = append(shuffled, nodes[:10]...) // duplicates count once
	if diff := cmp.Diff(first, Select(42, 3, shuffled, 5)); diff != "" {
		t.Errorf("candidate order changed the result:\n%s", diff)
	}
	if got := Select(42, 3, nodes, 10); !slices.Equal(got[:5], first) {
		t.Errorf("a larger n is not an extension of a smaller one: %v vs %v", got, first)
	}
	if slices.Equal(Select(43, 3, nodes, 5), first) {
		t.Errorf("another seed gave the same nodes")
	}
	if slices.Equal(Select(42, 4, nodes, 5), first) {
		t.Errorf("another step gave the same nodes")
	}
}

func TestSelectBounds(t *testing.T) {
	for _, tc := range []struct {
		name       string
		candidates []string
		n          int
		want       int
	}{
		{"none", nil, 3, 0},
		{"negative", nodeNames("a", 3), -1, 0},
		{"more than there are", nodeNames("a", 3), 10, 3},
		{"all", nodeNames("a", 3), 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Select(1, 0, tc.candidates, tc.n)
			if len(got) != tc.want {
				t.Errorf("got %d names, want %d", len(got), tc.want)
			}
			seen := map[string]bool{}
			for _, g := range got {
				if seen[g] || !slices.Contains(tc.candidates, g) {
					t.Errorf("bad pick %q in %v", g, got)
				}
				seen[g] = true
			}
		})
	}
}

// TestSelectSpread is a sanity check that picks are not biased towards some
// names: over many steps each of 20 nodes is picked about equally often.
func TestSelectSpread(t *testing.T) {
	nodes := nodeNames("n", 20)
	counts := map[string]int{}
	const steps = 2000
	for i := range steps {
		for _, n := range Select(7, i, nodes, 5) {
			counts[n]++
		}
	}
	want := steps * 5 / 20
	for _, n := range nodes {
		if c := counts[n]; c < want*8/10 || c > want*12/10 {
			t.Errorf("%s picked %d times, want about %d", n, c, want)
		}
	}
}
