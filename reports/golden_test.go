package reports

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// readTestdata loads the hand-made report and baseline shared by the golden,
// HTML and browser tests.
func readTestdata(t *testing.T) (*Report, *Baseline) {
	t.Helper()
	r, err := Read(filepath.Join("testdata", "report.json"))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	b, err := ReadBaseline(filepath.Join("testdata", "baseline.json"))
	if err != nil {
		t.Fatalf("ReadBaseline: %v", err)
	}
	return r, b
}

// checkGolden compares got with testdata/<name>; with -update it rewrites the
// golden, otherwise on a mismatch it writes testdata/<name>.got for inspection.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("updating golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		if err := os.WriteFile(path+".got", got, 0o644); err != nil {
			t.Errorf("writing %s.got: %v", path, err)
		}
		t.Errorf("%s mismatch (-want +got), output written to %s.got; rerun with -update if intended:\n%s", name, path, diff)
	}
}

func TestGoldenOutputs(t *testing.T) {
	r, b := readTestdata(t)
	dir := t.TempDir()
	if err := Render(dir, r, b); err != nil {
		t.Fatalf("Render: %v", err)
	}
	for _, tc := range []struct{ out, golden string }{
		{MarkdownFile, "report.md.golden"},
		{BenchFile, "bench.txt.golden"},
	} {
		t.Run(tc.out, func(t *testing.T) {
			got, err := os.ReadFile(filepath.Join(dir, tc.out))
			if err != nil {
				t.Fatalf("reading output: %v", err)
			}
			checkGolden(t, tc.golden, got)
		})
	}
	t.Run("summary", func(t *testing.T) {
		checkGolden(t, "summary.txt.golden", []byte(Summary(r)))
	})
	t.Run("compare", func(t *testing.T) {
		checkGolden(t, "compare.md.golden", []byte(Compare(r, slowedOurs(r, 1.5)).Markdown()))
	})
	t.Run("report.json round trip", func(t *testing.T) {
		back, err := Read(filepath.Join(dir, ReportFile))
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if diff := cmp.Diff(r, back); diff != "" {
			t.Errorf("report.json does not round-trip (-want +got):\n%s", diff)
		}
	})
}

// slowedOurs returns a deep copy of r whose runs of ours took factor times as
// long (steps, rollouts, per-node latencies, CPU).
func slowedOurs(r *Report, factor float64) *Report {
	var cp Report
	data, err := marshalJSON(r)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, &cp); err != nil {
		panic(err)
	}
	cp.Versions.GitCommit = "fedcba9876543210fedcba9876543210fedcba98"
	for i := range cp.Runs {
		run := &cp.Runs[i]
		if run.Controller != ControllerOurs {
			continue
		}
		for j := range run.Steps {
			run.Steps[j].Seconds *= factor
		}
		for j := range run.Rollouts {
			run.Rollouts[j].Seconds *= factor
			for k := range run.Rollouts[j].Nodes {
				run.Rollouts[j].Nodes[k].Seconds *= factor
			}
		}
		for j := range run.NodeJoins {
			run.NodeJoins[j].Seconds *= factor
		}
		run.Resources.CPUSeconds *= factor
	}
	return &cp
}

// The parameters show what our controller's environment had on top of the
// harness's (--controller-env), and a report.json keeps it.
func TestParamsShowControllerEnv(t *testing.T) {
	r, _ := readTestdata(t)
	r.Params.Controllers[0].Env = []string{"GOMEMLIMIT=100MiB", "GOGC=50"}
	a := &analysis{r: r, groups: Groups(r), findings: CheckInvariants(r)}
	var row string
	for _, cells := range a.paramsTable().Rows {
		if cells[0] == "controller "+r.Params.Controllers[0].Name {
			row = cells[1]
		}
	}
	if !strings.HasSuffix(row, ", env GOMEMLIMIT=100MiB GOGC=50") {
		t.Errorf("controller row %q does not end with its environment", row)
	}
	dir := t.TempDir()
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	back, err := Read(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Params.Controllers[0].Env; !slices.Equal(got, r.Params.Controllers[0].Env) {
		t.Errorf("read back env %q, want %q", got, r.Params.Controllers[0].Env)
	}
}
