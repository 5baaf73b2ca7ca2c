package cli

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// DefaultScaleSizes are the node counts `dsbench scale` (and make
// bench-scale) runs at.
var DefaultScaleSizes = []int{100, 500, 1000, 2000, 5000}

// DefaultScaleScenarios are what `dsbench scale` plays when given none: a
// create and a rolling update, the two steps the curves are about.
var DefaultScaleScenarios = []string{"bench-rollout"}

func runScale(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("scale", "[flags] [SCENARIO...]", env)
	var f runFlags
	f.registerPlay(fs, env, strings.Join(DefaultBenchControllers, ","))
	// As bench: the floor's pacings worth a trial at each size.
	f.searchFloorPacing(fs)
	sizes := fs.String("sizes", joinInts(DefaultScaleSizes), "node counts to play every scenario at, increasing (comma-separated); each gets its own report in OUT/<timestamp>/nodes-N/")
	if err := parse(fs, args); err != nil {
		return err
	}
	var bad flagErrors
	nodes, err := parseSizes(*sizes)
	if err != nil {
		bad.add("sizes", *sizes, "%v", err)
	}
	f.validate(fs, &bad)
	if err := bad.err("scale"); err != nil {
		return err
	}
	names := fs.Args()
	if len(names) == 0 {
		names = DefaultScaleScenarios
	}
	return scale(ctx, env, &f, nodes, names)
}

// parseSizes reads --sizes: positive node counts, each larger than the one
// before, at most scenarios.MaxNodes.
func parseSizes(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("want node counts, e.g. 100,500,1000")
	}
	var out []int
	for _, field := range strings.Split(s, ",") {
		field = strings.TrimSpace(field)
		n, err := strconv.Atoi(field)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%q is not a whole number of nodes", field)
		case n <= 0:
			return nil, fmt.Errorf("%d: node counts must be positive", n)
		case n > scenarios.MaxNodes:
			return nil, fmt.Errorf("%d: at most %d nodes are supported", n, scenarios.MaxNodes)
		case len(out) > 0 && n <= out[len(out)-1]:
			return nil, fmt.Errorf("%d after %d: want increasing node counts, each once", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	return out, nil
}

// scale plays the scenarios once per node count, each count a suite of its
// own in OUT/<timestamp>/nodes-N/ (a report as `dsbench run --nodes N`
// writes), then composes the scaling report of all of them in
// OUT/<timestamp>/. A count whose suite breaks off ends the sweep; the
// scaling report is still made of the counts played so far. Invariants
// that do not hold for our controller at some count fail the command once
// everything is written.
func scale(ctx context.Context, env Env, f *runFlags, sizes []int, names []string) error {
	st, done, err := openStage(ctx, env, "scale", f, names, "sizes", sizes, nil)
	if err != nil {
		return err
	}
	defer done()
	base := reports.OutDir(f.outBase, time.Now())
	var made, broken []string
	var sweepErr error
	for _, n := range sizes {
		name := fmt.Sprintf("nodes-%d", n)
		fmt.Fprintf(env.Stderr, "scale: %d nodes\n", n)
		journals := ""
		if f.record != "" {
			journals = filepath.Join(f.record, name)
		}
		dir := filepath.Join(base, name)
		res, err := st.play(ctx, st.suite(n, dir, journals))
		if _, statErr := os.Stat(filepath.Join(dir, reports.ReportFile)); statErr == nil {
			made = append(made, filepath.Join(dir, reports.ReportFile))
		}
		if err != nil {
			sweepErr = fmt.Errorf("scale at %d nodes: %w", n, err)
			break
		}
		if !res.Verdict.Pass {
			broken = append(broken, fmt.Sprintf("%d nodes (%s)", n, strings.Join(res.Verdict.Findings, "; ")))
		}
	}
	if len(made) > 0 {
		if err := composeScale(env, base, made); err != nil {
			return errors.Join(sweepErr, err)
		}
	}
	if sweepErr != nil {
		return sweepErr
	}
	if len(broken) > 0 {
		return fmt.Errorf("invariants do not hold for %s at %s: see each count's %s", judgedName(st.which), strings.Join(broken, ", "), reports.MarkdownFile)
	}
	return nil
}

// runReportScale is `dsbench report scale`: the scaling report of reports
// made separately.
func runReportScale(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("report scale", "[flags] REPORT...", env)
	out := fs.String("out", "", "write scale.json, scale.md, scale.html and the plots here (default: the folder given, when only one is)")
	if err := parse(fs, args); err != nil {
		return err
	}
	var bad flagErrors
	if fs.Changed("out") {
		bad.outputDir("out", *out)
	}
	dir := *out
	if fs.NArg() == 0 {
		bad = append(bad, errors.New("want report.json files, or folders to search for them (e.g. a `dsbench scale` run's OUT/<timestamp>)"))
	} else if dir == "" {
		if info, err := os.Stat(fs.Arg(0)); fs.NArg() == 1 && err == nil && info.IsDir() {
			dir = fs.Arg(0)
		} else {
			bad = append(bad, errors.New("want --out: the reports are not one folder to write next to"))
		}
	}
	if err := bad.err("report scale"); err != nil {
		return err
	}
	paths, err := findReports(fs.Args())
	if err != nil {
		return err
	}
	return composeScale(env, dir, paths)
}

// findReports lists the report.json files of args: files as given, folders
// searched to any depth. A folder without one is an error, and so is a
// path that is not there. A file found twice is read once.
func findReports(args []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		if !seen[abs] {
			seen[abs] = true
			out = append(out, p)
		}
	}
	var errs []error
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", arg, cleanStatError(err)))
			continue
		}
		if !info.IsDir() {
			add(arg)
			continue
		}
		var found []string
		err = filepath.WalkDir(arg, func(p string, d iofs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Name() == reports.ReportFile {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("searching %s for %s: %w", arg, reports.ReportFile, err))
			continue
		}
		if len(found) == 0 {
			errs = append(errs, fmt.Errorf("%s: no %s in it or below it", arg, reports.ReportFile))
		}
		slices.Sort(found)
		for _, p := range found {
			add(p)
		}
	}
	return out, errors.Join(errs...)
}

// composeScale reads the reports, analyzes them and renders the scaling
// report into dir. Each report is named relative to dir where it lies below
// it, so that scale.md reads the same wherever the folder moves.
func composeScale(env Env, dir string, paths []string) error {
	var sources []reports.ScaleSource
	var errs []error
	for _, p := range paths {
		r, err := reports.Read(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sources = append(sources, reports.ScaleSource{Path: p, Name: displayPath(dir, p), Report: r})
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s, err := reports.AnalyzeScale(sources, time.Now(), reports.DefaultScaleOptions())
	if err != nil {
		return err
	}
	if err := reports.RenderScale(dir, s); err != nil {
		return err
	}
	fitted := 0
	for _, se := range s.Series {
		if se.Linear != nil {
			fitted++
		}
	}
	fmt.Fprintf(env.Stdout, "scaling report of %d reports: %d series, %d fitted: %s\n", len(sources), len(s.Series), fitted, filepath.Join(dir, reports.ScaleMarkdownFile))
	for _, n := range s.Notes {
		fmt.Fprintf(env.Stdout, "note: %s\n", n)
	}
	return nil
}

// displayPath is p relative to dir when it lies below it, else p.
func displayPath(dir, p string) string {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return filepath.ToSlash(rel)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
