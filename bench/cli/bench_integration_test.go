package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/dsbench/dsbench/bench"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/kwok/kwoktest"
	"github.com/dsbench/dsbench/reports"
)

const testCluster = "cli-pkg-test"

func TestMain(m *testing.M) { kwoktest.Main(m, testCluster, nil) }

// clusterArgs point a command at the package's shared cluster.
func clusterArgs(t *testing.T) []string {
	t.Helper()
	kwoktest.Cluster(t)
	conf := kwoktest.Config(testCluster)
	ours := filepath.Join(kwok.CacheDir(), "daemonset-controller")
	if _, err := os.Stat(ours); err != nil {
		t.Fatalf("%s: %v (run `make build`)", ours, err)
	}
	return []string{"--name", testCluster, "--workdir", conf.Workdir, "--bin-dir", conf.Binaries.Dir, "--controller-binary", ours}
}

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errOut, Getenv: os.Getenv}
	err := Main(t.Context(), env, args)
	t.Logf("dsbench %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out.String(), errOut.String())
	return out.String(), err
}

func onlyReport(t *testing.T, base string) (string, *reports.Report) {
	t.Helper()
	entries, err := os.ReadDir(base)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one report folder in %s, got %v (%v)", base, entries, err)
	}
	dir := filepath.Join(base, entries[0].Name())
	r, err := reports.Read(filepath.Join(dir, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	return dir, r
}

// The CI smoke bench: one scenario, 100 nodes, 3 repetitions of each
// controller, interleaved; all four outputs rendered and the invariants hold
// for our controller.
func TestSmokeBench(t *testing.T) {
	args := clusterArgs(t)
	out := t.TempDir()
	if _, err := runCLI(t, append([]string{"bench", "--smoke", "--out", out, "--baseline", ""}, args...)...); err != nil {
		t.Fatalf("bench --smoke: %v", err)
	}
	dir, r := onlyReport(t, out)
	for _, f := range []string{reports.ReportFile, reports.MarkdownFile, reports.HTMLFile, reports.BenchFile} {
		if info, err := os.Stat(filepath.Join(dir, f)); err != nil || info.Size() == 0 {
			t.Errorf("output %s missing or empty: %v", f, err)
		}
	}
	if len(r.Runs) != 6 {
		t.Fatalf("want 6 runs (3 repetitions x 2 controllers), got %d", len(r.Runs))
	}
	// Interleaved in a drawn order: each repetition plays both controllers
	// in turn, and the second of each pair of repetitions reverses the
	// first's order (bench's TestRunOrderShuffled checks the drawing).
	if r.Params.OrderSeed == 0 {
		t.Errorf("the report records no order seed")
	}
	for i, run := range r.Runs {
		rep, k := i/2, i%2
		if run.Repetition != rep {
			t.Errorf("run %d is %s, want repetition %d", i, run.ID(), rep)
		}
		if k == 1 && run.Controller == r.Runs[i-1].Controller {
			t.Errorf("runs %d and %d are both %s: a repetition plays each controller once", i-1, i, run.Controller)
		}
		if rep%2 == 1 {
			if prev := r.Runs[2*(rep-1)+1-k]; run.Controller != prev.Controller {
				t.Errorf("run %d is %s, want %s: repetition %d reverses %d's order", i, run.ID(), prev.Controller, rep, rep-1)
			}
		}
		if !run.OK() {
			t.Errorf("run %s failed: %s", run.ID(), run.Error)
		}
		if run.Nodes != 100 {
			t.Errorf("run %s has %d nodes, want 100", run.ID(), run.Nodes)
		}
		if len(run.Rollouts) == 0 || len(run.Timelines) == 0 || len(run.APIRequests) == 0 || run.Resources.CPUSeconds <= 0 {
			t.Errorf("run %s lacks measurements: %d rollouts, %d timelines, %v requests, %.2f cpu-s",
				run.ID(), len(run.Rollouts), len(run.Timelines), run.APIRequests, run.Resources.CPUSeconds)
		}
	}
	if !reports.Holds(reports.CheckInvariants(r), reports.ControllerOurs) {
		t.Errorf("invariants do not hold for our controller:\n%v", reports.CheckInvariants(r))
	}
	// What it takes to reproduce the run is in report.json.
	if p := r.Params; p.Nodes != 100 || p.Repetitions != 3 || len(p.PerScenario) != 1 || p.PerScenario[0].Seed == 0 || p.Kwok == nil {
		t.Errorf("params %+v: want nodes 100, repetitions 3, the scenario's seed and kwok's setup", p)
	}
	for _, c := range r.Params.Controllers {
		if len(c.Args) == 0 || len(c.BinarySHA256) != 64 {
			t.Errorf("controller %s: args %v, sha256 %q; want both", c.Name, c.Args, c.BinarySHA256)
		}
	}
	for _, run := range r.Runs {
		if h := run.Harness; h == nil || h.Events == 0 || h.CPUSeconds <= 0 {
			t.Errorf("%s: harness figures %+v, want events and CPU", run.ID(), h)
		}
		// kube-apiserver's closed watches, read from its /metrics at the run's
		// start and end (a count, 0 or more).
		var closed []string
		for _, e := range run.Extra {
			if (e.Name == bench.MetricPodWatchesClosed || e.Name == bench.MetricNodeWatchesClosed) && e.Value >= 0 {
				closed = append(closed, e.Name)
			}
		}
		if len(closed) != 2 {
			t.Errorf("%s: closed-watch metrics %v, want %s and %s", run.ID(), closed, bench.MetricPodWatchesClosed, bench.MetricNodeWatchesClosed)
		}
	}
	bench, err := os.ReadFile(filepath.Join(dir, reports.BenchFile))
	if err != nil || !strings.Contains(string(bench), "BenchmarkScenario/bench-rollout/") {
		t.Errorf("bench.txt: %v\n%s", err, bench)
	}
	// `report` re-renders everything from report.json alone.
	again := t.TempDir()
	if _, err := runCLI(t, "report", "--out", again, dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{reports.MarkdownFile, reports.BenchFile} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(again, f))
		if !bytes.Equal(a, b) {
			t.Errorf("re-rendered %s differs from the original", f)
		}
	}
}

