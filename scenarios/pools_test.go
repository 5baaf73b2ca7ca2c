package scenarios

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPoolSizesWalk(t *testing.T) {
	p := poolSizes{"a": 10, "b": 4}
	p.afterNodes(&NodesStep{Action: NodeJoin, NodeTarget: NodeTarget{Pool: "a", Count: 3}})
	p.afterNodes(&NodesStep{Action: NodeLeave, NodeTarget: NodeTarget{Pool: "b", Fraction: 0.5}})
	p.afterNodes(&NodesStep{Action: NodeReplace, NodeTarget: NodeTarget{Pool: "a", Count: 5}})
	p.afterNodes(nil)
	if want := (poolSizes{"a": 13, "b": 2}); !cmp.Equal(p, want) {
		t.Fatalf("after join, leave and replace: %v, want %v", p, want)
	}
	// Two branches from the same start: their changes add up, never below 0.
	p.afterParallel([]poolSizes{{"a": 15, "b": 2}, {"a": 13, "b": 0}, {"a": 10, "b": 2}})
	if want := (poolSizes{"a": 12, "b": 0}); !cmp.Equal(p, want) {
		t.Fatalf("after a parallel group: %v, want %v", p, want)
	}
	if p.total() != 12 {
		t.Errorf("total %d, want 12", p.total())
	}
}
