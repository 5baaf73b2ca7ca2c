package bench

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dsbench/dsbench/scenarios"
)

// A node that a concurrent leave took out of its pool is skipped; a node
// still in its pool that vanished, or any other error, is a real failure.
func TestLeftMeanwhileExcusesOnlyNodesThatLeft(t *testing.T) {
	st := &scenarios.Step{}
	s := &runState{pools: map[string]*poolState{"spot": {nodes: map[string]bool{"spot-1": true}}}}
	gone := func(name string) error {
		return fmt.Errorf("patching node %s: %w", name, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name))
	}
	if !s.leftMeanwhile(st, "spot-0", gone("spot-0")) {
		t.Error("spot-0 left its pool and is not found: want it skipped")
	}
	if s.leftMeanwhile(st, "spot-1", gone("spot-1")) {
		t.Error("spot-1 is still in its pool but not found: want an error, not a skip")
	}
	if s.leftMeanwhile(st, "spot-0", errors.New("connection refused")) {
		t.Error("an error other than NotFound was excused")
	}
	if got := s.skipped[st]; !slices.Equal(got, []string{"spot-0"}) {
		t.Errorf("skipped = %q, want [spot-0]", got)
	}
}
