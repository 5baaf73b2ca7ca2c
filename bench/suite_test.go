package bench

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsbench/dsbench/bench/floor"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// The pairs alternate which controller goes first, so that what one run
// leaves behind for the next does not always favour the same side.
func TestRunOrder(t *testing.T) {
	tests := []struct {
		name       string
		which      []Controller
		reps       int
		interleave bool
		want       []runSlot
	}{
		{"interleaved pairs alternate", []Controller{Ours, Upstream}, 4, true,
			[]runSlot{{Ours, 0}, {Upstream, 0}, {Upstream, 1}, {Ours, 1}, {Ours, 2}, {Upstream, 2}, {Upstream, 3}, {Ours, 3}}},
		{"interleaved three reverse on odd repetitions", []Controller{Ours, Upstream, Floor}, 2, true,
			[]runSlot{{Ours, 0}, {Upstream, 0}, {Floor, 0}, {Floor, 1}, {Upstream, 1}, {Ours, 1}}},
		{"not interleaved", []Controller{Ours, Upstream}, 2, false,
			[]runSlot{{Ours, 0}, {Ours, 1}, {Upstream, 0}, {Upstream, 1}}},
		{"one controller", []Controller{Ours}, 3, true, []runSlot{{Ours, 0}, {Ours, 1}, {Ours, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, runOrder(tt.which, tt.reps, tt.interleave, nil), cmp.AllowUnexported(runSlot{})); diff != "" {
				t.Errorf("runOrder (-want +got):\n%s", diff)
			}
		})
	}
}

// Shuffled, each pair of repetitions is an order and its reverse, every
// repetition plays each controller once, and over many suites each
// controller holds each place about as often: the 6th run of two
// controllers over 3 repetitions, the floor's every time unshuffled, is
// either's.
func TestRunOrderShuffled(t *testing.T) {
	which := []Controller{OursDirect, Floor, Upstream}
	const suites = 600
	places := map[Controller][]int{} // controller -> how often it played each place
	for seed := range uint64(suites) {
		got := runOrder(which, 4, true, rand.New(rand.NewPCG(seed+1, 0)))
		if len(got) != 4*len(which) {
			t.Fatalf("seed %d: %d runs, want %d", seed+1, len(got), 4*len(which))
		}
		for r := range 4 {
			rep := got[r*len(which) : (r+1)*len(which)]
			var played []Controller
			for _, s := range rep {
				if s.rep != r {
					t.Fatalf("seed %d: repetition %d holds %v", seed+1, r, s)
				}
				played = append(played, s.which)
			}
			if !slices.Equal(slices.Sorted(slices.Values(played)), slices.Sorted(slices.Values(which))) {
				t.Fatalf("seed %d: repetition %d played %v, want each of %v once", seed+1, r, played, which)
			}
			if r%2 == 1 {
				prev := got[(r-1)*len(which) : r*len(which)]
				for i := range rep {
					if rep[i].which != prev[len(prev)-1-i].which {
						t.Fatalf("seed %d: repetition %d is not repetition %d reversed: %v after %v", seed+1, r, r-1, rep, prev)
					}
				}
			}
		}
		for i, s := range got {
			if places[s.which] == nil {
				places[s.which] = make([]int, len(got))
			}
			places[s.which][i]++
		}
	}
	// Each place is a controller's in a third of the suites: 200 of 600,
	// with a standard deviation of about 12.
	for c, counts := range places {
		for i, n := range counts {
			if n < 150 || n > 250 {
				t.Errorf("%s played place %d in %d of %d suites, want about %d", c, i+1, n, suites, suites/len(which))
			}
		}
	}
	two := map[Controller]int{}
	for seed := range uint64(suites) {
		two[runOrder([]Controller{OursDirect, Floor}, 3, true, rand.New(rand.NewPCG(seed+1, 0)))[5].which]++
	}
	if two[Floor] < 250 || two[Floor] > 350 {
		t.Errorf("the floor played 6th in %d of %d suites of two controllers over 3 repetitions, want about half", two[Floor], suites)
	}
}