// ours-direct beside ours on a small rollout: both runs succeed and hold
// every invariant, ours-direct's command line and its log show direct
// binding, and report.md compares the two.
func TestOursDirectSmoke(t *testing.T) {
	args := clusterArgs(t)
	out := t.TempDir()
	cmd := append([]string{"run", "--out", out, "--nodes", "30", "--repetitions", "1", "--controller", "ours,ours-direct", "--warmup", "on", "bench-rollout"}, args...)
	if _, err := runCLI(t, cmd...); err != nil {
		t.Fatalf("run: %v", err)
	}
	dir, r := onlyReport(t, out)
	if len(r.Runs) != 2 {
		t.Fatalf("%d runs, want ours and ours-direct once each", len(r.Runs))
	}
	// The warm-up: ours once, before the others, kept apart with its log.
	if len(r.Warmups) != 1 || r.Warmups[0].Controller != reports.ControllerOurs || !r.Warmups[0].OK() || !r.Warmups[0].End.Before(r.Runs[0].Start) {
		t.Errorf("warmups = %+v, want one successful run of ours before the measured ones", r.Warmups)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "warmup", "bench-rollout-ours-0.log")); err != nil {
		t.Errorf("warm-up log: %v", err)
	}
	for _, run := range r.Runs {
		if !run.OK() {
			t.Errorf("%s failed: %s", run.ID(), run.Error)
		}
	}
	findings := reports.CheckInvariants(r)
	for _, c := range []string{reports.ControllerOurs, reports.ControllerOursDirect} {
		if !reports.Holds(findings, c) {
			t.Errorf("invariants do not hold for %s:\n%v", c, findings)
		}
	}
	for _, c := range r.Params.Controllers {
		if direct := slices.Contains(c.Args, "--bind-mode=direct"); direct != (c.Name == reports.ControllerOursDirect) {
			t.Errorf("controller %s: args %v", c.Name, c.Args)
		}
	}
	log, err := os.ReadFile(filepath.Join(dir, "logs", "bench-rollout-ours-direct-0.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(strings.Split(string(log), "\n"), func(l string) bool {
		return strings.Contains(l, "Starting DaemonSet controller") && strings.Contains(l, `bindMode="direct"`)
	}) {
		t.Errorf("ours-direct's log does not show it started with direct binding")
	}
	md, err := os.ReadFile(filepath.Join(dir, reports.MarkdownFile))
	if err != nil || !strings.Contains(string(md), "## ours-direct vs ours") {
		t.Errorf("report.md has no ours-direct section (%v)", err)
	}
}

