package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dsbench/dsbench/reports"
)

// The short version of make bench-scale: bench-rollout (a create and a
// rolling update, the smallest library scenario with both steps the curves
// are about) at 10 and 20 nodes, once, ours alone. Each size leaves a
// report of its own; the scaling report puts the two side by side and fits
// the create step over both sizes.
func TestScaleCurves(t *testing.T) {
	args := clusterArgs(t)
	out := t.TempDir()
	cmd := append([]string{"scale", "--sizes", "10,20", "--controller", "ours", "--repetitions", "1", "--out", out}, args...)
	if _, err := runCLI(t, append(cmd, "bench-rollout")...); err != nil {
		t.Fatalf("scale: %v", err)
	}
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one folder in %s, got %v (%v)", out, entries, err)
	}
	dir := filepath.Join(out, entries[0].Name())
	for _, n := range []int{10, 20} {
		r, err := reports.Read(filepath.Join(dir, fmt.Sprintf("nodes-%d", n), reports.ReportFile))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Runs) != 1 || r.Runs[0].Nodes != n || !r.Runs[0].OK() || r.Params.Nodes != n {
			t.Errorf("report at %d nodes: params.nodes %d, runs %+v", n, r.Params.Nodes, r.Runs)
		}
	}
	for _, f := range []string{reports.ScaleJSONFile, reports.ScaleMarkdownFile, reports.ScaleHTMLFile, "scale-bench-rollout-step-create.png"} {
		if info, err := os.Stat(filepath.Join(dir, f)); err != nil || info.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	s, err := reports.ReadScale(filepath.Join(dir, reports.ScaleJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, metric := range []string{"step:create", "step:update", "cpu", "rss", "requests"} {
		var se *reports.ScaleSeries
		for i := range s.Series {
			if s.Series[i].Scenario == "bench-rollout" && s.Series[i].Controller == reports.ControllerOurs && s.Series[i].Metric == metric {
				se = &s.Series[i]
			}
		}
		if se == nil {
			t.Errorf("no series of ours' %s", metric)
			continue
		}
		if got := se.MeasuredNodes(); !slices.Equal(got, []int{10, 20}) || se.Linear == nil || len(se.Predictions) != 3 {
			t.Errorf("%s: measured at %v, linear fit %+v, %d predictions; want 10 and 20 nodes, a fit, 3 predictions", metric, got, se.Linear, len(se.Predictions))
		}
	}
	// The same scaling report again from the saved runs alone.
	again := t.TempDir()
	if _, err := runCLI(t, "report", "scale", "--out", again, dir); err != nil {
		t.Fatalf("report scale: %v", err)
	}
	s2, err := reports.ReadScale(filepath.Join(again, reports.ScaleJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(s2.Series) != len(s.Series) {
		t.Errorf("report scale made %d series of the saved runs, scale made %d", len(s2.Series), len(s.Series))
	}
}