// The floor tries each pacing once, then keeps the one that converged
// fastest; a run that did not converge never wins.
func TestFloorPacer(t *testing.T) {
	run := func(sec float64, converged bool) *reports.Run {
		return &reports.Run{Outcome: reports.OutcomeOK, Steps: []reports.Step{{Name: "create", Seconds: sec, Converged: converged}}}
	}
	base := FloorConfig{QPS: 2, Bind: floor.BindScheduler, Watch: true}
	p := floorPacer{candidates: []int{8, 32, 128}, base: base}
	var got []int
	for _, r := range []*reports.Run{run(30, true), run(20, true), run(5, false), run(1, true), run(1, true)} {
		conf := p.next()
		got = append(got, conf.InFlight)
		p.record(conf, r)
		// Each run's own arguments, as the report records them.
		if want := []string{"--floor-inflight=" + strconv.Itoa(conf.InFlight), "--floor-qps=2", "--floor-bind=scheduler", "--floor-watch"}; !slices.Equal(conf.Args(), want) {
			t.Errorf("floor args %q, want %q", conf.Args(), want)
		}
	}
	if want := []int{8, 32, 128, 32, 32}; !slices.Equal(got, want) {
		t.Errorf("in flight per repetition = %v, want %v", got, want)
	}
}

// The report's parameters are what each scenario ran with, resolved: the
// flags' node count and repetitions where set, else the scenario's own; one
// value for all is recorded at the top, several only per scenario.
func TestSuiteReportParams(t *testing.T) {
	load := func(name string, reps int) *scenarios.Scenario {
		t.Helper()
		sc, _, err := scenarios.LoadLibrary(name)
		if err != nil {
			t.Fatal(err)
		}
		sc.Repetitions = reps
		return sc
	}
	// shape is the part of the parameters this test is about.
	type shape struct {
		Nodes, Repetitions int
		PerScenario        [][2]int // nodes, repetitions
		Interleaved        bool
		Controllers        []string
	}
	tests := []struct {
		name string
		conf SuiteConfig
		want shape
	}{
		{"the flags decide",
			SuiteConfig{Scenarios: []*scenarios.Scenario{load("bench-rollout", 5), load("node-churn", 1)}, Nodes: 1000, Repetitions: 3,
				Controllers: []Controller{Ours, Upstream}, Interleave: true},
			shape{1000, 3, [][2]int{{1000, 3}, {1000, 3}}, true, []string{"ours", "upstream"}}},
		{"the scenarios' own, one value for all",
			SuiteConfig{Scenarios: []*scenarios.Scenario{load("bench-rollout", 2), load("node-churn", 2)}, Controllers: []Controller{Ours}, Interleave: true},
			shape{100, 2, [][2]int{{100, 2}, {100, 2}}, false, []string{"ours"}}},
		{"the scenarios' own, different: only per scenario; never 0",
			SuiteConfig{Scenarios: []*scenarios.Scenario{load("bench-rollout", 0), load("node-churn", 4)}, Controllers: []Controller{Ours, Upstream}},
			shape{100, 0, [][2]int{{100, 1}, {100, 4}}, false, []string{"ours", "upstream"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := suiteReport(tt.conf, time.Now()).Params
			got := shape{Nodes: p.Nodes, Repetitions: p.Repetitions, Interleaved: p.Interleaved}
			for _, s := range p.PerScenario {
				got.PerScenario = append(got.PerScenario, [2]int{s.Nodes, s.Repetitions})
				if s.Oracle == nil || s.Seed == 0 {
					t.Errorf("%s: oracle %v, seed %d; want both", s.Name, s.Oracle, s.Seed)
				}
			}
			for _, c := range p.Controllers {
				got.Controllers = append(got.Controllers, c.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
		})
	}
}

// Each controller's parameters say how to run it again: its settings, its
// command line (the floor's: the pacings it tried; ours-direct's with its
// bind mode) and its binary (ours-direct's is ours's); the local cluster's
// setup, when the cluster is ours.
func TestSuiteReportControllers(t *testing.T) {
	sc, _, err := scenarios.LoadLibrary("bench-rollout")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	conf := SuiteConfig{
		Scenarios: []*scenarios.Scenario{sc}, Controllers: []Controller{Ours, OursDirect, Floor},
		Controller:    ControllerConfig{Workers: 7, QPS: 50, Burst: 100, ExtraArgs: []string{"--sync-delay=1s"}},
		Binaries:      map[Controller]string{Ours: "/bin/ours", Upstream: "/bin/kcm"},
		FloorInFlight: []int{32, 128}, FloorQPS: 2.5, FloorBind: floor.BindScheduler, FloorWatch: true,
		Kwok: &reports.KwokParams{Cluster: "dsbench", Parallelism: 8},
	}
	r := suiteReport(conf, now)
	if !r.GeneratedAt.Equal(now) || r.GeneratedAt.Location() != time.UTC || r.SchemaVersion != reports.SchemaVersion {
		t.Errorf("generated at %v (schema %q), want %v in UTC", r.GeneratedAt, r.SchemaVersion, now)
	}
	oursArgs := ControllerConfig{Which: Ours, Workers: 7, QPS: 50, Burst: 100, ExtraArgs: []string{"--sync-delay=1s"}}.Args()
	directArgs := ControllerConfig{Which: OursDirect, Workers: 7, QPS: 50, Burst: 100, ExtraArgs: []string{"--sync-delay=1s"}}.Args()
	want := []reports.ControllerParams{
		{Name: "ours", Binary: "/bin/ours", QPS: 50, Burst: 100, Workers: 7, Args: oursArgs},
		{Name: "ours-direct", Binary: "/bin/ours", QPS: 50, Burst: 100, Workers: 7, Args: directArgs},
		{Name: "floor", QPS: 50, Burst: 100, Workers: 7, Args: []string{"--floor-inflight=32,128", "--floor-qps=2.5", "--floor-bind=scheduler", "--floor-watch"}},
	}
	if diff := cmp.Diff(want, r.Params.Controllers); diff != "" {
		t.Errorf("controllers (-want +got):\n%s", diff)
	}
	if !slices.Contains(oursArgs, "--sync-delay=1s") || !slices.Contains(directArgs, "--sync-delay=1s") {
		t.Errorf("our args %v and %v: want the extra argument in both", oursArgs, directArgs)
	}
	if slices.Contains(oursArgs, "--bind-mode=direct") || !slices.Contains(directArgs, "--bind-mode=direct") {
		t.Errorf("our args %v and %v: want --bind-mode=direct in ours-direct's only", oursArgs, directArgs)
	}
	if diff := cmp.Diff(conf.Kwok, r.Params.Kwok); diff != "" {
		t.Errorf("kwok (-want +got):\n%s", diff)
	}
	if r.Params.Harness.QPS != -1 || r.Versions.Go == "" || r.Versions.Kubernetes == "" {
		t.Errorf("harness %+v, versions %+v", r.Params.Harness, r.Versions)
	}
}

// The floor's pacings per scenario: the ones given, else by the node count
// the scenario plays at (the suite's, else its own), one or a search of
// two; the report's parameters list every candidate once, in order.
func TestSuiteFloorCandidates(t *testing.T) {
	small, _, err := scenarios.LoadLibrary("bench-rollout") // 100 nodes of its own
	if err != nil {
		t.Fatal(err)
	}
	large, err := scenarios.Scale(small, 5000)
	if err != nil {
		t.Fatal(err)
	}
	large.Metadata.Name = "bench-rollout-5000"
	for _, tc := range []struct {
		name   string
		conf   SuiteConfig
		want   [][]int // per scenario
		params string
	}{
		{"given", SuiteConfig{FloorInFlight: []int{64, 8}, FloorSearch: true}, [][]int{{64, 8}, {64, 8}}, "--floor-inflight=64,8"},
		{"each scenario's own nodes", SuiteConfig{}, [][]int{{32}, {512}}, "--floor-inflight=32,512"},
		{"a search at each scenario's own nodes", SuiteConfig{FloorSearch: true}, [][]int{{32}, {128, 512}}, "--floor-inflight=32,128,512"},
		{"the suite's nodes", SuiteConfig{Nodes: 1000}, [][]int{{128}, {128}}, "--floor-inflight=128"},
		{"a search at the suite's nodes", SuiteConfig{Nodes: 1000, FloorSearch: true}, [][]int{{32, 128}, {32, 128}}, "--floor-inflight=32,128"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := tc.conf
			conf.Scenarios = []*scenarios.Scenario{small, large}
			conf.Controllers = []Controller{Floor}
			for i, sc := range conf.Scenarios {
				if got := conf.floorCandidates(sc); !slices.Equal(got, tc.want[i]) {
					t.Errorf("%s: candidates %v, want %v", sc.Metadata.Name, got, tc.want[i])
				}
			}
			r := suiteReport(conf, time.Now())
			if len(r.Params.Controllers) != 1 || len(r.Params.Controllers[0].Args) == 0 || r.Params.Controllers[0].Args[0] != tc.params {
				t.Errorf("floor's parameters %+v, want %s first", r.Params.Controllers, tc.params)
			}
		})
	}
}

// Without a baseline the suite passes when the invariants hold for our
// controller, whatever upstream or ours-direct did; with one, the gate
// decides, and it judges ours alone too. The external controller is judged
// as ours is, always without the gate.
func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// report has five clean repetitions of each controller given; a name
	// with a "!" has an unexpected violation in its first.
	report := func(controllers ...string) *reports.Report {
		r := &reports.Report{SchemaVersion: reports.SchemaVersion, Params: reports.Params{Scenarios: []string{"s"}, Nodes: 100}}
		for _, c := range controllers {
			name, broken := strings.CutSuffix(c, "!")
			for rep := range 5 {
				start := t0.Add(time.Duration(rep) * time.Minute)
				run := reports.Run{Scenario: "s", Controller: name, Repetition: rep, Nodes: 100, Start: start, End: start.Add(time.Minute),
					Outcome: reports.OutcomeOK, Steps: []reports.Step{{Name: "create", Kind: "create", Start: start, Converged: true, Seconds: 10}},
					Resources: reports.Resources{CPUSeconds: 1}, Coverage: reports.Coverage{PodsExpected: 100, PodsObserved: 100, ObservedFraction: 1}}
				if broken && rep == 0 {
					run.Violations = []reports.Violation{{Kind: "DuplicatePods", Start: start, Detail: "two pods"}}
				}
				r.Runs = append(r.Runs, run)
			}
		}
		return r
	}
	baseline := reports.NewBaseline(report("ours"), 1.25)
	tests := []struct {
		name         string
		report       *reports.Report
		baseline     *reports.Baseline
		pass, gate   bool
		wantFindings int
	}{
		{"clean", report("ours", "upstream"), nil, true, false, 0},
		{"upstream's violation does not fail", report("ours", "upstream!"), nil, true, false, 0},
		{"ours' violation fails and is named", report("ours!", "upstream"), nil, false, false, 1},
		{"ours-direct's violation does not fail", report("ours", "ours-direct!"), nil, true, false, 0},
		{"no runs fails", report(), nil, false, false, 0},
		{"a baseline: the gate decides", report("ours"), baseline, true, true, 0},
		{"a baseline: ours' violation fails the gate", report("ours!"), baseline, false, true, 0},
		{"a baseline: ours-direct's violation does not fail the gate", report("ours", "ours-direct!"), baseline, true, true, 0},
		{"external clean", report("external"), nil, true, false, 0},
		{"external's violation fails and is named", report("external!"), nil, false, false, 1},
		// No baseline holds the external controller: its invariants decide.
		{"a baseline: external clean, no gate", report("external"), baseline, true, false, 0},
		{"a baseline: external's violation fails without the gate", report("external!"), baseline, false, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.report, tt.baseline)
			if v.Pass != tt.pass || (v.Gate != nil) != tt.gate || len(v.Findings) != tt.wantFindings {
				t.Errorf("verdict %+v: want pass %v, gate %v, %d findings", v, tt.pass, tt.gate, tt.wantFindings)
			}
		})
	}
}

