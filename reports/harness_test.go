package reports

import (
	"strings"
	"testing"
)

// A harness-limited run warns and shows in the harness table; events the
// oracle could not apply fail the run's invariants.
func TestHarnessFindings(t *testing.T) {
	r := newReport([]float64{1, 1}, []float64{1, 1})
	r.Runs[0].Harness = &Harness{Events: 1000, LagP50: 0.001, LagP99: 0.25, LagMax: 0.9, Clamped: 3, Retracted: 2, CPUSeconds: 2, Limited: true}
	r.Runs[1].Harness = &Harness{Events: 900, LagP50: 0.001, LagP99: 0.004, LagMax: 0.01, CPUSeconds: 1}
	r.Runs[2].Harness = &Harness{Events: 900, Rejected: 2}
	findings := CheckInvariants(r)
	var limited, rejected bool
	for _, f := range findings {
		if f.Check != CheckHarnessLimited {
			continue
		}
		switch {
		case f.Controller == ControllerOurs && f.Repetition == 0 && f.Severity == SeverityWarn:
			limited = true
		case f.Controller == ControllerUpstream && f.Severity == SeverityFail && strings.Contains(f.Detail, "could not apply 2"):
			rejected = true
		default:
			t.Errorf("unexpected finding %+v", f)
		}
	}
	if !limited || !rejected {
		t.Fatalf("findings %+v: want a harness-limited warning for ours#0 and a failure for upstream's rejected events", findings)
	}
	if Holds(findings, ControllerOurs) != true || Holds(findings, ControllerUpstream) != false {
		t.Errorf("a harness-limited run is a warning, rejected events a failure")
	}
	a := &analysis{r: r, groups: Groups(r), findings: findings}
	tbl, ok := a.harnessTable()
	if !ok {
		t.Fatal("no harness table")
	}
	md := tbl.markdown("")
	for _, want := range []string{"| s (nodes=100) | ours | 2 | 1900 | 1.00 | 250.0 | 900.0 | 3 | 2 | 0 | 3.00 | 1 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("harness table lacks %q:\n%s", want, md)
		}
	}
}
