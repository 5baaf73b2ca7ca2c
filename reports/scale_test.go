package reports

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// closeTo compares with a relative tolerance: the fits go through
// floating-point sums, so a known answer comes back within rounding.
func closeTo(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

func TestFitLine(t *testing.T) {
	tests := []struct {
		name                 string
		ns, ys               []float64
		intercept, slope, r2 float64
	}{
		{"a + b·n exactly", []float64{100, 500, 1000, 2000, 5000}, []float64{3 + 0.002*100, 3 + 0.002*500, 3 + 0.002*1000, 3 + 0.002*2000, 3 + 0.002*5000}, 3, 0.002, 1},
		{"through the origin", []float64{100, 1000}, []float64{1, 10}, 0, 0.01, 1},
		{"falling", []float64{10, 20, 40}, []float64{50, 40, 20}, 60, -1, 1},
		// Constant cost: R² is 0/0, and a flat line meeting every point is a perfect fit.
		{"constant", []float64{100, 500, 1000}, []float64{7, 7, 7}, 7, 0, 1},
		// (1,1), (2,3), (3,2): b = Sxy/Sxx = 1/2, a = 2 − 2b = 1; fitted 1.5, 2, 2.5;
		// SSres = 0.25 + 1 + 0.25 = 1.5, SStot = 2, R² = 0.25.
		{"imperfect, by hand", []float64{1, 2, 3}, []float64{1, 3, 2}, 1, 0.5, 0.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := FitLine(tt.ns, tt.ys)
			if !closeTo(f.Intercept, tt.intercept) || !closeTo(f.Slope, tt.slope) || !closeTo(f.R2, tt.r2) {
				t.Errorf("FitLine = %+v, want intercept %g, slope %g, R² %g", f, tt.intercept, tt.slope, tt.r2)
			}
		})
	}
}

func TestFitPowerLaw(t *testing.T) {
	ns := []float64{100, 500, 1000, 2000, 5000}
	law := func(c, k float64) []float64 {
		ys := make([]float64, len(ns))
		for i, n := range ns {
			ys[i] = c * math.Pow(n, k)
		}
		return ys
	}
	tests := []struct {
		name     string
		ys       []float64
		c, k     float64
		r2, r2Ln float64
	}{
		{"n^1.5", law(0.002, 1.5), 0.002, 1.5, 1, 1},
		{"linear through the origin is n^1", law(0.01, 1), 0.01, 1, 1, 1},
		{"sublinear n^0.5", law(3, 0.5), 3, 0.5, 1, 1},
		{"constant is n^0", law(4, 0), 4, 0, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := FitPowerLaw(ns, tt.ys)
			if err != nil {
				t.Fatal(err)
			}
			if !closeTo(f.Coefficient, tt.c) || !closeTo(f.Exponent, tt.k) || !closeTo(f.R2, tt.r2) || !closeTo(f.R2Log, tt.r2Ln) {
				t.Errorf("FitPowerLaw = %+v, want c %g, k %g, R² %g (log %g)", f, tt.c, tt.k, tt.r2, tt.r2Ln)
			}
			if got := f.At(100000); !closeTo(got, tt.c*math.Pow(100000, tt.k)) {
				t.Errorf("At(100000) = %g, want %g", got, tt.c*math.Pow(100000, tt.k))
			}
		})
	}
	if _, err := FitPowerLaw([]float64{100, 200}, []float64{0, 3}); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("a zero cost: got %v, want an error saying a power law needs positive values", err)
	}
}