// A deliberately slowed controller fails the gate against a baseline of the
// normal one, and the normal one passes it.
func TestGateCatchesSlowController(t *testing.T) {
	args := clusterArgs(t)
	common := append([]string{"--scenarios", writeGateProbe(t), "--nodes", "30", "--repetitions", "6", "--controller", "ours"}, args...)
	base := t.TempDir()
	baseline := filepath.Join(t.TempDir(), "baseline.json")
	if _, err := runCLI(t, append([]string{"bench", "--out", base, "--write-baseline", baseline}, common...)...); err != nil {
		t.Fatalf("writing the baseline: %v", err)
	}
	normal := t.TempDir()
	if _, err := runCLI(t, append([]string{"bench", "--out", normal, "--baseline", baseline}, common...)...); err != nil {
		t.Errorf("the normal controller failed the gate: %v", err)
	}
	slow := t.TempDir()
	_, err := runCLI(t, append([]string{"bench", "--out", slow, "--baseline", baseline, "--sync-delay", "1500ms"}, common...)...)
	if err == nil || !strings.Contains(err.Error(), "gate failed") {
		t.Errorf("a controller that sleeps 1.5 s per sync passed the gate: %v", err)
	}
}

// A repair's time splits into the cluster's shares and the controller's: a
// controller that sleeps in every sync shows it in "gone → new pod", not in
// kwok's finalizing, and every pod the steps deleted is accounted for, in
// its own step. With 3 s of sleep in every sync the median share was
// 1.78–1.90 s in five runs, against 0.045–0.060 s without; kwok's finalizing
// stayed at 0.05–0.11 s.
func TestRepairSplitsOutTheControllerShare(t *testing.T) {
	args := clusterArgs(t)
	// shares returns the medians of the 50 % repair's controller share and
	// kwok's finalizing.
	shares := func(extra ...string) (controller, finalizing float64) {
		t.Helper()
		out := t.TempDir()
		cmd := append([]string{"run", "--out", out, "--nodes", "30", "--repetitions", "1", "--controller", "ours-direct", "--warmup", "off"}, extra...)
		if _, err := runCLI(t, append(append(cmd, args...), "bench-repair")...); err != nil {
			t.Fatalf("run %v: %v", extra, err)
		}
		_, r := onlyReport(t, out)
		if len(r.Runs) != 1 || !r.Runs[0].OK() {
			t.Fatalf("runs %+v, want one that succeeded", r.Runs)
		}
		run := &r.Runs[0]
		perStep := map[string]int{}
		var deleting []float64
		for _, rep := range run.Repairs {
			perStep[rep.Step]++
			if rep.Deleting < 0 || rep.Recreating < 0 || rep.Starting < 0 {
				t.Errorf("repair %+v has a negative part", rep)
			}
			if rep.Step == "repair 50%" {
				deleting = append(deleting, rep.Deleting)
			}
		}
		// 10 % and then 50 % of 30 nodes.
		if want := map[string]int{"repair 10%": 3, "repair 50%": 15}; !maps.Equal(perStep, want) {
			t.Fatalf("repairs per step %v, want %v", perStep, want)
		}
		for _, mv := range reports.RunMetrics(run) {
			if mv.Metric.Key == "step:repair 50% (gone to new pod, median)" {
				return mv.Value, reports.Median(deleting)
			}
		}
		t.Fatalf("no controller share of the 50 %% repair among the metrics")
		return 0, 0
	}
	normal, normalFinalizing := shares()
	slow, slowFinalizing := shares("--sync-delay", "3s")
	t.Logf("50 %% repair, medians: gone → new pod %.3f s, with 3 s of sleep per sync %.3f s; terminating → gone %.3f and %.3f s",
		normal, slow, normalFinalizing, slowFinalizing)
	if slow < normal+1 {
		t.Errorf("the controller's share of the repair is %.3f s with 3 s of sleep per sync and %.3f s without: the sleep does not show", slow, normal)
	}
	if slowFinalizing > normalFinalizing+0.5 {
		t.Errorf("kwok's finalizing took %.3f s with the controller sleeping and %.3f s without: the controller's time leaks into the cluster's share", slowFinalizing, normalFinalizing)
	}
}