// A scenario whose controller goes through the API proxy says so in the
// report; the others do not.
func TestSuiteReportAPIProxy(t *testing.T) {
	plain, _, err := scenarios.LoadLibrary("bench-rollout")
	if err != nil {
		t.Fatal(err)
	}
	slow := &scenarios.Scenario{Metadata: scenarios.Metadata{Name: "slow"}, Steps: []scenarios.Step{{Parallel: [][]scenarios.Step{{{
		Fault: &scenarios.FaultStep{SlowAPI: &scenarios.SlowAPI{WriteLatency: scenarios.Duration{Duration: time.Second}, For: scenarios.Duration{Duration: time.Second}}},
	}}}}}}
	r := suiteReport(SuiteConfig{Scenarios: []*scenarios.Scenario{plain, slow}, Controllers: []Controller{Ours}}, time.Now())
	var got []bool
	for _, p := range r.Params.PerScenario {
		got = append(got, p.APIProxy)
	}
	if !slices.Equal(got, []bool{false, true}) {
		t.Errorf("apiProxy per scenario %v, want [false true]", got)
	}
}

// The external controller's parameters are its name alone: the harness did
// not start it, so it knows no binary, settings or command line.
func TestSuiteReportExternal(t *testing.T) {
	sc, _, err := scenarios.LoadLibrary("bench-rollout")
	if err != nil {
		t.Fatal(err)
	}
	conf := SuiteConfig{Scenarios: []*scenarios.Scenario{sc}, Controllers: []Controller{External},
		Controller: ControllerConfig{Workers: 7, QPS: 50, Burst: 100, ExtraArgs: []string{"--sync-delay=1s"}},
		Binaries:   map[Controller]string{Ours: "/bin/ours", Upstream: "/bin/kcm"}}
	r := suiteReport(conf, time.Now())
	stampProvenance(r)
	if diff := cmp.Diff([]reports.ControllerParams{{Name: "external"}}, r.Params.Controllers); diff != "" {
		t.Errorf("controllers (-want +got):\n%s", diff)
	}
	if Gated([]Controller{External}) || !Gated([]Controller{Ours, Upstream, Floor}) {
		t.Error("the gate applies to the external controller, or not to the others")
	}
}

