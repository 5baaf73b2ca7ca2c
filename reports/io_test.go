package reports

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWriteReadRoundTrip(t *testing.T) {
	r := newReport([]float64{1, 2, 3}, []float64{4, 5, 6})
	r.SchemaVersion = "" // Write fills in the current version
	dir := filepath.Join(t.TempDir(), "out", "20260102T000000Z")
	if err := Write(dir, r); err != nil {
		t.Fatalf("Write: %v", err)
	}
	got, err := Read(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	want := *r
	want.SchemaVersion = SchemaVersion
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if r.SchemaVersion != "" {
		t.Errorf("Write modified its argument")
	}

	// Overwriting replaces the file and leaves no temporary files behind.
	r.Params.Seed = 7
	if err := Write(dir, r); err != nil {
		t.Fatalf("second Write: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != ReportFile {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only %s", names, ReportFile)
	}
	if got, _ := Read(filepath.Join(dir, ReportFile)); got == nil || got.Params.Seed != 7 {
		t.Errorf("second Write did not replace the report")
	}
}

func TestReadRejects(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := Read(write("v2.json", `{"schemaVersion": "dsbench.report/v2", "runs": []}`)); !errors.Is(err, ErrSchemaVersion) {
		t.Errorf("Read(v2) error = %v, want ErrSchemaVersion", err)
	}
	if _, err := Read(write("garbage.json", `{`)); err == nil || !strings.Contains(err.Error(), "decoding JSON") {
		t.Errorf("Read(garbage) error = %v, want a decoding error", err)
	}
	if _, err := Read(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read(missing) error = %v, want ErrNotExist", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(r *Report)
		want   string // substring of the error; "" = valid
	}{
		{name: "valid", mutate: func(*Report) {}},
		{name: "ours-direct", mutate: func(r *Report) { r.Runs[0].Controller = ControllerOursDirect }},
		{name: "the floor", mutate: func(r *Report) { r.Runs[0].Controller = ControllerFloor }},
		{name: "external", mutate: func(r *Report) { r.Runs[0].Controller = ControllerExternal }},
		// A controller the harness did not start: no API requests, no cost.
		{name: "external, nothing measured of its process", mutate: func(r *Report) {
			r.Runs[0].Controller, r.Runs[0].APIRequests, r.Runs[0].Resources = ControllerExternal, nil, Resources{}
		}},
		{name: "bad controller", mutate: func(r *Report) { r.Runs[0].Controller = "theirs" }, want: `controller "theirs" is none of "ours", "ours-direct", "upstream", "floor" and "external"`},
		{name: "direct is no controller", mutate: func(r *Report) { r.Runs[0].Controller = "direct" }, want: `controller "direct" is none of`},
		{name: "bad outcome", mutate: func(r *Report) { r.Runs[0].Outcome = "maybe" }, want: `outcome "maybe"`},
		{name: "failed without error", mutate: func(r *Report) { r.Runs[0].Outcome = OutcomeFailed }, want: "outcome failed without error"},
		{name: "NaN seconds", mutate: func(r *Report) { r.Runs[0].Steps[0].Seconds = math.NaN() }, want: "step create: seconds NaN"},
		{name: "negative latency", mutate: func(r *Report) { r.Runs[0].NodeJoins = []NodeLatency{{Node: "n", Seconds: -1}} }, want: "node join n"},
		{name: "negative joins ended", mutate: func(r *Report) { r.Runs[0].NodeJoinsEnded = -1 }, want: "negative nodeJoinsEnded -1"},
		{name: "unmeasured join of no node", mutate: func(r *Report) { r.Runs[0].NodeJoinsUnmeasured = []UnmeasuredJoin{{Eligible: true}} }, want: "an unmeasured node join without a node"},
		{name: "coverage > 1", mutate: func(r *Report) { r.Runs[0].Coverage.ObservedFraction = 1.5 }, want: "observedFraction 1.5"},
		{name: "cluster restart", mutate: func(r *Report) { r.Runs[0].ClusterRestarts = []ClusterRestart{{Component: "kube-scheduler"}} }},
		{name: "cluster restart of nothing", mutate: func(r *Report) { r.Runs[0].ClusterRestarts = []ClusterRestart{{}} }, want: "a restart without a component"},
		{name: "schema", mutate: func(r *Report) { r.SchemaVersion = "x" }, want: "unsupported schema version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newReport([]float64{1}, nil)
			tc.mutate(r)
			err := Validate(r)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate error = %v, want it to contain %q", err, tc.want)
			}
			if tc.want != "" {
				if err := Write(t.TempDir(), r); err == nil {
					t.Errorf("Write accepted an invalid report")
				}
			}
		})
	}
}

func TestOutDir(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	if got, want := OutDir("reports/out", now), filepath.Join("reports", "out", "20260102T020405Z"); got != want {
		t.Errorf("OutDir = %q, want %q", got, want)
	}
}
