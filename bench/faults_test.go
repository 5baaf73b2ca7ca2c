package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dsbench/dsbench/bench/apiproxy"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

func TestJudgeFaults(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	step := func(start, seconds float64, converged bool) reports.Step {
		return reports.Step{Start: at(start), Seconds: seconds, Converged: converged}
	}
	fault := reports.Fault{Step: "storm", Kind: "killStorm", Start: at(10), End: at(40), Injected: 20}
	end := at(100)
	for _, tc := range []struct {
		name       string
		steps      []reports.Step
		violations []reports.Violation
		recovered  bool
		recovery   float64
		counted    int
	}{
		{name: "the last step begun during the fault converges 7 s after it",
			steps: []reports.Step{step(0, 5, true), step(12, 20, true), step(15, 32, true)}, recovered: true, recovery: 7},
		{name: "everything converged before the fault ended",
			steps: []reports.Step{step(0, 5, true), step(12, 3, true)}, recovered: true, recovery: 0},
		{name: "a later step's own convergence is not the fault's recovery",
			steps: []reports.Step{step(12, 30, true), step(50, 40, true)}, recovered: true, recovery: 2},
		{name: "a step begun by the end that never converged",
			steps: []reports.Step{step(12, 30, true), step(20, 80, false)}, recovered: false},
		{name: "violations from the start to the recovery count, expected ones and later ones do not",
			steps: []reports.Step{step(12, 33, true)}, recovered: true, recovery: 5,
			violations: []reports.Violation{
				{Kind: "DuplicatePods", Start: at(9)},  // before
				{Kind: "DuplicatePods", Start: at(10)}, // at the start
				{Kind: "MissingPod", Start: at(30), Expected: true},
				{Kind: "Overunavailable", Start: at(45)}, // at the recovery
				{Kind: "Overunavailable", Start: at(46)}, // after it
			}, counted: 2},
		{name: "without a recovery, violations count to the end of the run",
			steps: []reports.Step{step(12, 88, false)}, recovered: false,
			violations: []reports.Violation{{Kind: "NotConverged", Start: at(100)}}, counted: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeFaults([]reports.Fault{fault}, tc.steps, tc.violations, end)[0]
			if got.Recovered != tc.recovered || got.RecoverySeconds != tc.recovery || got.Violations != tc.counted {
				t.Errorf("recovered %v in %v s with %d violations, want %v in %v s with %d",
					got.Recovered, got.RecoverySeconds, got.Violations, tc.recovered, tc.recovery, tc.counted)
			}
			if got.Survived() != (tc.recovered && tc.counted == 0) {
				t.Errorf("Survived() = %v", got.Survived())
			}
		})
	}
}

// A controller over the step's bound of API calls a minute is a HotLoop at
// once; at the bound, or with unknown counts, it is not. A wrong status while
// creates were refused is a StatusMismatch, a lost update of conflicting
// writers a StepFailed.
func TestFaultEndedJudgesTheCallBoundAndTheStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sc := &scenarios.Scenario{}
	for _, tc := range []struct {
		name  string
		fault reports.Fault
		kinds []string
	}{
		{"over the bound", reports.Fault{APIRequests: 301, CallsPerMinute: 602, MaxCallsPerMinute: 600}, []string{"HotLoop"}},
		{"at the bound", reports.Fault{APIRequests: 300, CallsPerMinute: 600, MaxCallsPerMinute: 600}, nil},
		{"no bound", reports.Fault{APIRequests: 9000, CallsPerMinute: 18000}, nil},
		{"counts unknown", reports.Fault{APIRequests: -1, CallsPerMinute: 0, MaxCallsPerMinute: 600}, nil},
		{"a wrong status", reports.Fault{StatusError: "dsbench/agent status: currentNumberScheduled 100, oracle 60"}, []string{"StatusMismatch"}},
		{"a lost update", reports.Fault{DaemonSet: "dsbench/agent", LostUpdate: `DaemonSet dsbench/agent at generation 9 has DSBENCH_WRITER="step1-edit-6"`}, []string{"StepFailed"}},
		{"conflicting writers whose last template stayed", reports.Fault{DaemonSet: "dsbench/agent", Injected: 7, StatusWrites: 39, LastValue: "step1-apply-7"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCore(CoreConfig{Scenario: sc, Oracle: oracleConfig(nil)})
			f := tc.fault
			f.Step, f.Start, f.End = "quota", t0, t0.Add(30*time.Second)
			c.FaultEnded(f)
			var kinds []string
			for _, v := range c.violations {
				kinds = append(kinds, v.Kind)
				if !strings.Contains(v.Detail, `"quota"`) || v.Expected {
					t.Errorf("violation %+v: want the step named and not expected", v)
				}
			}
			if strings.Join(kinds, ",") != strings.Join(tc.kinds, ",") {
				t.Errorf("violations %v, want %v", kinds, tc.kinds)
			}
			if len(c.faults) != 1 {
				t.Errorf("%d faults recorded, want 1", len(c.faults))
			}
		})
	}
}

