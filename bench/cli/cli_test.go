package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/dsbench/dsbench/reports"
)

func testEnv() (Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}, &out, &errOut
}

// Bad command lines fail before touching any cluster, with an error that
// names the flag or field at fault (each command's flags: flags_test.go).
func TestBadCommandLines(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // substrings of the error
	}{
		{"no command", nil, []string{"no command"}},
		{"unknown command", []string{"fly"}, []string{`unknown command "fly"`}},
		{"unknown flag", []string{"cluster", "up", "--nodez", "3"}, []string{"cluster up", "unknown flag: --nodez"}},
		{"unknown subcommand", []string{"cluster", "sideways"}, []string{`unknown subcommand "sideways"`}},
		{"bad duration", []string{"cluster", "up", "--timeout", "soon"}, []string{"--timeout", "soon"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Main(t.Context(), isolatedEnv(t), tt.args)
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("Main(%q) = %v, want a usage error", tt.args, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestUsageErrorsAreMarked(t *testing.T) {
	env, _, _ := testEnv()
	err := Main(t.Context(), env, []string{"cluster", "up", "--bogus"})
	if !errors.Is(err, ErrUsage) {
		t.Errorf("unknown flag: %v is not ErrUsage, so main would not exit 2", err)
	}
	env, out, _ := testEnv()
	if err := Main(t.Context(), env, []string{"help"}); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"cluster", "nodes"} {
		if !strings.Contains(out.String(), cmd) {
			t.Errorf("help does not list %q:\n%s", cmd, out)
		}
	}
	env, _, _ = testEnv()
	if err := Main(t.Context(), env, []string{"cluster", "up", "--help"}); !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("--help: got %v, want pflag.ErrHelp", err)
	}
}

func TestBuildPatch(t *testing.T) {
	p, err := buildPatch([]string{"disk=hdd", "old-"}, []string{"k=v:NoExecute"}, []string{"gone:NoSchedule"}, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if v := p.Labels["disk"]; v == nil || *v != "hdd" {
		t.Errorf("disk label: %v", v)
	}
	if v, ok := p.Labels["old"]; !ok || v != nil {
		t.Errorf("old label should be removed: %v %v", v, ok)
	}
	if len(p.SetTaints) != 1 || p.SetTaints[0].Effect != "NoExecute" || len(p.RemoveTaints) != 1 || p.RemoveTaints[0].Key != "gone" {
		t.Errorf("taints: %+v", p)
	}
	if p.Unschedulable == nil || !*p.Unschedulable {
		t.Errorf("cordon not set")
	}
}

// validate --nodes checks the scaled scenario too, and names the scale that
// failed.
func TestValidateAtOtherScales(t *testing.T) {
	env, out, _ := testEnv()
	if err := Main(t.Context(), env, []string{"validate", "--nodes", "100,5000", "node-churn"}); err != nil {
		t.Fatalf("validate node-churn at 100 and 5000 nodes: %v", err)
	}
	for _, want := range []string{"ok at 100 nodes", "ok at 5000 nodes"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	env, _, _ = testEnv()
	err := Main(t.Context(), env, []string{"validate", "--nodes", "1000000", "node-churn"})
	if err == nil || !strings.Contains(err.Error(), "at 1000000 nodes") {
		t.Errorf("validate at 1000000 nodes: got %v, want an error naming the scale", err)
	}
	env, _, _ = testEnv()
	if err := Main(t.Context(), env, []string{"validate", "--nodes", "0", "node-churn"}); !errors.Is(err, ErrUsage) {
		t.Errorf("validate --nodes 0: got %v, want a usage error", err)
	}
}

// report --write-baseline makes a baseline of a saved run: relative to
// upstream where the run measured it.
func TestReportWritesBaselineFromSavedRun(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "..", "reports", "testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, reports.ReportFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "baseline.json")
	env, out, _ := testEnv()
	if err := Main(t.Context(), env, []string{"report", "--write-baseline", path, "--tolerance", "1.4", dir}); err != nil {
		t.Fatalf("report --write-baseline: %v", err)
	}
	if !strings.Contains(out.String(), "baseline written to "+path) {
		t.Errorf("output does not say where the baseline went:\n%s", out)
	}
	b, err := reports.ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.Tolerance != 1.4 || len(b.Entries) == 0 {
		t.Fatalf("baseline: tolerance %g, %d entries", b.Tolerance, len(b.Entries))
	}
	for _, e := range b.Entries {
		if e.RelativeTo != reports.ControllerUpstream {
			t.Errorf("entry %s %s is not relative to upstream, though the run measured it", e.Scenario, e.Metric)
		}
	}
	env, _, _ = testEnv()
	if err := Main(t.Context(), env, []string{"report", "--write-baseline", path, "--tolerance", "0.9", dir}); !errors.Is(err, ErrUsage) {
		t.Errorf("--tolerance 0.9: got %v, want a usage error", err)
	}
}