// writeGateProbe is a small scenario whose convergence depends on the
// controller's sync latency: a create and two waves of new nodes.
func writeGateProbe(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gate-probe.yaml")
	data := `apiVersion: dsbench.dev/v1alpha1
kind: Scenario
metadata:
  name: gate-probe
seed: 1
cluster:
  pools:
  - name: workers
    count: 30
workloads:
- inline:
    apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: probe, namespace: gate}
    spec:
      selector: {matchLabels: {app: probe}}
      template:
        metadata: {labels: {app: probe}}
        spec:
          containers: [{name: c, image: example.com/probe:v1}]
steps:
- create: {}
- waitConverged: {timeout: 2m}
- update: {daemonSet: probe, image: example.com/probe:v2}
- waitConverged: {timeout: 3m}
`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The fast subset of make mutants: five broken variants, each caught on a
// real KWOK cluster by the violation kind that names its bug, nothing before
// its first wrong action. (create-on-noschedule is left to make mutants: at
// 50 nodes its creates can reach the API after the not-ready taint is
// lifted, and are then rightly no violation.)
func TestMutantsCaught(t *testing.T) {
	args := clusterArgs(t)
	bin := filepath.Join(t.TempDir(), "daemonset-controller-mutants")
	build := exec.CommandContext(t.Context(), "go", "build", "-tags", "mutants", "-o", bin, "../../cmd/daemonset-controller")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the mutants variant: %v\n%s", err, out)
	}
	out := t.TempDir()
	// The last --controller-binary wins over clusterArgs' one.
	cmd := append(append([]string{"mutants"}, args...), "--controller-binary", bin, "--out", out, "--nodes", "50", "--correct=false",
		"--mutants", "surge-all,churn-healthy,exceed-max-unavailable,hot-loop-on-error,trust-write-timeouts",
		"--scenarios", "rolling-max-surge,node-churn,rolling-max-unavailable,chaos-reject-creates,chaos-write-timeouts")
	_, err := runCLI(t, cmd...)
	if err != nil {
		t.Fatalf("mutants: %v", err)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 1 {
		t.Fatalf("want one table folder in %s, got %v", out, entries)
	}
	data, err := os.ReadFile(filepath.Join(out, entries[0].Name(), "mutants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cells []mutantCell
	if err := json.Unmarshal(data, &cells); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"surge-all": "Oversurge", "churn-healthy": "UnrequestedDisruption", "exceed-max-unavailable": "Overunavailable", "hot-loop-on-error": "HotLoop",
		"trust-write-timeouts": "DuplicatePods"}
	got := map[string][]string{}
	for _, c := range cells {
		got[c.Variant] = append(got[c.Variant], c.Kind)
		if c.Caught && !c.Faulted {
			t.Errorf("%s on %s caught by %s before it acted wrongly at all", c.Variant, c.Scenario, c.Kind)
		}
		if len(c.Spurious) > 0 {
			t.Errorf("%s on %s: %v before any fault", c.Variant, c.Scenario, c.Spurious)
		}
	}
	for v, kind := range want {
		if !slices.Contains(got[v], kind) {
			t.Errorf("%s: caught by %v, want %s", v, got[v], kind)
		}
	}
}

// The short version of make bench-chaos: each fault scenario once at 30
// nodes against our controller. Every fault is survived: injected as
// written, the DaemonSets converged afterwards, no unexpected violation
// meanwhile, and while creates were refused the controller stayed under the
// step's bound on API calls a minute. The slow API delayed the controller's
// writes at the proxy; the conflicting writers' last template stayed; every
// pod write answered Timeout landed later, and none was made twice.
func TestChaosFaultsSurvived(t *testing.T) {
	args := clusterArgs(t)
	out := t.TempDir()
	cmd := append([]string{"run", "--out", out, "--nodes", "30", "--repetitions", "1", "--controller", "ours"}, args...)
	chaos := []string{"chaos-kill-storm", "chaos-reject-creates", "chaos-apiserver-restart", "chaos-slow-api", "chaos-conflicting-writers", "chaos-write-timeouts"}
	if _, err := runCLI(t, append(cmd, chaos...)...); err != nil {
		t.Fatalf("run: %v", err)
	}
	dir, r := onlyReport(t, out)
	// conflictingWriters counts its template writes: at 0, 3, ..., 18 s of 20 s.
	want := map[string][]int{"chaos-kill-storm": {20}, "chaos-reject-creates": {1, 1}, "chaos-apiserver-restart": {1},
		"chaos-slow-api": {1}, "chaos-conflicting-writers": {7}}
	for _, run := range r.Runs {
		if !run.OK() {
			t.Errorf("%s failed: %s", run.ID(), run.Error)
		}
		var injected []int
		for _, f := range run.Faults {
			injected = append(injected, f.Injected)
			if !f.Survived() {
				t.Errorf("%s: fault %q not survived: %+v", run.ID(), f.Step, f)
			}
			if f.APIRequests <= 0 {
				t.Errorf("%s: fault %q: %d API calls, want the controller's count", run.ID(), f.Step, f.APIRequests)
			}
			if f.MaxCallsPerMinute > 0 && f.CallsPerMinute > f.MaxCallsPerMinute {
				t.Errorf("%s: fault %q: %.0f calls a minute, over its bound %.0f", run.ID(), f.Step, f.CallsPerMinute, f.MaxCallsPerMinute)
			}
			if f.StatusError != "" {
				t.Errorf("%s: fault %q: status while refused: %s", run.ID(), f.Step, f.StatusError)
			}
			switch f.Kind {
			case "slowAPI":
				if f.WriteLatencySeconds != 0.2 || f.ReadLatencySeconds != 0 || f.DelayedRequests <= 0 {
					t.Errorf("%s: fault %q: latency %v s (reads %v s), %d requests delayed; want 0.2 s on writes and some delayed",
						run.ID(), f.Step, f.WriteLatencySeconds, f.ReadLatencySeconds, f.DelayedRequests)
				}
			case "writeTimeouts":
				// How many writes it times out depends on the controller's
				// pace; every one must land (the run is not cancelled).
				if f.Injected <= 0 || f.LandedWrites != int64(f.Injected) || f.LandFailures != 0 || f.LandAfterSeconds != 2 {
					t.Errorf("%s: fault %q: %d writes timed out, %d landed, %d refused then (landAfter %v s); want some, all landed",
						run.ID(), f.Step, f.Injected, f.LandedWrites, f.LandFailures, f.LandAfterSeconds)
				}
			case "conflictingWriters":
				// Status writes every 500 ms after the first template write, within 20 s.
				if f.LostUpdate != "" || f.StatusWrites != 39 || f.LastGeneration <= 0 || f.LastValue == "" {
					t.Errorf("%s: fault %q: lost update %q, %d status writes (want 39), last %q at generation %d",
						run.ID(), f.Step, f.LostUpdate, f.StatusWrites, f.LastValue, f.LastGeneration)
				}
			}
		}
		// chaos-write-timeouts' count depends on the controller's pace: one
		// fault, checked above.
		if w, ok := want[run.Scenario]; ok && !slices.Equal(injected, w) || !ok && len(injected) != 1 {
			t.Errorf("%s: injected %v, want %v", run.ID(), injected, want[run.Scenario])
		}
		for _, v := range run.Violations {
			if !v.Expected {
				t.Errorf("%s: unexpected %s: %s", run.ID(), v.Kind, v.Detail)
			}
		}
	}
	if len(r.Runs) != len(chaos) {
		t.Errorf("%d runs, want %d", len(r.Runs), len(chaos))
	}
	// Only the controllers of the proxy's faults went through it.
	for _, p := range r.Params.PerScenario {
		if p.APIProxy != (p.Name == "chaos-slow-api" || p.Name == "chaos-write-timeouts") {
			t.Errorf("scenario %s: apiProxy %v", p.Name, p.APIProxy)
		}
	}
	// The restart shows in the harness's own figures: its watches relisted.
	for _, run := range r.Runs {
		if run.Scenario == "chaos-apiserver-restart" && (run.Harness == nil || run.Harness.Relists == 0) {
			t.Errorf("%s: harness %+v, want the watch gap of the restart counted", run.ID(), run.Harness)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, reports.MarkdownFile))
	if err != nil || !strings.Contains(string(md), "## Faults") {
		t.Errorf("report.md has no Faults section (%v)", err)
	}
}

// A component of the cluster that exits mid-run is the cluster's fault, not
// the controller's. kube-scheduler, killed once the scenario's DaemonSet
// exists, leaves our controller's pods Pending until the harness starts it
// again (it looks every second); the run then converges and holds every
// invariant, records the restart, and leaves the statistics with a warning.
func TestClusterComponentRestartedMidRun(t *testing.T) {
	args := clusterArgs(t)
	cluster, _, client := kwoktest.Cluster(t)
	ctx := t.Context()
	schedulerPID := func() (int, bool) {
		for _, p := range cluster.Status(ctx).Processes {
			if p.Component == "kube-scheduler" {
				return p.PID, p.Alive
			}
		}
		return 0, false
	}
	before, alive := schedulerPID()
	if !alive {
		t.Fatalf("kube-scheduler (pid %d) does not run", before)
	}
	killed := make(chan error, 1)
	go func() {
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := client.AppsV1().DaemonSets("bench").Get(ctx, "agent", metav1.GetOptions{})
			return err == nil, nil
		})
		if err == nil {
			err = syscall.Kill(before, syscall.SIGKILL)
		}
		killed <- err
	}()
	out := t.TempDir()
	if _, err := runCLI(t, append([]string{"run", "--out", out, "--nodes", "30", "--repetitions", "1", "--controller", "ours", "--warmup", "off"}, append(args, "bench-rollout")...)...); err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := <-killed; err != nil {
		t.Fatalf("killing kube-scheduler (pid %d) once the DaemonSet existed: %v", before, err)
	}
	if pid, alive := schedulerPID(); !alive || pid == before {
		t.Errorf("kube-scheduler: pid %d alive=%v, want a new process (killed pid %d)", pid, alive, before)
	}
	_, r := onlyReport(t, out)
	if len(r.Runs) != 1 {
		t.Fatalf("%d runs, want 1", len(r.Runs))
	}
	run := r.Runs[0]
	if !run.OK() {
		t.Errorf("%s failed: %s", run.ID(), run.Error)
	}
	if len(run.ClusterRestarts) != 1 || run.ClusterRestarts[0].Component != "kube-scheduler" || run.ClusterRestarts[0].Error != "" {
		t.Errorf("cluster restarts %+v, want kube-scheduler started again", run.ClusterRestarts)
	}
	if m := reports.RunMetrics(&run); len(m) != 0 {
		t.Errorf("the run gave %d metrics, want none: its times include the scheduler's absence", len(m))
	}
	findings := reports.CheckInvariants(r)
	if !reports.Holds(findings, reports.ControllerOurs) {
		t.Errorf("invariants do not hold for our controller: %+v", findings)
	}
	if !slices.ContainsFunc(findings, func(f reports.Finding) bool {
		return f.Check == reports.CheckClusterRestart && f.Severity == reports.SeverityWarn
	}) {
		t.Errorf("no cluster-restart warning among %+v", findings)
	}
}

