package oracle_test

import (
	"slices"
	"testing"

	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/scenarios"
)

// Every oracle kind has a family a scenario can expect, and every kind a
// scenario can expect is produced: by the oracle, or by the runner itself
// (a barrier's timeout, a step's failed API call, a fault step's bound on
// API calls: bench.Core.FaultEnded).
func TestKindFamilies(t *testing.T) {
	produced := map[scenarios.ViolationKind]bool{scenarios.NotConverged: true, scenarios.StepFailed: true, scenarios.HotLoop: true}
	for _, k := range oracle.Kinds() {
		f := k.Family()
		if !slices.Contains(scenarios.ViolationKinds(), f) {
			t.Errorf("oracle kind %s maps to %q, which no scenario can expect", k, f)
		}
		produced[f] = true
	}
	for _, f := range scenarios.ViolationKinds() {
		if !produced[f] {
			t.Errorf("scenarios may expect %s, which nothing produces", f)
		}
	}
}
