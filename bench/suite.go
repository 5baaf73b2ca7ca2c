package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/dsbench/dsbench/bench/floor"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// SuiteConfig is what a suite's command line decides: which scenarios and
// controllers, how often and in which order, with which settings, on which
// (already opened) cluster, and where the reports go.
type SuiteConfig struct {
	// Scenarios are loaded and checked: each scales to Nodes.
	Scenarios []*scenarios.Scenario
	// Controllers are measured in this order (see runOrder).
	Controllers []Controller
	// Nodes scales every scenario to this many nodes (0: the scenario's own).
	Nodes int
	// Repetitions per scenario and controller (0: the scenario's own).
	Repetitions int
	// Interleave alternates controllers per repetition instead of running
	// each controller's repetitions together.
	Interleave bool
	// OrderSeed draws, with Interleave, the order of each pair of
	// repetitions (see runOrder); 0: the order listed, then its reverse,
	// always.
	OrderSeed uint64
	// Warmup plays the first scenario once before the measured runs, with
	// the first of ours, ours-direct and upstream listed, and keeps it in
	// the report's warmups (judged, not measured): the first run on nodes
	// just created is slower for whichever controller plays it, and with
	// interleaving that is always the first listed.
	Warmup bool
	// Controller is the template of ours (in either bind mode) and
	// upstream: workers, client QPS and burst, extra arguments.
	Controller ControllerConfig
	// Binaries maps each controller to its binary (none for the floor or
	// the external controller; ours-direct runs ours's unless it has its
	// own).
	Binaries map[Controller]string
	// FloorInFlight are the floor's pacings to try, each on one repetition
	// in turn, then the fastest (see floorPacer); empty: by each
	// scenario's node count, FloorPacings when FloorSearch, else
	// FloorPacing alone. FloorQPS caps its calls per second (0: no cap).
	FloorInFlight []int
	FloorSearch   bool
	FloorQPS      float64
	// FloorBind is how the floor's pods reach their nodes ("": by
	// spec.nodeName).
	FloorBind floor.Binding
	// FloorWatch has the floor hold our controller's informers in a process
	// of its own (FloorConfig.Watch).
	FloorWatch bool

	// REST and Kubeconfig are the cluster; OwnsCluster says it is a local
	// KWOK cluster the runner may reset (see Config).
	REST        *rest.Config
	Kubeconfig  string
	OwnsCluster bool
	// ClusterFaults restarts the local cluster's API server and compacts
	// its etcd for fault steps; nil on a cluster not ours.
	ClusterFaults ClusterFaults
	// Kwok is the local cluster's setup for the report; nil on a cluster
	// not ours.
	Kwok *reports.KwokParams

	// OutBase receives the reports in OutBase/<timestamp>/, unless OutDir
	// names the folder itself (dsbench scale: one folder per node count).
	OutBase string
	OutDir  string
	// Baseline is the regression gate's baseline file ("": no gate, only the
	// invariants; a file that does not exist is no gate either). It is
	// ignored when the external controller runs (see Gated).
	Baseline string
	// JournalDir, when set, receives each run's journal (see Config).
	JournalDir string
	// Profile has each measured run take pprof profiles into the profiles
	// folder of the suite's output (see Config.ProfileDir); ClusterPprof
	// are the cluster's processes to profile besides the controller and
	// kube-apiserver.
	Profile      bool
	ClusterPprof []ProfileTarget
	// Progress receives the live display; nil shows nothing.
	Progress *Progress
	// RunDone, when set, is told of each run as it ends, before it is saved.
	RunDone func(reports.Run)
	// Clock stamps the output folder and the report; nil is the real clock.
	Clock clock.PassiveClock
}

// SuiteResult is what a suite leaves behind.
type SuiteResult struct {
	Report *reports.Report
	// Dir holds report.json and everything rendered from it.
	Dir string
	// Verdict is the gate's, or without a baseline the invariants'.
	Verdict Verdict
}