// A power law's points are fitted better by the power law, a line's by
// the line; both R² are in the metric's units.
func TestBetterFit(t *testing.T) {
	ns := []float64{100, 500, 1000, 2000, 5000}
	power, line := make([]float64, len(ns)), make([]float64, len(ns))
	for i, n := range ns {
		power[i] = 0.001 * math.Pow(n, 1.5)
		line[i] = 20 + 0.01*n
	}
	for _, tt := range []struct {
		name string
		ys   []float64
		want string
	}{{"power law", power, FitPower}, {"line with an intercept", line, FitLinear}} {
		t.Run(tt.name, func(t *testing.T) {
			var pts []ScalePoint
			for i, n := range ns {
				pts = append(pts, ScalePoint{Nodes: int(n), Runs: 1, Values: []float64{tt.ys[i]}, Summary: &PointSummary{Median: tt.ys[i]}})
			}
			s := ScaleSeries{Points: pts}
			fitSeries(&s, DefaultScaleOptions())
			if s.Better != tt.want {
				t.Errorf("better = %q (linear R² %.4f, power R² %.4f), want %q", s.Better, s.Linear.R2, s.Power.R2, tt.want)
			}
		})
	}
}

// scaleRun is a successful run at n nodes whose create step took seconds.
func scaleRun(scenario, controller string, rep, nodes int, create, cpu float64) Run {
	start := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC).Add(time.Duration(nodes)*time.Minute + time.Duration(rep)*time.Second)
	return Run{Scenario: scenario, Controller: controller, Repetition: rep, Nodes: nodes, Start: start, End: start.Add(time.Minute),
		Outcome: OutcomeOK, Steps: []Step{{Name: "create", Kind: "create", Start: start, Converged: true, Seconds: create}},
		APIRequests: map[string]int64{"create": int64(nodes)}, Resources: Resources{CPUSeconds: cpu},
		Coverage: Coverage{ObservedFraction: 1}}
}

func scaleReport(runs ...Run) *Report {
	r := &Report{SchemaVersion: SchemaVersion, GeneratedAt: time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC), Runs: runs,
		Params: Params{Scenarios: []string{"s"}, Controllers: []ControllerParams{{Name: ControllerOurs, Workers: 5}}}}
	if len(runs) > 0 {
		r.Params.Nodes = runs[0].Nodes
	}
	return r
}

func findSeries(t *testing.T, s *Scale, scenario, controller, metric string) *ScaleSeries {
	t.Helper()
	for i := range s.Series {
		if se := &s.Series[i]; se.Scenario == scenario && se.Controller == controller && se.Metric == metric {
			return se
		}
	}
	t.Fatalf("no series %s/%s/%s", scenario, controller, metric)
	return nil
}

