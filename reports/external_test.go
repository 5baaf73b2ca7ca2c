package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// externalReport is a report of the external controller alone, as
// dsbench run --controller external writes it: no binary, no settings, no
// API requests (nil) and no cost (zero).
func externalReport(seconds ...float64) *Report {
	r := &Report{SchemaVersion: SchemaVersion, GeneratedAt: t0, Params: Params{Scenarios: []string{"s"}, Nodes: 100,
		Controllers: []ControllerParams{{Name: ControllerExternal}}}}
	for i, v := range seconds {
		run := newRun("s", ControllerExternal, i, v)
		run.Resources, run.APIRequests = Resources{}, nil
		r.Runs = append(r.Runs, run)
	}
	return r
}

// Nothing measured of the process is no made-up zero: the run has no CPU,
// memory or request metrics, only its times and invariants.
func TestExternalRunMetrics(t *testing.T) {
	r := externalReport(10)
	var keys []string
	for _, m := range RunMetrics(&r.Runs[0]) {
		keys = append(keys, m.Metric.Key)
	}
	for _, absent := range []string{MetricRequests.Key, MetricCPU.Key, MetricRSS.Key} {
		for _, k := range keys {
			if k == absent {
				t.Errorf("metrics %v: want no %s for a controller the harness did not start", keys, absent)
			}
		}
	}
	if len(keys) == 0 || keys[0] != MetricConverge.Key {
		t.Errorf("metrics %v: want convergence first", keys)
	}
}

// An external report validates, renders every output without a panic, says
// plainly that the harness did not start the controller, and shows its
// numbers in a section of their own.
func TestRenderExternal(t *testing.T) {
	r := externalReport(20, 22, 21, 19, 20)
	if err := Validate(r); err != nil {
		t.Fatalf("an external report does not validate: %v", err)
	}
	dir := t.TempDir()
	if err := Render(dir, r, nil); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"controller external | " + ExternalParams, "## the external controller", ExternalNote, "external median [CI]", "external: yes"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	for _, unwanted := range []string{"| API requests |", "| controller CPU |", "| controller peak RSS |", "controller external | qps"} {
		if strings.Contains(string(md), unwanted) {
			t.Errorf("report.md has %q, which an external run does not measure", unwanted)
		}
	}
	for _, want := range []string{"not started by the harness", "the external controller"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	sum := Summary(r)
	if !strings.Contains(sum, "external") || !strings.Contains(sum, "20.00") {
		t.Errorf("summary lacks the external controller's median:\n%s", sum)
	}
}

// Without external runs nothing mentions it; the controllers sort upstream,
// ours, ours-direct, external, then the floor.
func TestExternalAbsentAndOrdered(t *testing.T) {
	r := newReport([]float64{20, 22, 21}, []float64{30, 31, 29})
	a := analyze(r, nil, DefaultOptions())
	if len(a.external.Rows) != 0 || strings.Contains(a.markdown(), "external") || strings.Contains(Summary(r), "external") {
		t.Error("a report without external runs mentions the external controller")
	}
	for i, c := range []string{ControllerFloor, ControllerExternal, ControllerOursDirect} {
		r.Runs = append(r.Runs, newRun("s", c, 0, float64(10+i)))
	}
	var got []string
	for _, g := range Groups(r) {
		got = append(got, g.Controller)
	}
	want := []string{ControllerUpstream, ControllerOurs, ControllerOursDirect, ControllerExternal, ControllerFloor}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("groups %v, want %v", got, want)
	}
}