// RunSuite plays every scenario against every controller, writes
// report.json after each run (atomically: a crash loses nothing), and, when
// all ran, renders the reports and judges them. Interrupted, it returns what
// it has so far and an error naming where that went.
func RunSuite(ctx context.Context, conf SuiteConfig) (*SuiteResult, error) {
	if err := checkExternal(conf.Controllers, conf.OwnsCluster); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	if !Gated(conf.Controllers) {
		conf.Baseline = "" // no baseline holds the external controller
	}
	if conf.Clock == nil {
		conf.Clock = clock.RealClock{}
	}
	out := conf.OutDir
	if out == "" {
		out = reports.OutDir(conf.OutBase, conf.Clock.Now())
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", out, err)
	}
	runner, err := NewRunner(Config{
		REST: conf.REST, Kubeconfig: conf.Kubeconfig, OwnsCluster: conf.OwnsCluster, ClusterFaults: conf.ClusterFaults, Controller: conf.Controller,
		Binaries: conf.Binaries, Nodes: conf.Nodes, LogDir: filepath.Join(out, "logs"), Progress: conf.Progress,
		JournalDir: conf.JournalDir, ClusterPprof: conf.ClusterPprof,
	})
	if err != nil {
		return nil, err
	}
	if conf.Profile {
		runner.conf.ProfileDir = filepath.Join(out, "profiles")
	}
	report := suiteReport(conf, conf.Clock.Now())
	stampProvenance(report)
	res := &SuiteResult{Report: report, Dir: out}
	save := func() error { return reports.Write(out, report) }
	if which, ok := warmupController(conf.Controllers); conf.Warmup && ok && len(conf.Scenarios) > 0 && ctx.Err() == nil {
		run := runner.ForWarmup().Run(ctx, conf.Scenarios[0], which, 0)
		if conf.Progress != nil {
			conf.Progress.Done()
		}
		report.Warmups = append(report.Warmups, run)
		if err := save(); err != nil {
			return res, err
		}
	}
	var shuffle *rand.Rand
	if conf.OrderSeed != 0 {
		shuffle = rand.New(rand.NewPCG(conf.OrderSeed, 0))
	}
	for _, sc := range conf.Scenarios {
		pacer := floorPacer{candidates: conf.floorCandidates(sc), base: conf.floorBase()}
		for _, slot := range runOrder(conf.Controllers, suiteRepetitions(sc, conf.Repetitions), conf.Interleave, shuffle) {
			if ctx.Err() != nil {
				break
			}
			r := runner
			var floorConf FloorConfig
			if slot.which == Floor {
				floorConf = pacer.next()
				r = runner.WithFloor(floorConf)
			}
			run := r.Run(ctx, sc, slot.which, slot.rep)
			if slot.which == Floor {
				pacer.record(floorConf, &run)
			}

			if conf.Progress != nil {
				conf.Progress.Done()
			}
			if conf.RunDone != nil {
				conf.RunDone(run)
			}
			if p := run.Profiles; p != nil {
				// Relative in the report, which moves with its folder.
				if rel, err := filepath.Rel(out, p.Dir); err == nil && filepath.IsLocal(rel) {
					p.Dir = rel
				}
			}
			report.Runs = append(report.Runs, run)
			if err := save(); err != nil {
				return res, err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		_ = save()
		return res, fmt.Errorf("interrupted; partial results in %s: %w", out, err)
	}
	// Read after the runs, which are saved by now: a damaged baseline costs
	// the gate, not the measurements.
	var baseline *reports.Baseline
	if conf.Baseline != "" {
		if b, err := reports.ReadBaseline(conf.Baseline); err == nil {
			baseline = b
		} else if !errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("reading baseline: %w", err)
		}
	}
	if err := reports.Render(out, report, baseline); err != nil {
		return res, err
	}
	res.Verdict = Judge(report, baseline)
	return res, nil
}

// Verdict is how a suite ends.
type Verdict struct {
	// Gate is the regression gate's result; nil without a baseline, or
	// with the external controller.
	Gate *reports.GateResult
	// Pass: the gate passed or, without it, the invariants hold for our
	// controller and the external one.
	Pass bool
	// Findings are, without the gate, the first five invariant findings of
	// our controller or the external one, as "scenario#repetition check:
	// detail".
	Findings []string
}

// Gated says whether the regression gate can judge a suite of these
// controllers: not when the external controller runs, since the baseline
// holds ours and upstream, which an external run never matches.
func Gated(which []Controller) bool { return !slices.Contains(which, External) }

// Judge gates r against the baseline b, or, when b is nil or r holds runs
// of the external controller (which no baseline holds), checks the
// invariants of the controller under test alone: ours with its default
// binding, as in the gate, or the external controller. ours-direct, like
// upstream and the floor, is measured and reported, but does not decide the
// verdict.
func Judge(r *reports.Report, b *reports.Baseline) Verdict {
	external := slices.ContainsFunc(r.Runs, func(run reports.Run) bool { return run.Controller == reports.ControllerExternal })
	if b != nil && !external {
		gate := reports.Gate(r, b)
		return Verdict{Gate: &gate, Pass: gate.Pass}
	}
	judged := []string{reports.ControllerOurs, reports.ControllerExternal}
	findings := reports.CheckInvariants(r)
	v := Verdict{Pass: reports.Holds(findings, reports.ControllerOurs) && reports.Holds(findings, reports.ControllerExternal)}
	for _, fd := range findings {
		if slices.Contains(judged, fd.Controller) && len(v.Findings) < 5 {
			v.Findings = append(v.Findings, fmt.Sprintf("%s#%d %s: %s", fd.Scenario, fd.Repetition, fd.Check, fd.Detail))
		}
	}
	return v
}

// warmupController is the first listed controller that the harness starts
// and that plays every scenario: not the floor, which adopts no orphans,
// nor the external controller, which the harness does not start.
func warmupController(which []Controller) (Controller, bool) {
	for _, w := range which {
		if w == Ours || w == OursDirect || w == Upstream {
			return w, true
		}
	}
	return "", false
}

// suiteRepetitions is how often each controller plays sc: override when
// set, else the scenario's own, at least once.
func suiteRepetitions(sc *scenarios.Scenario, override int) int {
	if override > 0 {
		return override
	}
	return max(sc.Repetitions, 1)
}

// runSlot is one run of a suite's scenario: a controller and a repetition.
type runSlot struct {
	which Controller
	rep   int
}

// runOrder interleaves controllers per repetition, each pair of
// repetitions in one order and then in its reverse (A B, B A, ...:
// whatever the cluster carries over from one run to the next, such as a
// warm cache or a backlog, falls on each side equally), or runs each
// controller's repetitions together. With shuffle, each pair's order is
// drawn from it; without, it is the order listed. A fixed order gives each
// controller the same places in every suite, and a place can be fast or
// slow for reasons of the cluster's own: in 8 of 8 suites of 3 or 4
// repetitions at 1000 nodes, the 6th run's create was the fastest of the
// controller that played it (bench/SCALE.md, "The slow start, the
// connections and the order of runs").
func runOrder(which []Controller, reps int, interleave bool, shuffle *rand.Rand) []runSlot {
	var out []runSlot
	if interleave {
		order := slices.Clone(which)
		for r := range reps {
			if r%2 == 0 {
				copy(order, which)
				if shuffle != nil {
					shuffle.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				}
			} else {
				slices.Reverse(order)
			}
			for _, w := range order {
				out = append(out, runSlot{w, r})
			}
		}
		return out
	}
	for _, w := range which {
		for r := range reps {
			out = append(out, runSlot{w, r})
		}
	}
	return out
}

// floorPacer chooses the floor's calls in flight for each repetition of one
// scenario: every candidate once, in turn, then the one whose trial
// converged fastest. The choice is recorded in each run's ControllerArgs.
type floorPacer struct {
	candidates []int
	base       FloorConfig     // all but the pacing
	tried      map[int]float64 // candidate -> its trial's convergence seconds
}

func (p *floorPacer) next() FloorConfig {
	c := p.base
	c.InFlight = floor.ChooseInFlight(p.candidates, p.tried)
	return c
}

// floorBase is the floor's configuration but for its pacing.
func (conf SuiteConfig) floorBase() FloorConfig {
	return FloorConfig{QPS: conf.FloorQPS, Bind: conf.FloorBind, Watch: conf.FloorWatch}
}

// record keeps a candidate's first run as its trial.
func (p *floorPacer) record(conf FloorConfig, run *reports.Run) {
	if p.tried == nil {
		p.tried = map[int]float64{}
	}
	if _, ok := p.tried[conf.InFlight]; ok {
		return
	}
	p.tried[conf.InFlight] = math.Inf(1)
	for _, m := range reports.RunMetrics(run) {
		if m.Metric.Key == reports.MetricConverge.Key {
			p.tried[conf.InFlight] = m.Value
		}
	}
}

// floorCandidates are the floor's pacings to try in sc, at the node count
// it plays at.
func (conf SuiteConfig) floorCandidates(sc *scenarios.Scenario) []int {
	if len(conf.FloorInFlight) > 0 {
		return conf.FloorInFlight
	}
	nodes := sc.DefaultNodes()
	if conf.Nodes > 0 {
		nodes = conf.Nodes
	}
	if conf.FloorSearch {
		return FloorPacings(nodes)
	}
	return []int{FloorPacing(nodes)}
}

// floorArgs are the floor's settings for the report's parameters: the
// candidates, over all scenarios; each run records the one it used.
func floorArgs(candidates []int, base FloorConfig) []string {
	s := make([]string, len(candidates))
	for i, n := range candidates {
		s[i] = strconv.Itoa(n)
	}
	return append([]string{"--floor-inflight=" + strings.Join(s, ","), "--floor-qps=" + strconv.FormatFloat(base.QPS, 'f', -1, 64)}, base.optionArgs()...)
}

// suiteReport is the report of a suite before any run: its parameters,
// resolved per scenario, and the versions it was built with. What needs the
// machine (binaries' hashes, git, the hardware) is stampProvenance's.
func suiteReport(conf SuiteConfig, now time.Time) *reports.Report {
	r := &reports.Report{SchemaVersion: reports.SchemaVersion, GeneratedAt: now.UTC()}
	for _, sc := range conf.Scenarios {
		r.Params.Scenarios = append(r.Params.Scenarios, sc.Metadata.Name)
		r.Params.Seed = sc.Seed
	}
	r.Params.Nodes = conf.Nodes
	r.Params.Repetitions = conf.Repetitions
	nodes, reps := map[int]bool{}, map[int]bool{}
	for _, sc := range conf.Scenarios {
		p := reports.ScenarioParams{Name: sc.Metadata.Name, Source: sc.Source, Seed: sc.Seed, Nodes: sc.DefaultNodes(),
			Repetitions: suiteRepetitions(sc, conf.Repetitions), HoldSeconds: sc.BarrierHold().Seconds()}
		if conf.Nodes > 0 {
			p.Nodes = conf.Nodes
		}
		b := sc.Cluster.Pods
		p.Pods = reports.PodStages{ReadyDelaySeconds: b.ReadyDelay.Seconds(), ReadyJitterSeconds: b.ReadyJitter.Seconds(),
			DeleteDelaySeconds: b.DeleteDelay.Seconds(), FailImages: b.FailImages, NeverReadyImages: b.NeverReadyImages}
		p.Oracle = OracleParams(p.Nodes, len(sc.DaemonSets()))
		p.APIProxy = sc.UsesAPIProxy()
		r.Params.PerScenario = append(r.Params.PerScenario, p)
		nodes[p.Nodes], reps[p.Repetitions] = true, true
	}
	// One value for all: record it, never 0; several: PerScenario has them.
	if len(nodes) == 1 {
		for n := range nodes {
			r.Params.Nodes = n
		}
	}
	if len(reps) == 1 {
		for n := range reps {
			r.Params.Repetitions = n
		}
	}
	r.Params.Interleaved = conf.Interleave && len(conf.Controllers) > 1
	if r.Params.Interleaved {
		r.Params.OrderSeed = conf.OrderSeed
	}
	for _, w := range conf.Controllers {
		if w == External {
			// Its binary and settings are whatever started it.
			r.Params.Controllers = append(r.Params.Controllers, reports.ControllerParams{Name: string(w)})
			continue
		}
		cp := reports.ControllerParams{Name: string(w), QPS: conf.Controller.QPS, Burst: conf.Controller.Burst, Workers: conf.Controller.Workers}
		c := conf.Controller
		c.Which = w
		cp.Args = c.Args()
		if w.IsOurs() {
			cp.Env = slices.Clone(c.OursEnv)
		}
		if w == Floor {
			var candidates []int
			for _, sc := range conf.Scenarios {
				for _, n := range conf.floorCandidates(sc) {
					if !slices.Contains(candidates, n) {
						candidates = append(candidates, n)
					}
				}
			}
			cp.Args = floorArgs(candidates, conf.floorBase())
		}
		cp.Binary = w.binary(conf.Binaries)
		r.Params.Controllers = append(r.Params.Controllers, cp)
	}
	r.Params.Harness = reports.ClientParams{QPS: -1}
	r.Params.Kwok = conf.Kwok
	r.Versions = reports.Versions{Go: runtime.Version(), Kubernetes: kwok.KubernetesVersion, Kwok: kwok.KwokVersion}
	if conf.Kwok != nil {
		r.Versions.Kwok = kwok.KwokWatch(conf.Kwok.Watch).Version()
	}
	return r
}

// stampProvenance adds what identifies the code and the machine: each
// controller binary's SHA-256, the git commit and whether the tree is
// dirty, and the hardware.
func stampProvenance(r *reports.Report) {
	for i := range r.Params.Controllers {
		cp := &r.Params.Controllers[i]
		cp.BinarySHA256 = fileSHA256(cp.Binary)
	}
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		r.Versions.GitCommit = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		r.Versions.GitDirty = len(strings.TrimSpace(string(out))) > 0
	}
	r.Machine = machine()
}

// fileSHA256 is the file's SHA-256 in hex, or "" when it cannot be read.
func fileSHA256(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

func machine() reports.Machine {
	m := reports.Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(strings.SplitN(string(data), "\n", 2)[0], "MemTotal: %d kB", &kb); err == nil {
			m.MemoryBytes = kb * 1024
		}
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if out, err := exec.Command("uname", "-r").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	return m
}
