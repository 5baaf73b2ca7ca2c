package cli

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsbench/dsbench/reports"
)

// A run of the external controller needs no binary of ours (the cache is
// empty), starts no cluster, skips the gate with one line that says so, and
// fails on its invariants: here a "cluster" that refuses every request, so
// the run fails, and the external controller's failed run is the verdict.
func TestRunExternal(t *testing.T) {
	var requests atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "refused by the test", http.StatusForbidden)
	}))
	defer api.Close()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+api.URL+`"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := isolatedEnv(t)
	var out strings.Builder
	env.Stdout = &out
	outBase := filepath.Join(dir, "out")
	err := Main(t.Context(), env, []string{"run", "--kubeconfig", kubeconfig, "--controller", "external", "--repetitions", "1",
		"--baseline", filepath.Join("..", "..", "reports", "testdata", "baseline.json"), "--out", outBase, "bench-rollout"})
	if err == nil || errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "invariants do not hold for the external controller") {
		t.Fatalf("dsbench run --controller external: %v, want the external controller's invariants to fail it", err)
	}
	if strings.Contains(err.Error(), "binary") {
		t.Errorf("error %v: the external controller needs no binary", err)
	}
	if n := strings.Count(out.String(), "the regression gate is not applied"); n != 1 {
		t.Errorf("stdout says %d times that the gate is not applied, want once:\n%s", n, out.String())
	}
	if requests.Load() == 0 {
		t.Error("the run never reached the cluster of --kubeconfig")
	}
	path, err := latestReport(outBase)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reports.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]reports.ControllerParams{{Name: reports.ControllerExternal}}, r.Params.Controllers); diff != "" {
		t.Errorf("controllers (-want +got):\n%s", diff)
	}
	if len(r.Runs) != 1 || r.Runs[0].Controller != reports.ControllerExternal || r.Runs[0].APIRequests != nil || r.Runs[0].Outcome != reports.OutcomeFailed {
		t.Errorf("runs %+v: want one failed run of the external controller, no API requests", r.Runs)
	}
	md, err := os.ReadFile(filepath.Join(filepath.Dir(path), reports.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), reports.ExternalParams) || strings.Contains(string(md), "Against the baseline") {
		t.Errorf("report.md does not say the harness did not start the controller, or shows a gate:\n%s", md)
	}
}