// With --floor-watch the floor holds our controller's informers in a
// process of its own (dsbench floor-informers): the run reports that
// process's CPU as the floor's (not its memory, the harness's binary's),
// the process's log counts the pod and node events its caches received,
// and no such process outlives the run. Without a binary to start, the run
// fails and says why.
func TestFloorWatchHoldsTheInformers(t *testing.T) {
	args := clusterArgs(t)
	self := filepath.Join(t.TempDir(), "dsbench")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", self, "../../cmd/dsbench").CombinedOutput(); err != nil {
		t.Fatalf("building dsbench: %v\n%s", err, out)
	}
	play := func(self string) (string, *reports.Report, error) {
		t.Helper()
		out := t.TempDir()
		cmd := append([]string{"run", "--out", out, "--nodes", "30", "--repetitions", "1", "--controller", "floor", "--floor-watch", "--warmup", "off"}, args...)
		cmd = append(cmd, "bench-rollout")
		var stdout, stderr bytes.Buffer
		err := Main(t.Context(), Env{Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv, Self: self}, cmd)
		t.Logf("dsbench %s\nstderr:\n%s", strings.Join(cmd, " "), stderr.String())
		dir, r := onlyReport(t, out)
		return dir, r, err
	}

	dir, r, err := play(self)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(r.Runs) != 1 || !r.Runs[0].OK() {
		t.Fatalf("runs %+v, want one that succeeded", r.Runs)
	}
	run := r.Runs[0]
	if !slices.Contains(run.ControllerArgs, "--floor-watch") {
		t.Errorf("the floor's arguments %q do not say it watched", run.ControllerArgs)
	}
	if run.Resources.CPUSeconds <= 0 || run.Resources.PeakRSSBytes != 0 {
		t.Errorf("the floor's resources %+v: want its informers' CPU, and no memory (the harness's binary)", run.Resources)
	}
	logText, err := os.ReadFile(filepath.Join(dir, "logs", "bench-rollout-floor-0-informers.log"))
	if err != nil {
		t.Fatal(err)
	}
	var podEvents, nodeEvents int
	if _, err := fmt.Sscanf(string(logText[bytes.LastIndex(logText, []byte(bench.FloorInformersCommand+": ")):]),
		bench.FloorInformersCommand+": %d pod events, %d node events", &podEvents, &nodeEvents); err != nil {
		t.Fatalf("the informers' log does not count their events (%v):\n%s", err, logText)
	}
	t.Logf("the floor's informers: %d pod events, %d node events, %.2f CPU-s", podEvents, nodeEvents, run.Resources.CPUSeconds)
	// 30 pods created and made Ready, then replaced: at least two events
	// for each of 60 pods; and the 30 nodes listed.
	if podEvents < 120 || nodeEvents < 30 {
		t.Errorf("the informers received %d pod and %d node events, want at least 120 and 30", podEvents, nodeEvents)
	}
	if left := processesOf(t, self); len(left) > 0 {
		t.Errorf("processes of %s left after the run: %v", self, left)
	}

	_, r, _ = play(filepath.Join(t.TempDir(), "missing"))
	if len(r.Runs) != 1 || r.Runs[0].OK() || !strings.Contains(r.Runs[0].Error, "starting the floor's informers") {
		t.Errorf("with no binary: runs %+v; want a failed run that says the informers did not start", r.Runs)
	}
}