// A suite refuses the external controller beside another, or on a cluster
// the harness owns, before it creates anything.
func TestRunSuiteRefusesExternal(t *testing.T) {
	for _, tt := range []struct {
		name  string
		which []Controller
		owns  bool
		want  string
	}{
		{"beside ours", []Controller{External, Ours}, false, ExternalAloneReason},
		{"on an owned cluster", []Controller{External}, true, ExternalClusterReason},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			_, err := RunSuite(t.Context(), SuiteConfig{Controllers: tt.which, OwnsCluster: tt.owns, OutDir: out})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("RunSuite: %v, want an error with %q", err, tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("RunSuite made %s before refusing", out)
			}
		})
	}
}

func TestWarmupController(t *testing.T) {
	for _, tc := range []struct {
		which []Controller
		want  Controller
		ok    bool
	}{
		{[]Controller{Ours, Upstream}, Ours, true},
		{[]Controller{Floor, Upstream, Ours}, Upstream, true}, // the floor adopts no orphans
		{[]Controller{OursDirect}, OursDirect, true},
		{[]Controller{Floor}, "", false},
		{[]Controller{External}, "", false}, // the harness starts nothing
	} {
		got, ok := warmupController(tc.which)
		if got != tc.want || ok != tc.ok {
			t.Errorf("warmupController(%v) = %q, %v; want %q, %v", tc.which, got, ok, tc.want, tc.ok)
		}
	}
}
