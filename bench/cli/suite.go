package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/dsbench/dsbench/bench"
	"github.com/dsbench/dsbench/reports"
)

// DefaultSuite is what `make bench` runs: a fresh DaemonSet and a rolling
// update, node churn during a rollout, and placement churn, at 1000 nodes, 5
// repetitions, ours, upstream and the floor interleaved. bench-churn-rollout follows
// bench-rollout because it reuses that scenario's nodes.
var DefaultSuite = []string{"bench-rollout", "bench-churn-rollout", "bench-node-churn"}

// DefaultBenchControllers are what the full suite measures.
var DefaultBenchControllers = []string{"ours", "upstream", "floor"}

// floorPacingByNodes and floorSearchByNodes are --floor-inflight's default
// in help: one pacing by node count (bench.FloorPacing) for run, a search
// of two (bench.FloorPacings) for bench and scale.
const (
	floorPacingByNodes = "a tenth of the nodes (power of 2, at least 32)"
	floorSearchByNodes = "a fortieth and a tenth of the nodes (powers of 2, at least 32; 32,128 at 1000 nodes)"
)

// searchFloorPacing makes the floor's default pacing a search of two by
// node count rather than one value; --floor-inflight given overrides it
// (validate).
func (f *runFlags) searchFloorPacing(fs *pflag.FlagSet) {
	f.floorSearch = true
	fs.Lookup("floor-inflight").DefValue = floorSearchByNodes
}

// SmokeSuite is the short bench that `make test` runs in CI.
var SmokeSuite = []string{"bench-rollout"}

func runBench(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("bench", "[flags]", env)
	var f runFlags
	f.register(fs, env, "both", filepath.Join("bench", "baseline.json"))
	var (
		suite         string
		writeBaseline string
		tolerance     float64
		smoke         bool
	)
	fs.StringVar(&suite, "scenarios", strings.Join(DefaultSuite, ","), "comma-separated scenarios (library names or files)")
	fs.StringVar(&writeBaseline, "write-baseline", "", "write the results as the new baseline to this file")
	fs.Float64Var(&tolerance, "tolerance", reports.DefaultTolerance, "with --write-baseline: the median ratio beyond which a significant change fails the gate")
	f.searchFloorPacing(fs)
	fs.BoolVar(&smoke, "smoke", false, "the CI smoke test: one scenario, 100 nodes, 3 repetitions")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("bench", fmt.Errorf("unexpected arguments %q (use --scenarios)", fs.Args()))
	}
	names := strings.Split(suite, ",")
	if smoke {
		if !fs.Changed("scenarios") {
			names = SmokeSuite
		}
		if !fs.Changed("nodes") {
			f.nodes = 100
		}
		if !fs.Changed("repetitions") {
			f.reps = 3
		}
	} else {
		if !fs.Changed("nodes") {
			f.nodes = 1000
		}
		if !fs.Changed("repetitions") {
			f.reps = 5
		}
		// The full suite measures both controllers against the floor, the
		// best this cluster does with the pods alone; the smoke suite keeps
		// to the two controllers.
		if !fs.Changed("controller") {
			f.controllers = strings.Join(DefaultBenchControllers, ",")
		}
	}
	var bad flagErrors
	if writeBaseline != "" {
		if fs.Changed("baseline") && f.baseline != "" {
			bad.conflict("write-baseline", "baseline", "the old baseline does not gate its own replacement")
		}
		if which, err := f.controllerList(); err == nil && !bench.Gated(which) {
			bad.conflict("write-baseline", "controller "+f.controllers, "a baseline holds ours and upstream, and the external controller is neither")
		}
		f.baseline = ""
		bad.outputFile("write-baseline", writeBaseline)
	}
	validateTolerance(fs, &bad, tolerance, writeBaseline)
	f.validate(fs, &bad)
	for _, name := range names {
		if strings.TrimSpace(name) == "" {
			bad.add("scenarios", suite, "an empty name in the list")
			break
		}
	}
	if err := bad.err("bench"); err != nil {
		return err
	}
	err := play(ctx, env, "bench", &f, names, nil)
	if writeBaseline == "" || err != nil {
		return err
	}
	latest, lerr := latestReport(f.outBase)
	if lerr != nil {
		return lerr
	}
	r, rerr := reports.Read(latest)
	if rerr != nil {
		return rerr
	}
	if err := reports.WriteBaseline(writeBaseline, reports.NewBaseline(r, tolerance)); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "baseline written to %s\n", writeBaseline)
	return nil
}

