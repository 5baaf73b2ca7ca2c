package reports

import (
	"slices"
	"strings"
	"testing"
)

// A warm-up run is judged, validated and shown, but adds nothing to the
// statistics: a slow warm-up of ours changes no metric, a violation in it
// fails ours.
func TestWarmupJudgedNotMeasured(t *testing.T) {
	r := newReport([]float64{10, 11, 12}, []float64{10, 11, 12})
	before := Groups(r)
	slow := newRun("s", ControllerOurs, 0, 500)
	r.Warmups = []Run{slow}
	if err := Validate(r); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	after := Groups(r)
	if len(after) != len(before) {
		t.Fatalf("groups with a warm-up = %d, want %d", len(after), len(before))
	}
	for i := range after {
		if len(after[i].Runs) != len(before[i].Runs) {
			t.Errorf("group %d has %d runs with a warm-up, want %d", i, len(after[i].Runs), len(before[i].Runs))
		}
	}
	if !Holds(CheckInvariants(r), ControllerOurs) {
		t.Fatalf("a clean warm-up broke the invariants: %+v", CheckInvariants(r))
	}

	r.Warmups[0].Violations = []Violation{{Kind: "extra-pod", Node: "n1", Start: slow.Start, Seconds: 2}}
	findings := CheckInvariants(r)
	if Holds(findings, ControllerOurs) {
		t.Fatalf("a violation in the warm-up did not fail ours: %+v", findings)
	}
	if !strings.HasPrefix(findings[len(findings)-1].Detail, "warm-up run: ") {
		t.Errorf("finding %q does not say it is the warm-up's", findings[len(findings)-1].Detail)
	}

	r.Warmups[0].Repetition = -1
	if err := Validate(r); err == nil || !strings.Contains(err.Error(), "warmups[0]") {
		t.Errorf("Validate of a bad warm-up = %v, want an error naming warmups[0]", err)
	}

	r.Warmups[0].Repetition = 0
	r.Warmups[0].Violations = nil
	a := &analysis{r: r, groups: Groups(r), findings: CheckInvariants(r)}
	var rows []string
	for _, row := range a.paramsTable().Rows {
		rows = append(rows, strings.Join(row, ": "))
	}
	if !slices.Contains(rows, "warm-up (not measured): s, ours: ok in 60 s") {
		t.Errorf("parameters lack the warm-up:\n%s", strings.Join(rows, "\n"))
	}
}
