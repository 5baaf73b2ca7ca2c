package reports

import (
	"strings"
	"testing"
)

// A join the run did not measure while its node and DaemonSet remained
// fails the run: the join percentiles would leave it out unsaid. Only a pod
// that kwok never started is the simulator's, a warning.
func TestUnmeasuredJoins(t *testing.T) {
	measured := []NodeLatency{{Node: "j1", Seconds: 0.5}, {Node: "j2", Seconds: 0.7}}
	tests := []struct {
		name       string
		unmeasured []UnmeasuredJoin
		stalls     []SimulatorStall
		want       []string // "severity: detail substring", in order
	}{
		{name: "every join measured or ended"},
		{
			name:       "eligible without a pod",
			unmeasured: []UnmeasuredJoin{{DaemonSet: "default/d", Node: "j3", Eligible: true}},
			want:       []string{"fail: 1 of 4 node joins have no latency while node and DaemonSet remained: j3 (eligible, no pod)"},
		},
		{
			name:       "a Ready pod on a node never eligible",
			unmeasured: []UnmeasuredJoin{{DaemonSet: "default/d", Node: "j3", PodCreated: true, PodReady: true}},
			want:       []string{"fail: 1 of 4 node joins have no latency while node and DaemonSet remained: j3 (a Ready pod, never eligible)"},
		},
		{
			name: "a pod never Ready: the controller's unless kwok left it Pending to the end",
			unmeasured: []UnmeasuredJoin{
				{DaemonSet: "default/d", Node: "j3", Eligible: true, PodCreated: true},
				{DaemonSet: "default/d", Node: "j4", Eligible: true, PodCreated: true},
			},
			stalls: []SimulatorStall{{Pod: "default/p4", Node: "j4", Seconds: 30, Open: true}, {Pod: "default/p3", Node: "j3", Seconds: 3}},
			want: []string{
				"fail: 1 of 5 node joins have no latency while node and DaemonSet remained: j3 (eligible, pod never Ready)",
				"warn: 1 of 5 node joins have no latency while node and DaemonSet remained: j4 (eligible, pod never started by kwok); the simulator's",
			},
		},
		{
			// kwok left the old pod terminating there, not the new one
			// Pending: the new pod's not being Ready is not excused by it.
			name:       "a pod never Ready beside an old pod kwok left terminating",
			unmeasured: []UnmeasuredJoin{{DaemonSet: "default/d", Node: "j3", Eligible: true, PodCreated: true}},
			stalls:     []SimulatorStall{{Pod: "default/old", Node: "j3", Terminating: true, Seconds: 30, Open: true}},
			want:       []string{"fail: 1 of 4 node joins have no latency while node and DaemonSet remained: j3 (eligible, pod never Ready)"},
		},
		{
			name: "many: the first five named",
			unmeasured: []UnmeasuredJoin{
				{Node: "a", Eligible: true}, {Node: "b", Eligible: true}, {Node: "c", Eligible: true},
				{Node: "d", Eligible: true}, {Node: "e", Eligible: true}, {Node: "f", Eligible: true}, {Node: "g", Eligible: true},
			},
			want: []string{"fail: 7 of 10 node joins have no latency while node and DaemonSet remained: a (eligible, no pod), b (eligible, no pod), c (eligible, no pod), d (eligible, no pod), e (eligible, no pod) and 2 more"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReport([]float64{1}, []float64{1})
			run := &r.Runs[0]
			run.NodeJoins, run.NodeEligible = measured, measured
			run.NodeJoinsEnded = 1
			run.NodeJoinsUnmeasured, run.SimulatorStalls = tt.unmeasured, tt.stalls
			var got []Finding
			for _, f := range CheckInvariants(r) {
				if f.Check == CheckJoinUnmeasured {
					got = append(got, f)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("join findings %+v, want %d", got, len(tt.want))
			}
			for i, f := range got {
				sev, detail, _ := strings.Cut(tt.want[i], ": ")
				if string(f.Severity) != sev || !strings.HasPrefix(f.Detail, detail) || f.Controller != ControllerOurs {
					t.Errorf("finding %d: %s %s %q, want %s for ours, detail starting %q", i, f.Severity, f.Controller, f.Detail, sev, detail)
				}
			}
			fails := len(tt.want) > 0 && strings.HasPrefix(tt.want[0], "fail")
			if Holds(CheckInvariants(r), ControllerOurs) == fails {
				t.Errorf("Holds(ours) = %v with findings %+v", !fails, got)
			}
		})
	}
}

// The per-node table says how many joins its node-join row leaves out.
func TestJoinAccountNote(t *testing.T) {
	r := newReport([]float64{1, 1}, []float64{1})
	for i := range r.Runs {
		r.Runs[i].NodeJoins = []NodeLatency{{Node: "j1", Seconds: 0.5}, {Node: "j2", Seconds: 0.7}}
	}
	r.Runs[0].NodeJoinsEnded = 2
	r.Runs[1].NodeJoinsUnmeasured = []UnmeasuredJoin{{Node: "j3", Eligible: true}}
	perNodeTableHas(t, r,
		"| s (nodes=100) | node join (1) | ours | 4 |",
		"| s (nodes=100) | node join | upstream | 2 |",
		"(1) s (nodes=100) ours: 4 of 7 joins measured; 2 ended by their node or DaemonSet going first, 1 unmeasured (see the findings).",
	)
}

// perNodeTableHas checks that r's per-node latency table holds each of wants.
func perNodeTableHas(t *testing.T, r *Report, wants ...string) {
	t.Helper()
	a := &analysis{r: r, groups: Groups(r)}
	tbl, ok := a.nodeLatencyTable()
	if !ok {
		t.Fatal("no per-node table")
	}
	md := tbl.markdown("")
	for _, want := range wants {
		if !strings.Contains(md, want) {
			t.Errorf("per-node table lacks %q:\n%s", want, md)
		}
	}
}

// The per-node table splits the repairs, pooled over the runs, into the
// cluster's and the controller's shares.
func TestRepairRows(t *testing.T) {
	r := newReport([]float64{1, 1}, []float64{1})
	for i := range r.Runs {
		r.Runs[i].Repairs = []Repair{
			{Step: "repair", Replacement: Replacement{Node: "a", Deleting: 1.5, Recreating: 0.25, Starting: 2}},
			{Step: "repair", Replacement: Replacement{Node: "b", Deleting: 0.5, Recreating: 0.75, Starting: 1}},
		}
	}
	perNodeTableHas(t, r,
		"| s (nodes=100) | repaired: terminating → gone (cluster) | ours | 4 | 1.00 | 1.50 | 1.50 | 1.50 |",
		"| s (nodes=100) | repaired: gone → new pod (controller) | ours | 4 | 0.500 | 0.750 | 0.750 | 0.750 |",
		"| s (nodes=100) | repaired: new pod → available (cluster) | upstream | 2 | 1.50 | 2.00 | 2.00 | 2.00 |",
	)
}
