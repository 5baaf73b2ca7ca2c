package cli

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"
	"k8s.io/client-go/rest"

	"github.com/dsbench/dsbench/bench"
	"github.com/dsbench/dsbench/bench/floor"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// runFlags are shared by `run` and `bench`.
type runFlags struct {
	cluster     clusterFlags
	controllers string
	nodes       int
	reps        int
	workers     int
	qps         float64
	burst       int
	outBase     string
	keep        bool
	ctrlBinary  string
	syncDelay   time.Duration
	ctrlArgs    []string
	ctrlEnv     []string
	interleave  bool
	orderSeed   uint64
	warmup      string
	baseline    string
	noGate      bool
	record      string
	// floorInFlight are the floor's pacings to try (see floorPacer); none:
	// by node count, a search of bench.FloorPacings when floorSearch.
	floorInFlight []int
	floorSearch   bool
	floorQPS      float64
	floorBind     string
	floorWatch    bool
	profile       bool
}

// register adds the flags of run and bench; defaultBaseline is the baseline
// gated against by default ("" for run: an ad-hoc run of any scenario, size
// or controller would not match the default suite's baseline).
func (f *runFlags) register(fs *pflag.FlagSet, env Env, defaultControllers, defaultBaseline string) {
	f.registerPlay(fs, env, defaultControllers)
	fs.IntVar(&f.nodes, "nodes", 0, "scale every scenario to this many nodes (0: the scenario's own)")
	fs.StringVar(&f.baseline, "baseline", defaultBaseline, "baseline for the regression gate ('': no gate, only the invariants); the run must match it (scenarios, nodes, controllers)")
	fs.BoolVar(&f.noGate, "no-gate", false, "report, but always exit 0 unless the run itself broke")
}

// registerPlay adds the flags of every command that plays scenarios (run,
// bench and scale): the cluster, the controllers and how they run, how
// often, and where the reports go.
func (f *runFlags) registerPlay(fs *pflag.FlagSet, env Env, defaultControllers string) {
	f.cluster.register(fs, env)
	fs.StringVar(&f.cluster.kubeconfig, "kubeconfig", "", "run against this cluster instead of a local KWOK cluster (nodes are not reset, stages not changed)")
	fs.StringVar(&f.controllers, "controller", defaultControllers, "controllers to measure, interleaved: ours, ours-direct (ours with --bind-mode=direct), upstream, floor (the cluster's own limit, see README), a comma list, or both (ours,upstream); or external alone, with --kubeconfig: the controller already running on that cluster, which the harness does not start")
	fs.IntSliceVar(&f.floorInFlight, "floor-inflight", nil, "the floor's API calls in flight: each value is tried on one repetition in turn, then the fastest is kept (e.g. 8,32,128)")
	fs.Lookup("floor-inflight").DefValue = floorPacingByNodes
	fs.Float64Var(&f.floorQPS, "floor-qps", 0, "cap the floor's API calls per second (0: no cap)")
	fs.StringVar(&f.floorBind, "floor-bind", string(floor.BindNodeName), "how the floor's pods reach their nodes: direct (spec.nodeName, as ours-direct) or scheduler (pinned by node affinity and bound by kube-scheduler, as ours and upstream): the floor of a controller that pays the scheduler")
	fs.BoolVar(&f.floorWatch, "floor-watch", false, "the floor also holds the informers our controller holds (DaemonSets, revisions, pods, nodes) in a process of its own, whose CPU is the floor's: the floor of a controller that pays for reading the cluster")
	fs.IntVar(&f.reps, "repetitions", 0, "repetitions per scenario and controller (0: the scenario's own)")
	fs.IntVar(&f.workers, "workers", 5, "concurrent DaemonSet syncs, the same for both controllers")
	fs.Float64Var(&f.qps, "kube-api-qps", 0, "controller client QPS, the same for both (0: unlimited)")
	fs.IntVar(&f.burst, "kube-api-burst", 0, "controller client burst (0: match QPS)")
	fs.StringVar(&f.outBase, "out", filepath.Join("reports", "out"), "reports go to OUT/<timestamp>/")
	fs.BoolVar(&f.keep, "keep-cluster", false, "leave the KWOK cluster up afterwards")
	fs.StringVar(&f.ctrlBinary, "controller-binary", "", "our controller's binary (default: CACHE/daemonset-controller)")
	fs.DurationVar(&f.syncDelay, "sync-delay", 0, "make our controller (ours and ours-direct) sleep this long in every sync (to prove the gate catches a slow controller)")
	fs.StringArrayVar(&f.ctrlArgs, "controller-arg", nil, "one more argument for our controller (ours and ours-direct), repeatable, e.g. --controller-arg=--create-pacing=adaptive; the report records it; not the flags the harness sets itself (see bench.ReservedControllerFlags)")
	fs.StringArrayVar(&f.ctrlEnv, "controller-env", nil, "one more environment variable for our controller (ours and ours-direct), NAME=VALUE, repeatable, e.g. --controller-env=GOMEMLIMIT=100MiB; the report records it; GOGC, GOMEMLIMIT and GOMAXPROCS are checked as the Go runtime reads them")
	fs.StringVar(&f.warmup, "warmup", warmupAuto, fmt.Sprintf("play the first scenario once, unmeasured, before the measured runs (the first run on nodes just created is slower for whichever controller plays it): %q, %q, or %q (on from %d nodes)", warmupOn, warmupOff, warmupAuto, warmupAutoNodes))
	fs.BoolVar(&f.interleave, "interleave", true, "alternate controllers per repetition, each pair of repetitions in an order drawn at random and then in its reverse (A B, B A or B A, A B), so that drift hits both and no controller keeps one place in the suite")
	fs.Uint64Var(&f.orderSeed, "order-seed", 0, "seed of the interleaved order, recorded in the report (0: drawn at random)")
	fs.BoolVar(&f.profile, "profile", false, "take pprof profiles of every measured run into OUT/<timestamp>/profiles: CPU in 10-s windows and the heap at the start and end of the steps, of the controller (the floor's informers with --floor-watch), kube-apiserver, the harness, and on a local KWOK cluster etcd and kwok; each run waits for the windows in flight when its steps end, and its times include the sampling")
	fs.StringVar(&f.record, "record", "", "write a journal of each run's oracle inputs to DIR/<controller>-<scenario>[-<rep>].jsonl.gz (see bench.Replay)")
}