// validateTolerance checks --tolerance, which only a new baseline records.
func validateTolerance(fs *pflag.FlagSet, bad *flagErrors, tolerance float64, writeBaseline string) {
	if math.IsNaN(tolerance) || math.IsInf(tolerance, 0) || tolerance < 1 {
		bad.add("tolerance", tolerance, "want a finite ratio of at least 1")
	}
	if fs.Changed("tolerance") && writeBaseline == "" {
		bad.add("tolerance", tolerance, "only a new baseline records it: give --write-baseline FILE too")
	}
}

func latestReport(base string) (string, error) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return "", fmt.Errorf("finding the latest report: %w", err)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		p := filepath.Join(base, entries[i].Name(), reports.ReportFile)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no report found in " + base)
}

func runReport(ctx context.Context, env Env, args []string) error {
	if len(args) > 0 && args[0] == "scale" {
		return runReportScale(ctx, env, args[1:])
	}
	fs := newFlagSet("report", "[flags] REPORT\n       dsbench report scale [flags] REPORT...  (see `dsbench report scale --help`)", env)
	baselinePath := fs.String("baseline", "", "baseline to gate against ('' for none)")
	out := fs.String("out", "", "write the outputs here (default: next to report.json)")
	writeBaseline := fs.String("write-baseline", "", "also make a baseline of this saved run and write it to this file")
	tolerance := fs.Float64("tolerance", reports.DefaultTolerance, "with --write-baseline: the median ratio beyond which a significant change fails the gate")
	if err := parse(fs, args); err != nil {
		return err
	}
	var bad flagErrors
	validateTolerance(fs, &bad, *tolerance, *writeBaseline)
	if *baselinePath != "" {
		bad.baseline("baseline", *baselinePath)
	}
	if fs.Changed("out") {
		bad.outputDir("out", *out)
	}
	if *writeBaseline != "" {
		bad.outputFile("write-baseline", *writeBaseline)
	}
	if fs.NArg() != 1 {
		bad = append(bad, errors.New("want one report.json (or the folder that holds it)"))
	}
	if err := bad.err("report"); err != nil {
		return err
	}
	path := reportPath(fs.Arg(0))
	r, err := reports.Read(path)
	if err != nil {
		return err
	}
	var b *reports.Baseline
	if *baselinePath != "" {
		if b, err = reports.ReadBaseline(*baselinePath); err != nil {
			return err
		}
	}
	dir := *out
	if dir == "" {
		dir = filepath.Dir(path)
	}
	if err := reports.Render(dir, r, b); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, reports.Summary(r))
	fmt.Fprintf(env.Stdout, "reports: %s\n", dir)
	if *writeBaseline != "" {
		if err := reports.WriteBaseline(*writeBaseline, reports.NewBaseline(r, *tolerance)); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "baseline written to %s\n", *writeBaseline)
	}
	return nil
}

func runCompare(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("compare", "OLD NEW", env)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usageError("compare", errors.New("want two saved runs: OLD NEW (report.json files or their folders)"))
	}
	a, err := reports.Read(reportPath(fs.Arg(0)))
	if err != nil {
		return err
	}
	b, err := reports.Read(reportPath(fs.Arg(1)))
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, reports.Compare(a, b).Markdown())
	return nil
}

func reportPath(p string) string {
	if info, err := os.Stat(p); err == nil && info.IsDir() {
		return filepath.Join(p, reports.ReportFile)
	}
	return p
}