// The same seed and step draw the same storm; another step draws another.
func TestKillStormDrawsAreSeeded(t *testing.T) {
	r := scenarios.DurationRange{Min: scenarios.Duration{Duration: time.Second}, Max: scenarios.Duration{Duration: 4 * time.Second}}
	draws := func(seed int64, step int) []time.Duration {
		rng := faultRand(seed, step)
		var out []time.Duration
		for range 20 {
			d := draw(rng, r)
			if d < r.Min.Duration || d > r.Max.Duration {
				t.Fatalf("draw %v outside [%v, %v]", d, r.Min.Duration, r.Max.Duration)
			}
			out = append(out, d)
		}
		return out
	}
	a, b, c := draws(41, 3), draws(41, 3), draws(41, 4)
	if !slices.Equal(a, b) {
		t.Errorf("same seed and step, different draws:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("another step drew the same storm: %v", a)
	}
	fixed := scenarios.DurationRange{Min: scenarios.Duration{Duration: 2 * time.Second}, Max: scenarios.Duration{Duration: 2 * time.Second}}
	if d := draw(faultRand(1, 1), fixed); d != 2*time.Second {
		t.Errorf("an empty span drew %v, want its min", d)
	}
}

// Only a gap that an API server restart explains is excused, and only near
// it: a gap elsewhere in the run still fails the run.
func TestWatchGapsExplainedOnlyByARestartNearThem(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	c := NewCore(CoreConfig{Scenario: &scenarios.Scenario{}, Oracle: oracleConfig(nil)})
	c.FaultEnded(reports.Fault{Step: "quota", Kind: string(scenarios.FaultRejectCreates), Start: at(0), End: at(30)})
	c.FaultEnded(reports.Fault{Step: "restart", Kind: string(scenarios.FaultAPIServerRestart), Start: at(40), End: at(58)})
	for _, tc := range []struct {
		from, to float64
		want     string
	}{
		{41, 58.04, "restart"}, // the watches broke with the kill
		{60, 60.05, "restart"}, // resumed just after the restart returned
		{63.1, 63.2, ""},       // past the slack
		{10, 10.1, ""},         // during a fault that breaks no watch
		{38, 39.9, ""},         // before the restart
	} {
		if got := c.faultBreakingWatches(at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("gap %v-%v s: explained by %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
}

// A scenario with a slowAPI fault gets the proxy and a kubeconfig for the
// controller that reaches the API server through it; the fault switches
// the latency on for its length, records it and the requests it delayed,
// and switches it off again, also when the run is cancelled; closing
// removes both.
func TestSlowAPIThroughTheProxy(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer api.Close()
	s := &runState{r: &Runner{conf: Config{REST: &rest.Config{Host: api.URL}}}, sc: &scenarios.Scenario{}, run: &reports.Run{}}
	closeProxy, err := s.startAPIProxy()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.ctrlKubeconfig)
	if err != nil || cfg.Host != s.proxy.URL() {
		t.Fatalf("the controller's kubeconfig: %+v, %v; want the proxy %s", cfg, err, s.proxy.URL())
	}
	p := s.proxy

	fault := &scenarios.SlowAPI{WriteLatency: scenarios.Duration{Duration: 10 * time.Millisecond}, For: scenarios.Duration{Duration: time.Second}}
	var rec reports.Fault
	done := make(chan error)
	go func() {
		injected, err := s.slowAPI(t.Context(), fault, &rec)
		if injected != 1 {
			err = errors.Join(err, fmt.Errorf("injected %d, want 1", injected))
		}
		done <- err
	}()
	for p.Latency() == (apiproxy.Latency{}) {
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		resp, err := http.Post(p.URL()+"/api/v1/namespaces/dsbench/pods", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if resp, err := http.Get(p.URL() + "/api/v1/pods"); err == nil {
		resp.Body.Close()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rec.DelayedRequests != 3 || rec.WriteLatencySeconds != 0.01 || rec.ReadLatencySeconds != 0 {
		t.Errorf("record %+v: want 3 delayed writes at 10 ms", rec)
	}
	if l := p.Latency(); l != (apiproxy.Latency{}) {
		t.Errorf("latency %+v after the fault, want none", l)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	long := &scenarios.SlowAPI{WriteLatency: scenarios.Duration{Duration: time.Second}, For: scenarios.Duration{Duration: time.Hour}}
	if _, err := s.slowAPI(ctx, long, &reports.Fault{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if l := p.Latency(); l != (apiproxy.Latency{}) {
		t.Errorf("latency %+v after a cancelled fault, want none", l)
	}

	closeProxy()
	if _, err := os.Stat(s.ctrlKubeconfig); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig outlived the proxy: %v", err)
	}
	if _, err := http.Get(p.URL() + "/version"); err == nil {
		t.Errorf("the proxy still answers after it was closed")
	}
}

// Without the proxy (a scenario without slowAPI never starts one) the
// fault fails instead of delaying nothing.
func TestSlowAPIWithoutTheProxy(t *testing.T) {
	s := &runState{r: &Runner{}, sc: &scenarios.Scenario{}, run: &reports.Run{}}
	if _, err := s.slowAPI(t.Context(), &scenarios.SlowAPI{For: scenarios.Duration{Duration: time.Second}}, &reports.Fault{}); err == nil {
		t.Errorf("slowAPI without a proxy: no error")
	}
}
