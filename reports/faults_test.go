package reports

import (
	"strings"
	"testing"
	"time"
)

// The Faults table sums each fault kind over a case's runs: blows, faults
// survived of those played, violations, recovery and call-rate percentiles,
// and what else the faults recorded.
func TestFaultsTable(t *testing.T) {
	r := newReport([]float64{10, 11}, nil)
	start := r.Runs[0].Start
	r.Runs[0].Faults = []Fault{
		{Step: "storm", Kind: "killStorm", Start: start, End: start.Add(time.Minute), Injected: 20, APIRequests: 100, CallsPerMinute: 100, Recovered: true, RecoverySeconds: 4},
		{Step: "writers", Kind: "conflictingWriters", Injected: 7, APIRequests: -1, Recovered: true, StatusWrites: 39},
		{Step: "timeouts", Kind: "writeTimeouts", Injected: 110, APIRequests: 400, CallsPerMinute: 400, Recovered: true, LandAfterSeconds: 2, LandedWrites: 108, LandFailures: 2, LandFailuresBy: map[string]int64{"DELETE 404": 2}},
	}
	r.Runs[1].Faults = []Fault{
		{Step: "storm", Kind: "killStorm", Injected: 20, APIRequests: 300, CallsPerMinute: 300, Recovered: true, RecoverySeconds: 9, Violations: 2},
		{Step: "writers", Kind: "conflictingWriters", Injected: 7, APIRequests: 50, CallsPerMinute: 50, Recovered: true, StatusWrites: 39, LostUpdate: "DSBENCH_WRITER is 3, the writers last set 7"},
		{Step: "timeouts", Kind: "writeTimeouts", Injected: 204, APIRequests: 1000, CallsPerMinute: 1000, Recovered: true, Violations: 121, LandAfterSeconds: 2, LandedWrites: 134, LandFailures: 70, LandFailuresBy: map[string]int64{"POST no answer": 10, "DELETE 404": 60}},
	}
	tb, ok := analyze(r, nil, Options{}).faultsTable()
	if !ok || len(tb.Rows) != 3 {
		t.Fatalf("rows %v, want one per fault kind", tb.Rows)
	}
	want := [][]string{
		{"killStorm", "2", "40", "1/2", "2", fmtDecimal(4), fmtDecimal(9), fmtDecimal(100), fmtDecimal(300), "—", ""},
		{"conflictingWriters", "2", "14", "1/2", "0", fmtDecimal(0), fmtDecimal(0), fmtDecimal(50), fmtDecimal(50), "—", "78 bogus status writes, 1 lost updates"},
		{"writeTimeouts", "2", "314", "1/2", "121", fmtDecimal(0), fmtDecimal(0), fmtDecimal(400), fmtDecimal(1000), "—", "242 timed-out writes landed later, 72 refused then (DELETE 404: 62, POST no answer: 10)"},
	}
	for i, row := range tb.Rows {
		if got := strings.Join(row[2:], "|"); got != strings.Join(want[i], "|") {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, strings.Join(want[i], "|"))
		}
	}
}