func TestAnalyzeScale(t *testing.T) {
	now := time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC)
	// Create takes 1 + 0.01·n s; CPU is 0.002·n^1.5 s. At 500 nodes one run
	// failed and one did not converge; at 1000 nodes two reports are merged.
	var small, mid, large1, large2 []Run
	for rep := range 6 {
		small = append(small, scaleRun("s", ControllerOurs, rep, 100, 2, 0.002*math.Pow(100, 1.5)))
		mid = append(mid, scaleRun("s", ControllerOurs, rep, 500, 6, 0.002*math.Pow(500, 1.5)))
		run := scaleRun("s", ControllerOurs, rep, 1000, 11, 0.002*math.Pow(1000, 1.5))
		if rep < 3 {
			large1 = append(large1, run)
		} else {
			large2 = append(large2, run)
		}
	}
	mid[4].Outcome, mid[4].Error = OutcomeFailed, "cluster went away"
	mid[5].Steps[0].Converged = false
	// A scenario measured at one size only.
	single := scaleRun("t", ControllerOurs, 0, 100, 3, 1)
	small = append(small, single)
	sources := []ScaleSource{
		{Path: "a/report.json", Report: scaleReport(small...)},
		{Path: "b/report.json", Report: scaleReport(mid...)},
		{Path: "c/report.json", Report: scaleReport(large1...)},
		{Path: "d/report.json", Report: scaleReport(large2...)},
	}
	s, err := AnalyzeScale(sources, now, DefaultScaleOptions())
	if err != nil {
		t.Fatal(err)
	}

	create := findSeries(t, s, "s", ControllerOurs, "step:create")
	if create.Linear == nil || !closeTo(create.Linear.Intercept, 1) || !closeTo(create.Linear.Slope, 0.01) || !closeTo(create.Linear.R2, 1) {
		t.Errorf("create's linear fit %+v, want 1 + 0.01·n with R² 1", create.Linear)
	}
	if create.Better != FitLinear {
		t.Errorf("create: better %q, want linear", create.Better)
	}
	wantPoints := []struct{ nodes, runs, failed, missing, used int }{{100, 6, 0, 0, 6}, {500, 6, 1, 1, 4}, {1000, 6, 0, 0, 6}}
	for i, w := range wantPoints {
		p := create.Points[i]
		if p.Nodes != w.nodes || p.Runs != w.runs || p.Failed != w.failed || p.Missing != w.missing || len(p.Values) != w.used {
			t.Errorf("point %d: %d nodes, %d runs, %d failed, %d missing, %d used; want %+v", i, p.Nodes, p.Runs, p.Failed, p.Missing, len(p.Values), w)
		}
	}
	// Six values have a CI of the median; four do not, and say why.
	if create.Points[0].Summary.CI == nil || create.Points[1].Summary.CI != nil || !strings.Contains(create.Points[1].Summary.CINote, "n too small") {
		t.Errorf("CIs: %+v, %+v", create.Points[0].Summary, create.Points[1].Summary)
	}
	for i, want := range []struct {
		nodes         int
		linear        float64
		extrapolation bool
	}{{10000, 101, false}, {50000, 501, true}, {100000, 1001, true}} {
		pr := create.Predictions[i]
		if pr.Nodes != want.nodes || pr.Linear == nil || !closeTo(*pr.Linear, want.linear) || pr.Extrapolation != want.extrapolation {
			t.Errorf("prediction %d: %+v (linear %v), want %+v", i, pr, pr.Linear, want)
		}
	}

	cpu := findSeries(t, s, "s", ControllerOurs, "cpu")
	if cpu.Power == nil || !closeTo(cpu.Power.Exponent, 1.5) || !closeTo(cpu.Power.Coefficient, 0.002) || cpu.Better != FitPower {
		t.Errorf("cpu: power fit %+v, better %q; want 0.002·n^1.5, power", cpu.Power, cpu.Better)
	}
	if p := cpu.Points[1]; p.Missing != 0 || p.Failed != 1 {
		t.Errorf("cpu at 500 nodes: %d failed, %d missing; want 1 and 0 (CPU was measured in the unconverged run)", p.Failed, p.Missing)
	}
	requests := findSeries(t, s, "s", ControllerOurs, "requests")
	if requests.Linear == nil || !closeTo(requests.Linear.Slope, 1) {
		t.Errorf("requests: %+v, want slope 1", requests.Linear)
	}

	one := findSeries(t, s, "t", ControllerOurs, "step:create")
	if one.Linear != nil || one.Power != nil || !strings.Contains(one.NoFit, "measured at 1 node count") || len(one.Predictions) != 0 {
		t.Errorf("one node count: %+v, want no fit and a reason", one)
	}

	wantRuns := []ScaleRuns{
		{Scenario: "s", Controller: ControllerOurs, Nodes: 100, Runs: 6, Sources: []string{"a/report.json"}},
		{Scenario: "s", Controller: ControllerOurs, Nodes: 500, Runs: 6, Failed: 1, Errors: []string{"cluster went away"}, Sources: []string{"b/report.json"}},
		{Scenario: "s", Controller: ControllerOurs, Nodes: 1000, Runs: 6, Sources: []string{"c/report.json", "d/report.json"}},
		{Scenario: "t", Controller: ControllerOurs, Nodes: 100, Runs: 1, Sources: []string{"a/report.json"}},
	}
	if diff := cmp.Diff(wantRuns, s.Runs); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "merged as repetitions (c/report.json, d/report.json)") {
		t.Errorf("notes %q, want one on the merge", s.Notes)
	}
}

