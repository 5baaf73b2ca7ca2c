package cli

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsbench/dsbench/reports"
)

func TestParseSizes(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{"100,500,1000,2000,5000", []int{100, 500, 1000, 2000, 5000}, ""},
		{"10, 20", []int{10, 20}, ""},
		{"7", []int{7}, ""},
		{"", nil, "want node counts"},
		{"100,,500", nil, `"" is not a whole number`},
		{"100,1e3", nil, `"1e3" is not a whole number`},
		{"0,100", nil, "0: node counts must be positive"},
		{"-5", nil, "-5: node counts must be positive"},
		{"500,100", nil, "100 after 500: want increasing"},
		{"100,100", nil, "100 after 100"},
		{"100,2000000", nil, "2000000: at most"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSizes(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("parseSizes(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("parseSizes(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestScaleFlags(t *testing.T) {
	fx := newFlagFixtures(t)
	checkFlagCases(t, []flagCase{
		{"decreasing sizes", args("scale", "--sizes", "1000,500"), []string{`--sizes "1000,500"`, "500 after 1000"}},
		{"zero size", args("scale", "--sizes", "0,100"), []string{`--sizes "0,100"`, "positive"}},
		{"not a number", args("scale", "--sizes", "100,lots"), []string{`--sizes "100,lots"`, `"lots"`}},
		{"empty sizes", args("scale", "--sizes", ""), []string{`--sizes ""`}},
		{"too many nodes", args("scale", "--sizes", "100,200000"), []string{"--sizes", "200000"}},
		// scale has --sizes instead; a baseline of one size gates no other.
		{"nodes", args("scale", "--nodes", "100"), []string{"unknown flag: --nodes"}},
		{"baseline", args("scale", "--baseline", fx.baseline), []string{"unknown flag: --baseline"}},
		{"unknown controller", args("scale", "--controller", "ours,best"), []string{"--controller", `"best"`}},
		{"negative repetitions", args("scale", "--repetitions", "-1"), []string{"--repetitions -1"}},
		{"out a file", args("scale", "--out", fx.file), []string{"--out", "is a file"}},
		{"floor pacing without the floor", args("scale", "--controller", "ours", "--floor-inflight", "8"), []string{"--floor-inflight with --controller ours"}},
		{"every problem at once", args("scale", "--sizes", "5,1", "--workers", "0"), []string{"--sizes", "--workers 0"}},
		{"scenario too small for a size", args("scale", "--sizes", "1,100", "node-churn"), []string{"--sizes 1", "node-churn"}},
	})
}

// Good flags get past every check to the first thing a run needs, our
// controller's binary, which the isolated cache lacks: no cluster is
// touched, and the scenarios were loaded and scaled to each size.
func TestScaleValidFlagsReachTheBinary(t *testing.T) {
	env := isolatedEnv(t)
	err := Main(t.Context(), env, []string{"scale", "--sizes", "10,20", "--controller", "ours", "--repetitions", "1", "--out", t.TempDir(), "bench-rollout"})
	if err == nil || errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "daemonset-controller") {
		t.Fatalf("scale: %v, want the missing controller binary", err)
	}
}

// copyScaleTestdata copies reports/testdata/scale (testdata/report.json
// remade at 100, 500 and 1000 nodes) into a new folder.
func copyScaleTestdata(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "..", "reports", "testdata", "scale")
	for _, n := range []string{"nodes-100", "nodes-500", "nodes-1000"} {
		data, err := os.ReadFile(filepath.Join(src, n, reports.ReportFile))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, n, reports.ReportFile), data)
	}
	return dir
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReportScale(t *testing.T) {
	dir := copyScaleTestdata(t)
	env, out, _ := testEnv()
	if err := Main(t.Context(), env, []string{"report", "scale", dir}); err != nil {
		t.Fatalf("report scale: %v", err)
	}
	if !strings.Contains(out.String(), "scaling report of 3 reports") {
		t.Errorf("output:\n%s", out)
	}
	s, err := reports.ReadScale(filepath.Join(dir, reports.ScaleJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, src := range s.Sources {
		paths = append(paths, src.Path)
	}
	// Named relative to the output folder, found in sorted order.
	if want := []string{"nodes-100/report.json", "nodes-1000/report.json", "nodes-500/report.json"}; !slices.Equal(paths, want) {
		t.Errorf("sources %v, want %v", paths, want)
	}
	for _, f := range []string{reports.ScaleMarkdownFile, reports.ScaleHTMLFile, "scale-rolling-update-step-create.png"} {
		if info, err := os.Stat(filepath.Join(dir, f)); err != nil || info.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	fitted := false
	for _, se := range s.Series {
		if se.Scenario == "rolling-update" && se.Controller == reports.ControllerOurs && se.Metric == "step:create" {
			fitted = se.Linear != nil && len(se.Points) == 3
		}
	}
	if !fitted {
		t.Error("no fit of ours' create step over the three sizes")
	}

	// Files given one by one, written elsewhere.
	elsewhere := t.TempDir()
	env, _, _ = testEnv()
	files := []string{filepath.Join(dir, "nodes-100", reports.ReportFile), filepath.Join(dir, "nodes-500", reports.ReportFile)}
	if err := Main(t.Context(), env, append([]string{"report", "scale", "--out", elsewhere}, files...)); err != nil {
		t.Fatalf("report scale --out: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, reports.ScaleMarkdownFile)); err != nil {
		t.Error(err)
	}
}

// Runs of one size made separately are merged as repetitions, and said so.
func TestReportScaleMergesRepetitions(t *testing.T) {
	dir := copyScaleTestdata(t)
	r, err := reports.Read(filepath.Join(dir, "nodes-500", reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Runs {
		r.Runs[i].Start = r.Runs[i].Start.Add(24 * time.Hour)
		r.Runs[i].End = r.Runs[i].End.Add(24 * time.Hour)
	}
	if err := reports.Write(filepath.Join(dir, "nodes-500-again"), r); err != nil {
		t.Fatal(err)
	}
	env, out, _ := testEnv()
	if err := Main(t.Context(), env, []string{"report", "scale", dir}); err != nil {
		t.Fatalf("report scale: %v", err)
	}
	if !strings.Contains(out.String(), "merged as repetitions (nodes-500-again/report.json, nodes-500/report.json)") {
		t.Errorf("no note of the merge:\n%s", out)
	}
	s, err := reports.ReadScale(filepath.Join(dir, reports.ScaleJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Runs {
		if c.Nodes == 500 && c.Scenario == "rolling-update" && c.Runs != 12 {
			t.Errorf("%s/%s at 500 nodes: %d runs, want 12", c.Scenario, c.Controller, c.Runs)
		}
	}
}

// A report.json that cannot be used is an error naming it.
func TestReportScaleBadInput(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(t *testing.T, dir string) (bad string)
		want  []string
	}{
		{"corrupted", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "nodes-2000", reports.ReportFile)
			writeFile(t, p, []byte(`{"schemaVersion": "dsbench.report/v1", "runs": [`))
			return p
		}, []string{"decoding JSON"}},
		{"another schema", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "nodes-2000", reports.ReportFile)
			writeFile(t, p, []byte(`{"schemaVersion": "dsbench.baseline/v1", "entries": []}`))
			return p
		}, []string{"unsupported schema version", "dsbench.baseline/v1"}},
		{"the same report twice", func(t *testing.T, dir string) string {
			data, err := os.ReadFile(filepath.Join(dir, "nodes-100", reports.ReportFile))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "copy", reports.ReportFile)
			writeFile(t, p, data)
			return "copy/report.json"
		}, []string{"nodes-100/report.json", "the same report given twice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyScaleTestdata(t)
			bad := tt.spoil(t, dir)
			env, _, _ := testEnv()
			err := Main(t.Context(), env, []string{"report", "scale", dir})
			if err == nil {
				t.Fatal("report scale succeeded")
			}
			for _, w := range append(tt.want, bad) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, reports.ScaleJSONFile)); err == nil {
				t.Error("scale.json written from bad input")
			}
		})
	}
}

func TestReportScaleFlags(t *testing.T) {
	fx := newFlagFixtures(t)
	report := filepath.Join("..", "..", "reports", "testdata", "report.json")
	checkFlagCases(t, []flagCase{
		{"nothing", args("report", "scale"), []string{"report scale", "want report.json files"}},
		{"two without --out", args("report", "scale", report, report), []string{"want --out"}},
		{"a file without --out", args("report", "scale", report), []string{"want --out"}},
		{"out a file", args("report", "scale", "--out", fx.file, report), []string{"--out", "is a file"}},
	})
	env, _, _ := testEnv()
	err := Main(t.Context(), env, []string{"report", "scale", "--out", fx.dir, fx.missing, fx.dir})
	if err == nil || !strings.Contains(err.Error(), "missing.json: no such file") || !strings.Contains(err.Error(), "no report.json in") {
		t.Errorf("a missing file and a folder without reports: %v", err)
	}
}