// orderSeedOrRandom is --order-seed, or a random one when it is 0.
func (f *runFlags) orderSeedOrRandom() uint64 {
	seed := f.orderSeed
	for seed == 0 {
		seed = rand.Uint64()
	}
	return seed
}

func (f *runFlags) controllerList() ([]bench.Controller, error) {
	switch f.controllers {
	case "both":
		return []bench.Controller{bench.Ours, bench.Upstream}, nil
	}
	var out []bench.Controller
	for _, s := range strings.Split(f.controllers, ",") {
		c, err := bench.ParseController(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--controller: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// loadScenarios loads library names or files; all problems at once.
func loadScenarios(env Env, args []string) ([]*scenarios.Scenario, error) {
	var out []*scenarios.Scenario
	var errs []error
	for _, a := range args {
		var (
			sc   *scenarios.Scenario
			warn []scenarios.Warning
			err  error
		)
		if _, statErr := os.Stat(a); statErr == nil || strings.ContainsAny(a, "/.") {
			sc, warn, err = scenarios.Load(a)
		} else {
			sc, warn, err = scenarios.LoadLibrary(a)
		}
		for _, w := range warn {
			fmt.Fprintf(env.Stderr, "warning: %s\n", w)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, sc)
	}
	return out, errors.Join(errs...)
}

func runValidate(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("validate", "[flags] SCENARIO...", env)
	var nodes []int
	fs.IntSliceVar(&nodes, "nodes", nil, "also validate each scenario scaled to these node counts (comma-separated)")
	if err := parse(fs, args); err != nil {
		return err
	}
	var bad flagErrors
	for _, n := range nodes {
		if n <= 0 {
			bad.add("nodes", n, "want positive node counts")
		}
	}
	if fs.NArg() == 0 {
		bad = append(bad, errors.New("want scenario files or library names"))
	}
	if err := bad.err("validate"); err != nil {
		return err
	}
	scs, err := loadScenarios(env, fs.Args())
	errs := []error{err}
	for _, sc := range scs {
		fmt.Fprintf(env.Stdout, "%s: ok (%s, %d nodes, %d steps)\n", sc.Source, sc.Metadata.Name, sc.DefaultNodes(), len(sc.Steps))
		for _, n := range nodes {
			scaled, serr := scenarios.Scale(sc, n)
			if serr == nil {
				_, serr = scenarios.Validate(scaled)
			}
			if serr != nil {
				errs = append(errs, fmt.Errorf("%s at %d nodes: %w", sc.Source, n, serr))
				continue
			}
			fmt.Fprintf(env.Stdout, "%s: ok at %d nodes\n", sc.Source, n)
		}
	}
	return errors.Join(errs...)
}

func runLibrary(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("library", "", env)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("library", fmt.Errorf("unexpected arguments %q (validate checks scenarios)", fs.Args()))
	}
	for _, name := range scenarios.Library() {
		sc, _, err := scenarios.LoadLibrary(name)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%-28s %5d nodes  %s\n", name, sc.DefaultNodes(), sc.Metadata.Description)
	}
	return nil
}

func runRun(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("run", "[flags] SCENARIO...", env)
	var f runFlags
	f.register(fs, env, "ours", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	var bad flagErrors
	f.validate(fs, &bad)
	if fs.NArg() == 0 {
		bad = append(bad, errors.New("want scenario files or library names (see `dsbench library`)"))
	}
	if err := bad.err("run"); err != nil {
		return err
	}
	return play(ctx, env, "run", &f, fs.Args(), nil)
}

// play loads scenarios (a bad file never starts a cluster), brings up or
// reuses a cluster, hands the suite to bench.RunSuite, prints what it left
// and turns its verdict into the exit code. The flags are valid (see
// runFlags.validate).
func play(ctx context.Context, env Env, cmd string, f *runFlags, names []string, adjust func(*scenarios.Scenario)) error {
	if which, err := f.controllerList(); err == nil && !bench.Gated(which) && f.baseline != "" {
		fmt.Fprintf(env.Stdout, "the regression gate is not applied: %s holds ours and upstream, not the external controller; its invariants decide\n", f.baseline)
		f.baseline = ""
	}
	st, done, err := openStage(ctx, env, cmd, f, names, "nodes", []int{f.nodes}, adjust)
	if err != nil {
		return err
	}
	defer done()
	res, err := st.play(ctx, st.suite(f.nodes, "", f.record))
	if err != nil {
		return err
	}
	v := res.Verdict
	if v.Gate != nil {
		fmt.Fprintln(env.Stdout, v.Gate.Verdict())
	}
	if v.Pass || f.noGate {
		return nil
	}
	if v.Gate != nil {
		return fmt.Errorf("the regression gate failed: see %s", filepath.Join(res.Dir, reports.MarkdownFile))
	}
	return fmt.Errorf("invariants do not hold for %s (%s): see %s", judgedName(st.which), strings.Join(v.Findings, "; "), filepath.Join(res.Dir, reports.MarkdownFile))
}

// judgedName names the controller whose invariants decide the verdict
// (bench.Judge).
func judgedName(which []bench.Controller) string {
	if slices.Contains(which, bench.External) {
		return "the external controller"
	}
	return "our controller"
}

// stage is what the commands that play scenarios set up once, however many
// suites they then play on it: the scenarios loaded and checked, the
// controllers' binaries found, the cluster open.
type stage struct {
	env         Env
	f           *runFlags
	which       []bench.Controller
	scs         []*scenarios.Scenario
	binaries    map[bench.Controller]string
	kubeconfig  string
	cfg         *rest.Config
	cluster     *kwok.Cluster
	interactive bool
}

// openStage loads the scenarios and checks that each scales to every node
// count of sizes (0: the scenario's own; a failure is a usage error naming
// sizeFlag), then finds the binaries and brings up or reuses the cluster.
// done tears down what it brought up; after an error there is nothing to
// tear down.
func openStage(ctx context.Context, env Env, cmd string, f *runFlags, names []string, sizeFlag string, sizes []int, adjust func(*scenarios.Scenario)) (st *stage, done func(), err error) {
	done = func() {}
	which, err := f.controllerList()
	if err != nil {
		return nil, done, usageError(cmd, err)
	}
	scs, err := loadScenarios(env, names)
	if err != nil {
		return nil, done, err
	}
	for _, sc := range scs {
		if adjust != nil {
			adjust(sc)
		}
		for _, n := range sizes {
			if n == 0 {
				continue
			}
			if _, err := scenarios.Scale(sc, n); err != nil {
				return nil, done, usageError(cmd, fmt.Errorf("--%s %d: %w", sizeFlag, n, err))
			}
		}
	}
	// The external controller runs alone and needs no binary.
	binaries := map[bench.Controller]string{}
	if !slices.Contains(which, bench.External) {
		cache := kwok.CacheDir()
		bins := kwok.Binaries{Dir: f.cluster.binDir}
		ours := f.ctrlBinary
		if ours == "" {
			ours = filepath.Join(cache, "daemonset-controller")
		}
		if _, err := os.Stat(ours); err != nil {
			return nil, done, fmt.Errorf("our controller binary %s: %w (run `make build`)", ours, err)
		}
		binaries[bench.Ours], binaries[bench.Upstream] = ours, bins.Path(kwok.BinKubeControllerManager)
		if f.floorWatch {
			if env.Self == "" {
				return nil, done, errors.New("--floor-watch: no dsbench binary to start for the floor's informers")
			}
			binaries[bench.Floor] = env.Self
		}
	}

	kubeconfig, cfg, cluster, down, err := openCluster(ctx, env, f)
	if err != nil {
		return nil, down, err
	}
	interactive := false
	if file, ok := env.Stderr.(*os.File); ok && os.Getenv("CI") == "" {
		interactive = term.IsTerminal(int(file.Fd()))
	}
	return &stage{env: env, f: f, which: which, scs: scs,
		binaries:   binaries,
		kubeconfig: kubeconfig, cfg: cfg, cluster: cluster, interactive: interactive}, down, nil
}

// suite is the stage's suite at nodes (0: each scenario's own), its reports
// in outDir ("": OUT/<timestamp>/), its journals, if any, in journalDir.
func (st *stage) suite(nodes int, outDir, journalDir string) bench.SuiteConfig {
	f, env := st.f, st.env
	ctrl := bench.ControllerConfig{Workers: f.workers, QPS: f.qps, Burst: f.burst}
	ctrl.ExtraArgs = append(ctrl.ExtraArgs, f.ctrlArgs...)
	ctrl.OursEnv = slices.Clone(f.ctrlEnv)
	if f.syncDelay > 0 {
		ctrl.ExtraArgs = append(ctrl.ExtraArgs, "--sync-delay="+f.syncDelay.String())
	}
	conf := bench.SuiteConfig{
		Scenarios: st.scs, Controllers: st.which, Nodes: nodes, Repetitions: f.reps, Interleave: f.interleave, OrderSeed: f.orderSeedOrRandom(),
		Warmup:     f.warmsUp(st.scs, nodes),
		Controller: ctrl, Binaries: st.binaries,
		FloorInFlight: f.floorInFlight, FloorSearch: f.floorSearch, FloorQPS: f.floorQPS, FloorBind: floor.Binding(f.floorBind), FloorWatch: f.floorWatch,
		REST: st.cfg, Kubeconfig: st.kubeconfig, OwnsCluster: st.cluster != nil, ClusterFaults: clusterFaults(st.cluster),
		OutBase: f.outBase, OutDir: outDir, Baseline: f.baseline, JournalDir: journalDir,
		Progress: bench.NewProgress(env.Stderr, st.interactive),
		RunDone: func(run reports.Run) {
			fmt.Fprintf(env.Stderr, "%s: %s (%.1fs)%s\n", run.ID(), run.Outcome, run.End.Sub(run.Start).Seconds(), errSuffix(run.Error))
			if p := run.Profiles; p != nil {
				fmt.Fprintf(env.Stderr, "  %d profiles in %s\n", len(p.Files), p.Dir)
				for _, e := range p.Errors {
					fmt.Fprintf(env.Stderr, "  not profiled: %s\n", e)
				}
			}
		},
	}
	if f.profile {
		conf.Profile = true
		if st.cluster != nil {
			targets, err := st.cluster.PprofTargets()
			if err != nil {
				fmt.Fprintf(env.Stderr, "--profile: etcd and kwok will not be profiled: %v\n", err)
			} else {
				conf.ClusterPprof = bench.ClusterPprofTargets(targets)
			}
		}
	}
	if st.cluster != nil {
		conf.Kwok = &reports.KwokParams{Cluster: f.cluster.name, Parallelism: f.cluster.parallelism, LogLevel: f.cluster.kwokLog, Watch: f.cluster.kwokWatch}
	}
	return conf
}

// play plays one suite and prints its summary and where its reports went.
func (st *stage) play(ctx context.Context, conf bench.SuiteConfig) (*bench.SuiteResult, error) {
	res, err := bench.RunSuite(ctx, conf)
	if res != nil && res.Dir != "" && st.cluster != nil {
		// The simulator's own account of the runs, whatever their verdict.
		if lerr := st.cluster.SaveLog("kwok-controller", filepath.Join(res.Dir, "logs", "kwok-controller.log.gz")); lerr != nil {
			fmt.Fprintf(st.env.Stderr, "saving kwok's log: %v\n", lerr)
		}
	}
	if err != nil {
		return res, err
	}
	fmt.Fprintln(st.env.Stdout, reports.Summary(res.Report))
	fmt.Fprintf(st.env.Stdout, "reports: %s\n", res.Dir)
	return res, nil
}

// openCluster returns the kubeconfig and client configuration of
// --kubeconfig, or of the local KWOK cluster, brought up when none runs;
// down tears down what it brought up (unless --keep-cluster) and must always
// be called.
func openCluster(ctx context.Context, env Env, f *runFlags) (kubeconfig string, cfg *rest.Config, cluster *kwok.Cluster, down func(), err error) {
	kubeconfig, cluster, down, err = bringUp(ctx, env, f)
	if err != nil {
		return "", nil, nil, down, err
	}
	if cfg, err = kwok.LoadRESTConfig(kubeconfig); err != nil {
		down() // the caller gets an error and will not
		return "", nil, nil, func() {}, err
	}
	return kubeconfig, cfg, cluster, down, nil
}

// bringUp returns the local KWOK cluster it brought up or found running,
// or a nil cluster when --kubeconfig names someone else's.
func bringUp(ctx context.Context, env Env, f *runFlags) (kubeconfig string, cluster *kwok.Cluster, down func(), err error) {
	down = func() {}
	if f.cluster.kubeconfig != "" {
		return f.cluster.kubeconfig, nil, down, nil
	}
	conf := f.cluster.config(env)
	c, err := kwok.Open(conf)
	if err != nil {
		return "", nil, down, err
	}
	if len(c.LivePIDs()) == 0 {
		fmt.Fprintf(env.Stderr, "bringing up KWOK cluster %q\n", conf.Name)
		c, err = kwok.Up(ctx, conf)
		if err != nil {
			return "", nil, down, err
		}
		if !f.keep {
			down = func() {
				downCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
				defer cancel()
				if err := c.Down(downCtx); err != nil {
					fmt.Fprintf(env.Stderr, "tearing down cluster: %v\n", err)
				}
			}
		}
	} else {
		fmt.Fprintf(env.Stderr, "reusing running KWOK cluster %q\n", conf.Name)
	}
	return c.Kubeconfig(), c, down, nil
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

// clusterFaults is the local cluster as the faults that need one see it.
func clusterFaults(c *kwok.Cluster) bench.ClusterFaults {
	if c == nil {
		return nil
	}
	return c
}

// Values of --warmup. At 1000 nodes the first run's create took 7.9 s
// against 5.6-6.1 s in the next two of the same controller (make bench,
// stop 21); at 5000 nodes 197 s against 127 s. Small clusters (the tests')
// do without.
const (
	warmupOn        = "on"
	warmupOff       = "off"
	warmupAuto      = "auto"
	warmupAutoNodes = 500
)

// warmsUp says whether a suite of scs at nodes (0: each scenario's own)
// starts with a warm-up run.
func (f *runFlags) warmsUp(scs []*scenarios.Scenario, nodes int) bool {
	switch f.warmup {
	case warmupOn:
		return true
	case warmupOff:
		return false
	}
	for _, sc := range scs {
		n := nodes
		if n == 0 {
			n = sc.DefaultNodes()
		}
		if n >= warmupAutoNodes {
			return true
		}
	}
	return false
}