// Whatever cannot be analyzed is an error naming the report.
func TestAnalyzeScaleErrors(t *testing.T) {
	now := time.Now()
	good := scaleReport(scaleRun("s", ControllerOurs, 0, 100, 2, 1))
	noNodes := scaleReport(scaleRun("s", ControllerOurs, 0, 0, 2, 1))
	noNodes.Params.Nodes = 0
	otherSchema := scaleReport(scaleRun("s", ControllerOurs, 0, 100, 2, 1))
	otherSchema.SchemaVersion = "dsbench.report/v9"
	tests := []struct {
		name    string
		sources []ScaleSource
		want    []string
	}{
		{"none", nil, []string{"no reports"}},
		{"the same report twice", []ScaleSource{{Path: "x/report.json", Report: good}, {Path: "y/report.json", Report: good}}, []string{"x/report.json and y/report.json hold 1 of the same runs", "s/ours#0 at 100 nodes", "given twice"}},
		{"no node count", []ScaleSource{{Path: "n/report.json", Report: noNodes}}, []string{"n/report.json", "no node count"}},
		{"another schema", []ScaleSource{{Path: "v/report.json", Report: otherSchema}}, []string{"v/report.json", "dsbench.report/v9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := AnalyzeScale(tt.sources, now, DefaultScaleOptions())
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// The scaling testdata: testdata/report.json made at 100, 500 and 1000
// nodes, each cost growing by a known law (see scaleTestdataReport).
var scaleTestdataSizes = []int{100, 500, 1000}

func scaleTestdataPath(nodes int) string {
	return filepath.Join("testdata", "scale", "nodes-"+strconv.Itoa(nodes), ReportFile)
}

// scaleTestdataReport is testdata/report.json (5 nodes) as if made at n
// nodes: ours' times and CPU grow as n, upstream's as n^1.3; memory grows by
// 40 KiB (ours) and 60 KiB (upstream) a node; request counts as n. At 500
// nodes ours' rollout in repetition 2 does not converge; at 1000 nodes an
// upstream run fails. node-churn is in the 100-node report only, so it has
// no fit. Timelines and extras are dropped to keep the files small.
func scaleTestdataReport(t *testing.T, base *Report, n int) *Report {
	t.Helper()
	var r Report
	data, err := marshalJSON(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	shift := time.Duration(n) * time.Minute
	r.GeneratedAt = r.GeneratedAt.Add(shift)
	r.Params.Nodes = n
	if n != 100 {
		r.Params.Scenarios = []string{"rolling-update"}
	}
	var runs []Run
	for _, run := range r.Runs {
		if run.Scenario == "node-churn" && n != 100 {
			continue
		}
		k := 1.0
		if run.Controller == ControllerUpstream {
			k = 1.3
		}
		grow := math.Pow(float64(n)/100, k)
		run.Nodes = n
		run.Start, run.End = run.Start.Add(shift), run.End.Add(shift)
		run.Timelines, run.Extra = nil, nil
		for i := range run.Steps {
			run.Steps[i].Start = run.Steps[i].Start.Add(shift)
			run.Steps[i].Seconds = round3(run.Steps[i].Seconds * grow)
			if ev := run.Steps[i].CompletingEvent; ev != nil {
				ev.Time = ev.Time.Add(shift)
			}
		}
		for i := range run.Rollouts {
			run.Rollouts[i].Seconds = round3(run.Rollouts[i].Seconds * grow)
		}
		for i := range run.Violations {
			run.Violations[i].Start = run.Violations[i].Start.Add(shift)
		}
		for verb, c := range run.APIRequests {
			run.APIRequests[verb] = c * int64(n) / 5
		}
		if run.OK() {
			run.Resources.CPUSeconds = round3(run.Resources.CPUSeconds * grow)
			perNode := int64(40 << 10)
			if run.Controller == ControllerUpstream {
				perNode = 60 << 10
			}
			run.Resources.PeakRSSBytes += perNode * int64(n)
		}
		if n == 500 && run.Controller == ControllerOurs && run.Scenario == "rolling-update" && run.Repetition == 2 {
			last := &run.Steps[len(run.Steps)-1]
			last.Converged = false
			run.Rollouts[0].Complete = false
		}
		if n == 1000 && run.Controller == ControllerUpstream && run.Repetition == 3 {
			run = Run{Scenario: run.Scenario, Controller: run.Controller, Repetition: run.Repetition, Nodes: n, Start: run.Start, End: run.Start.Add(time.Minute),
				Outcome: OutcomeFailed, Error: "starting kube-controller-manager: timed out after 1m0s (synthetic)", Steps: []Step{}, Coverage: Coverage{ObservedFraction: 1}}
		}
		runs = append(runs, run)
	}
	r.Runs = runs
	return &r
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// TestScaleTestdata keeps testdata/scale/ what scaleTestdataReport makes
// of testdata/report.json; -update writes it.
func TestScaleTestdata(t *testing.T) {
	base, _ := readTestdata(t)
	for _, n := range scaleTestdataSizes {
		want := scaleTestdataReport(t, base, n)
		path := scaleTestdataPath(n)
		if *update {
			if err := Write(filepath.Dir(path), want); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := Read(path)
		if err != nil {
			t.Fatalf("%v (run with -update to make it)", err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s is not what scaleTestdataReport makes (-want +got); rerun with -update:\n%s", path, diff)
		}
	}
}

func readScaleTestdata(t *testing.T) []ScaleSource {
	t.Helper()
	var srcs []ScaleSource
	for _, n := range scaleTestdataSizes {
		r, err := Read(scaleTestdataPath(n))
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, ScaleSource{Path: scaleTestdataPath(n), Name: "nodes-" + strconv.Itoa(n) + "/" + ReportFile, Report: r})
	}
	return srcs
}

func TestGoldenScale(t *testing.T) {
	s, err := AnalyzeScale(readScaleTestdata(t), time.Date(2026, 1, 5, 6, 7, 8, 0, time.UTC), DefaultScaleOptions())
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "scale.md.golden", []byte(ScaleMarkdown(s)))

	// The laws scaleTestdataReport applied come back out.
	up := findSeries(t, s, "rolling-update", ControllerUpstream, "step:create")
	if up.Power == nil || !closeTo(math.Round(up.Power.Exponent*100)/100, 1.3) || up.Better != FitPower {
		t.Errorf("upstream's create step: %+v, want n^1.3 and the power law better", up.Power)
	}
	rss := findSeries(t, s, "rolling-update", ControllerOurs, "rss")
	if rss.Linear == nil || math.Abs(rss.Linear.Slope-40<<10) > 1 {
		t.Errorf("ours' memory: %+v, want 40 KiB a node", rss.Linear)
	}
}

func TestRenderScale(t *testing.T) {
	s, err := AnalyzeScale(readScaleTestdata(t), time.Date(2026, 1, 5, 6, 7, 8, 0, time.UTC), DefaultScaleOptions())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := RenderScale(dir, s); err != nil {
		t.Fatal(err)
	}
	back, err := ReadScale(filepath.Join(dir, ScaleJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("scale.json does not round-trip (-want +got):\n%s", diff)
	}
	md, err := os.ReadFile(filepath.Join(dir, ScaleMarkdownFile))
	if err != nil || string(md) != ScaleMarkdown(s) {
		t.Errorf("scale.md is not ScaleMarkdown's: %v", err)
	}
	// Every figure is a PNG file, linked from scale.md and embedded in scale.html.
	figs := scaleFigures(s)
	page, err := os.ReadFile(filepath.Join(dir, ScaleHTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	tags := imgTag.FindAllString(string(page), -1)
	if len(figs) == 0 || len(tags) != len(figs) {
		t.Fatalf("%d figures, %d <img> tags in scale.html", len(figs), len(tags))
	}
	for i, f := range figs {
		data, err := os.ReadFile(filepath.Join(dir, f.File))
		if err != nil {
			t.Errorf("figure %s: %v", f.File, err)
			continue
		}
		if !strings.Contains(string(md), "]("+f.File+")") {
			t.Errorf("scale.md does not link %s", f.File)
		}
		m := imgSrc.FindStringSubmatch(tags[i])
		if m == nil || m[1] != base64.StdEncoding.EncodeToString(data) {
			t.Errorf("scale.html's image %d is not %s", i, f.File)
		}
	}
	for _, bad := range []string{"http://", "https://", "<link", "<script", "url("} {
		if strings.Contains(string(page), bad) {
			t.Errorf("scale.html contains %q", bad)
		}
	}
}

func TestReadScaleRejectsOtherSchemas(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ScaleJSONFile)
	if err := os.WriteFile(path, []byte(`{"schemaVersion": "dsbench.report/v1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadScale(path); !errors.Is(err, ErrSchemaVersion) || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadScale of a report: %v, want ErrSchemaVersion naming %s", err, path)
	}
}

func TestFileSlug(t *testing.T) {
	for in, want := range map[string]string{
		"step:create":                  "step-create",
		"step:join 10% (ssd)":          "step-join-10-ssd",
		"Bench-Rollout":                "bench-rollout",
		"step:NoExecute on 25% of ssd": "step-noexecute-on-25-of-ssd",
		"::":                           "x",
		"step:é#2":                     "step-2",
	} {
		if got := fileSlug(in); got != want {
			t.Errorf("fileSlug(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every controller that ran gets its series, in the reports' order: the
// first scaling run dropped ours-direct from every table (a fixed list).
func TestAnalyzeScaleKeepsEveryController(t *testing.T) {
	var small, large []Run
	controllers := []string{ControllerFloor, ControllerOursDirect, ControllerOurs, ControllerUpstream}
	for _, c := range controllers {
		small = append(small, scaleRun("s", c, 0, 100, 2, 1))
		large = append(large, scaleRun("s", c, 0, 1000, 11, 5))
	}
	s, err := AnalyzeScale([]ScaleSource{{Path: "a/report.json", Report: scaleReport(small...)}, {Path: "b/report.json", Report: scaleReport(large...)}},
		time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC), DefaultScaleOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, se := range s.Series {
		if se.Metric == "step:create" {
			got = append(got, se.Controller)
		}
	}
	want := []string{ControllerUpstream, ControllerOurs, ControllerOursDirect, ControllerFloor}
	if !slices.Equal(got, want) {
		t.Errorf("step:create series for %q, want %q", got, want)
	}
	for _, c := range controllers {
		if se := findSeries(t, s, "s", c, "step:create"); se.Linear == nil && se.NoFit == "" {
			t.Errorf("%s: neither a fit nor a reason for none", c)
		}
	}
}

// A floor run at a pacing its search did not keep is no point of the floor's
// curve, and the notes say it was left out.
func TestAnalyzeScaleLeavesOutFloorTrials(t *testing.T) {
	var small, large []Run
	for rep, p := range []string{"32", "128", "128"} {
		run := scaleRun("s", ControllerFloor, rep, 100, 2, 1)
		run.ControllerArgs = []string{"--floor-inflight=" + p}
		if rep == 0 {
			run.Steps[0].Seconds = 50
		}
		small = append(small, run)
		large = append(large, scaleRun("s", ControllerFloor, rep, 1000, 11, 5))
	}
	s, err := AnalyzeScale([]ScaleSource{{Path: "a/report.json", Report: scaleReport(small...)}, {Path: "b/report.json", Report: scaleReport(large...)}},
		time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC), DefaultScaleOptions())
	if err != nil {
		t.Fatal(err)
	}
	create := findSeries(t, s, "s", ControllerFloor, "step:create")
	if p := create.Points[0]; p.Runs != 2 || p.Missing != 0 || !slices.Equal(p.Values, []float64{2, 2}) {
		t.Errorf("the floor at 100 nodes: %d runs, %d missing, values %v; want 2, 0, [2 2] (the trial at 32 left out)", p.Runs, p.Missing, p.Values)
	}
	if p := create.Points[1]; p.Runs != 3 {
		t.Errorf("the floor at 1000 nodes, one pacing recorded: %d runs, want 3", p.Runs)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "a/report.json: Left out of the floor's points") || !strings.Contains(s.Notes[0], "repetition 0 at 32 calls in flight (kept 128)") {
		t.Errorf("notes %q, want one naming the trial left out", s.Notes)
	}
}