// processesOf are the pids of running processes whose executable path is
// bin.
func processesOf(t *testing.T, bin string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && strings.HasPrefix(string(cmdline), bin+"\x00") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestProfileReadsEveryProcess plays a profiled run of ours, of upstream (its
// pprof let through on a self-signed port) and of the floor that watches,
// and checks that every process was profiled and that each
// file is that process's profile: its string table names the process's own
// code.
func TestProfileReadsEveryProcess(t *testing.T) {
	args := clusterArgs(t)
	self := filepath.Join(t.TempDir(), "dsbench")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", self, "../../cmd/dsbench").CombinedOutput(); err != nil {
		t.Fatalf("building dsbench: %v\n%s", err, out)
	}
	out := t.TempDir()
	cmd := append([]string{"run", "--out", out, "--nodes", "30", "--repetitions", "1", "--controller", "ours,upstream,floor", "--floor-watch",
		"--warmup", "off", "--profile"}, args...)
	cmd = append(cmd, "bench-rollout")
	var stdout, stderr bytes.Buffer
	err := Main(t.Context(), Env{Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv, Self: self}, cmd)
	t.Logf("dsbench %s\nstderr:\n%s", strings.Join(cmd, " "), stderr.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	dir, r := onlyReport(t, out)
	// What each process's heap profile must name: its own code (the
	// floor's informers have none but client-go's watches, and are not the
	// harness, whose runner they would name).
	code := map[string]string{
		"ours":            "github.com/dsbench/dsbench/controller.",
		"upstream":        "k8s.io/kubernetes/pkg/controller/daemon.",
		"floor-informers": "k8s.io/client-go/rest/watch.",
		"kube-apiserver":  "k8s.io/apiserver/pkg/endpoints/handlers.",
		"etcd":            "go.etcd.io/etcd/server/",
		"kwok-controller": "sigs.k8s.io/kwok/pkg/kwok/",
		"harness":         "github.com/dsbench/dsbench/bench.(*runState)",
	}
	for _, run := range r.Runs {
		if !run.OK() {
			t.Fatalf("%s: %s %s", run.ID(), run.Outcome, run.Error)
		}
		p := run.Profiles
		if p == nil {
			t.Fatalf("%s: no profiles in the report", run.ID())
		}
		if p.Dir != "profiles" || len(p.Errors) > 0 {
			t.Errorf("%s: profiles in %q with errors %q; want the report's profiles folder and none", run.ID(), p.Dir, p.Errors)
		}
		ctrl := map[string]string{"ours": "ours", "upstream": "upstream", "floor": "floor-informers"}[run.Controller]
		for _, proc := range []string{ctrl, "kube-apiserver", "etcd", "kwok-controller", "harness"} {
			prefix := fmt.Sprintf("bench-rollout-%s-0-%s-", run.Controller, proc)
			var cpu []string
			for _, f := range p.Files {
				if strings.HasPrefix(f, prefix+"cpu") {
					cpu = append(cpu, f)
				}
			}
			if len(cpu) == 0 {
				t.Errorf("%s: no CPU profile of %s in %q", run.ID(), proc, p.Files)
			}
			for _, f := range append(cpu, prefix+"heap-start.pb.gz", prefix+"heap-end.pb.gz") {
				text := gunzipFile(t, filepath.Join(dir, p.Dir, f))
				if !strings.HasSuffix(f, "heap-end.pb.gz") {
					continue
				}
				if !strings.Contains(text, code[proc]) {
					t.Errorf("%s: %s does not name %q: not %s's profile", run.ID(), f, code[proc], proc)
				}
				for other, c := range code {
					if other != proc && other != "floor-informers" && strings.Contains(text, c) {
						t.Errorf("%s: %s names %q: %s's profile, not %s's", run.ID(), f, c, other, proc)
					}
				}
			}
		}
	}
}

// gunzipFile is a gzipped file's content; a file that is missing or not
// gzip fails the test.
func gunzipFile(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	data, err := io.ReadAll(z)
	if err != nil || len(data) == 0 {
		t.Fatalf("%s: %d bytes, %v", path, len(data), err)
	}
	return string(data)
}
