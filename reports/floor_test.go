package reports

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// The floor gets its own comparison with ours, paired when interleaved, and
// the ours/upstream comparison does not change because the floor ran.
func TestCompareFloor(t *testing.T) {
	r := newReport([]float64{20, 22, 21, 19, 20}, []float64{30, 31, 29, 33, 30})
	before := CompareControllers(r, DefaultOptions())
	if rows := CompareFloor(r, DefaultOptions()).Rows; len(rows) != 0 {
		t.Fatalf("floor comparison without floor runs has %d rows", len(rows))
	}
	for i, v := range []float64{10, 11, 10, 9, 10} {
		r.Runs = append(r.Runs, newRun("s", ControllerFloor, i, v))
	}
	r.Params.Interleaved = true
	// The first make run with the floor ran it, then failed to save it.
	if err := Validate(r); err != nil {
		t.Fatalf("a report with floor runs does not validate: %v", err)
	}
	if diff := before.Markdown(); diff != CompareControllers(r, DefaultOptions()).Markdown() {
		t.Error("the floor's runs changed the ours/upstream comparison")
	}
	c := CompareFloor(r, DefaultOptions())
	conv := pairedConvergeRow(t, c.Rows, 5)
	if conv.Ratio < 1.9 || conv.Ratio > 2.1 {
		t.Errorf("ours/floor convergence ratio %.2f, want about 2", conv.Ratio)
	}
	md := (&analysis{r: r, groups: Groups(r), findings: CheckInvariants(r), comparison: CompareControllers(r, DefaultOptions()), floor: c}).markdown()
	for _, want := range []string{"## ours vs the floor", FloorNote, "ours/floor [CI]", "paired ours/floor", CeilingNote, "paired upstream/floor [CI]"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// The floor comparison carries upstream/floor, paired by repetition: the most
// any controller could beat upstream by. Without upstream's runs there is no
// such column.
func TestCompareFloorCeiling(t *testing.T) {
	r := newReport([]float64{20, 22, 21, 19, 20}, []float64{30, 36, 29, 33, 30})
	floor := []float64{10, 12, 10, 11, 10}
	for i, v := range floor {
		r.Runs = append(r.Runs, newRun("s", ControllerFloor, i, v))
	}
	r.Params.Interleaved = true
	c := CompareFloor(r, DefaultOptions())
	conv := pairedConvergeRow(t, c.Rows, 5)
	if conv.Ceiling == nil || conv.Ceiling.N != 5 {
		t.Fatalf("convergence row's upstream/floor = %+v, want 5 pairs", conv.Ceiling)
	}
	// The geometric mean of 30/10, 36/12, 29/10, 33/11, 30/10.
	if got := conv.Ceiling.Ratio; got < 2.97 || got > 3.0 {
		t.Errorf("upstream/floor = %.3f, want about 2.98", got)
	}
	md := c.Markdown()
	for _, want := range []string{CeilingNote, "paired upstream/floor [CI]"} {
		if !strings.Contains(md, want) {
			t.Errorf("floor comparison lacks %q", want)
		}
	}

	var withoutUpstream Report = *r
	withoutUpstream.Runs = nil
	for _, run := range r.Runs {
		if run.Controller != ControllerUpstream {
			withoutUpstream.Runs = append(withoutUpstream.Runs, run)
		}
	}
	c = CompareFloor(&withoutUpstream, DefaultOptions())
	if conv := pairedConvergeRow(t, c.Rows, 5); conv.Ceiling != nil {
		t.Errorf("upstream/floor without upstream runs = %+v", conv.Ceiling)
	}
	if md := c.Markdown(); strings.Contains(md, "upstream/floor") {
		t.Errorf("floor comparison without upstream speaks of upstream/floor:\n%s", md)
	}
}

// pairedConvergeRow is the convergence row of a comparison, which must be
// paired over n pairs.
func pairedConvergeRow(t *testing.T, rows []Row, n int) *Row {
	t.Helper()
	for i := range rows {
		if rows[i].Metric.Key == MetricConverge.Key {
			if rows[i].Paired == nil || rows[i].Paired.N != n {
				t.Fatalf("convergence row %+v is not paired over %d pairs", rows[i], n)
			}
			return &rows[i]
		}
	}
	t.Fatalf("no convergence row in %+v", rows)
	return nil
}

// ours-direct, which binds by nodeName as the floor does, gets its own
// comparison with the floor when both ran, and none otherwise.
func TestCompareFloorDirect(t *testing.T) {
	r := newReport([]float64{20, 22, 21, 19, 20}, []float64{30, 31, 29, 33, 30})
	for i, v := range []float64{10, 11, 10, 9, 10} {
		r.Runs = append(r.Runs, newRun("s", ControllerFloor, i, v))
	}
	r.Params.Interleaved = true
	if rows := CompareFloorDirect(r, DefaultOptions()).Rows; len(rows) != 0 {
		t.Fatalf("ours-direct/floor without ours-direct runs has %d rows", len(rows))
	}
	for i, v := range []float64{15, 16.5, 15, 13.5, 15} {
		r.Runs = append(r.Runs, newRun("s", ControllerOursDirect, i, v))
	}
	if err := Validate(r); err != nil {
		t.Fatalf("a report with ours-direct and floor runs does not validate: %v", err)
	}
	c := CompareFloorDirect(r, DefaultOptions())
	conv := pairedConvergeRow(t, c.Rows, 5)
	if conv.Ratio < 1.45 || conv.Ratio > 1.55 {
		t.Errorf("ours-direct/floor convergence ratio %.2f, want about 1.5", conv.Ratio)
	}
	if conv.Ceiling == nil {
		t.Error("no upstream/floor beside ours-direct/floor")
	}
	md := (&analysis{r: r, groups: Groups(r), findings: CheckInvariants(r), comparison: CompareControllers(r, DefaultOptions()),
		floor: CompareFloor(r, DefaultOptions()), floorDirect: c}).markdown()
	for _, want := range []string{"## ours vs the floor", "## ours-direct vs the floor", FloorDirectNote, "ours-direct/floor [CI]", "paired ours-direct/floor"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// A floor that let kube-scheduler bind is described as one: the note of
// either comparison says so, and none says the floor binds its pods itself.
// One that held the informers (--floor-watch) says so instead of "no
// informers".
func TestCompareFloorBoundByScheduler(t *testing.T) {
	r := newReport([]float64{20, 22, 21, 19, 20}, []float64{30, 31, 29, 33, 30})
	for i, v := range []float64{10, 11, 10, 9, 10} {
		r.Runs = append(r.Runs, newRun("s", ControllerFloor, i, v), newRun("s", ControllerOursDirect, i, v*0.9))
	}
	r.Params.Interleaved = true
	for _, tc := range []struct {
		args             []string
		scheduler, watch bool
		want, wantNot    []string
	}{
		{args: []string{"--floor-inflight=32", "--floor-qps=0"},
			want: []string{FloorNote, FloorDirectNote, CeilingNote}, wantNot: []string{"--floor-bind=scheduler"}},
		{args: []string{"--floor-inflight=32", "--floor-qps=0", "--floor-bind=scheduler"}, scheduler: true,
			want:    []string{FloorSchedulerNote, FloorSchedulerDirectNote, CeilingNote + " " + FloorSchedulerCeilingNote},
			wantNot: []string{FloorNote, FloorDirectNote, "bound to their nodes"}},
		// A floor that held the informers does not say it had none.
		{args: []string{"--floor-inflight=32", "--floor-qps=0", "--floor-watch"}, watch: true,
			want: []string{FloorWatchNote, FloorDirectNote, CeilingNote}, wantNot: []string{"no informers", "--floor-bind=scheduler"}},
		{args: []string{"--floor-inflight=32", "--floor-qps=0", "--floor-bind=scheduler", "--floor-watch"}, scheduler: true, watch: true,
			want: []string{FloorWatchNote, FloorSchedulerDirectNote}, wantNot: []string{"no informers", "bound to their nodes"}},
	} {
		r.Params.Controllers = []ControllerParams{{Name: ControllerOurs}, {Name: ControllerUpstream}, {Name: ControllerOursDirect}, {Name: ControllerFloor, Args: tc.args}}
		if got := FloorBindsByScheduler(r); got != tc.scheduler {
			t.Errorf("%v: FloorBindsByScheduler = %v", tc.args, got)
		}
		if got := FloorWatches(r); got != tc.watch {
			t.Errorf("%v: FloorWatches = %v", tc.args, got)
		}
		notes := CompareFloor(r, DefaultOptions()).Note + "\n" + CompareFloorDirect(r, DefaultOptions()).Note
		for _, want := range tc.want {
			if !strings.Contains(notes, want) {
				t.Errorf("%v: the floor's notes lack %q:\n%s", tc.args, want, notes)
			}
		}
		for _, not := range tc.wantNot {
			if strings.Contains(notes, not) {
				t.Errorf("%v: the floor's notes say %q:\n%s", tc.args, not, notes)
			}
		}
	}
}

// floorRuns are the floor's runs of scenario s, one per pacing given, each
// taking seconds[i].
func floorRuns(scenario string, pacings []string, seconds []float64) []Run {
	var runs []Run
	for i, p := range pacings {
		run := newRun(scenario, ControllerFloor, i, seconds[i])
		if p != "" {
			run.ControllerArgs = []string{"--floor-inflight=" + p}
		}
		runs = append(runs, run)
	}
	return runs
}

// The pacing with the most runs is the one the floor's search kept; a run at
// another is a trial. Each pacing once means the search never finished.
func TestFloorTrials(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pacings    []string
		want       []FloorTrial
		unfinished bool
	}{
		{"the first of two lost", []string{"32", "128", "128", "128", "128"},
			[]FloorTrial{{Case{"s", 100}, 0, "32", "128"}}, false},
		{"the second of two lost", []string{"32", "128", "32"},
			[]FloorTrial{{Case{"s", 100}, 1, "128", "32"}}, false},
		{"two of three lost", []string{"8", "32", "128", "32", "32"},
			[]FloorTrial{{Case{"s", 100}, 0, "8", "32"}, {Case{"s", 100}, 2, "128", "32"}}, false},
		{"one pacing", []string{"32", "32", "32"}, nil, false},
		{"each tried once", []string{"8", "32", "128"}, nil, true},
		{"a tie", []string{"32", "128", "32", "128"}, nil, true},
		{"none recorded", []string{"", "", ""}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReport([]float64{20, 20, 20, 20, 20}, nil)
			r.Runs = append(r.Runs, floorRuns("s", tc.pacings, []float64{10, 10, 10, 10, 10})...)
			// Another case's floor, all at one pacing, adds no trial.
			r.Runs = append(r.Runs, floorRuns("other", []string{"128", "128"}, []float64{10, 10})...)
			var wantUnfinished []Case
			if tc.unfinished {
				wantUnfinished = []Case{{"s", 100}}
			}
			if got, unfinished := FloorTrials(r); !slices.Equal(got, tc.want) || !slices.Equal(unfinished, wantUnfinished) {
				t.Errorf("FloorTrials = %+v, unfinished %v; want %+v, %v", got, unfinished, tc.want, wantUnfinished)
			}
			r.Runs = append(r.Runs, newRun("s", ControllerUpstream, 0, 20))
			note := CompareFloor(r, DefaultOptions()).Note
			if got := strings.Contains(note, "did not finish in s (nodes=100)"); got != tc.unfinished {
				t.Errorf("the floor comparison's note says the search did not finish: %v, want %v:\n%s", got, tc.unfinished, note)
			}
		})
	}
}

// A trial at a pacing that lost is slow: left in, it would pull ours/floor
// and upstream/floor down. The comparisons pair only the kept pacing's runs
// and say which they left out.
func TestCompareFloorLeavesOutTrials(t *testing.T) {
	r := newReport([]float64{22, 22, 22, 22, 22}, []float64{33, 33, 33, 33, 33})
	r.Runs = append(r.Runs, floorRuns("s", []string{"8", "32", "32", "32", "32"}, []float64{60, 11, 11, 11, 11})...)
	for i := range 5 {
		r.Runs = append(r.Runs, newRun("s", ControllerOursDirect, i, 11))
	}
	r.Params.Interleaved = true
	for _, c := range []Comparison{CompareFloor(r, DefaultOptions()), CompareFloorDirect(r, DefaultOptions())} {
		conv := pairedConvergeRow(t, c.Rows, 4)
		want := 22.0 / 11
		if c.BLabel == ControllerOursDirect {
			want = 1
		}
		if math.Abs(conv.Paired.Ratio-want) > 1e-9 {
			t.Errorf("%s: paired %s/floor = %.3f, want %.3f (the trial at 8 in flight left out)", c.Title, c.BLabel, conv.Paired.Ratio, want)
		}
		if conv.Ceiling == nil || conv.Ceiling.N != 4 || math.Abs(conv.Ceiling.Ratio-3) > 1e-9 {
			t.Errorf("%s: upstream/floor = %+v, want 3 over 4 pairs", c.Title, conv.Ceiling)
		}
		if !strings.Contains(c.Note, "s (nodes=100) repetition 0 at 8 calls in flight (kept 32)") {
			t.Errorf("%s: the note does not say which run was left out:\n%s", c.Title, c.Note)
		}
	}
	// ours/upstream keeps every pair.
	if conv := pairedConvergeRow(t, CompareControllers(r, DefaultOptions()).Rows, 5); math.Abs(conv.Paired.Ratio-22.0/33) > 1e-9 {
		t.Errorf("ours/upstream = %.3f, want %.3f", conv.Paired.Ratio, 22.0/33)
	}
}
