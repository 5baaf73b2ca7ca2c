package reports_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// benchstatBinary is the benchstat `make tools` builds, or one on PATH.
func benchstatBinary(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("DSBENCH_CACHE"); dir != "" {
		if p := filepath.Join(dir, "bin", "benchstat"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("benchstat"); err == nil {
		return p
	}
	if os.Getenv("DSBENCH_REQUIRE_CLUSTER") != "" {
		t.Fatal("benchstat not found in $DSBENCH_CACHE/bin or on PATH; `make tools` builds it")
	}
	t.Skip("benchstat not found; `make tools` builds it")
	return ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// bench.txt is read by benchstat as it is: both ways the file's header
// suggests, with no parse complaint and every unit in the table.
func TestBenchstatReadsBenchText(t *testing.T) {
	bin := benchstatBinary(t)
	golden := filepath.Join("testdata", "bench.txt.golden")
	for _, args := range [][]string{
		{golden, golden},                // old against new
		{"-col", "/controller", golden}, // upstream against ours in one run
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("benchstat %v: %v\n%s", args, err, stderr.String())
		}
		if stderr.Len() > 0 {
			t.Errorf("benchstat %v complained:\n%s", args, stderr.String())
		}
		out := stdout.String()
		for _, want := range []string{"s/converge", "s/rollout", "cpu-s", "rolling-update", "node-churn"} {
			if !strings.Contains(out, want) {
				t.Errorf("benchstat %v output lacks %q:\n%s", args, want, out)
			}
		}
		if args[0] == "-col" && (!strings.Contains(out, "upstream") || !strings.Contains(out, "ours")) {
			t.Errorf("benchstat -col /controller did not make a column per controller:\n%s", out)
		}
	}
}
