package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dsbench/dsbench/bench"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// correctVariant is the row of the unbroken controller (DSBENCH_MUTANT unset).
const correctVariant = "correct"

// mutantTargets lists each broken variant of controller/mutants_on.go with
// the library scenarios that exercise its bug. The targeted matrix runs
// these; --matrix full runs every variant on every scenario.
var mutantTargets = []struct {
	name      string
	scenarios []string
}{
	{"create-on-noschedule", []string{"taint-churn", "node-churn"}},
	{"ignore-noexecute", []string{"taint-churn", "bench-churn-rollout"}},
	{"keep-after-label-change", []string{"label-churn-ssd", "bench-node-churn"}},
	{"surge-all", []string{"rolling-max-surge"}},
	{"exceed-max-unavailable", []string{"rolling-max-unavailable", "bench-rollout"}},
	{"double-create", []string{"bench-rollout", "node-churn"}},
	{"churn-healthy", []string{"node-churn", "label-churn-ssd"}},
	{"ignore-new-nodes", []string{"node-churn", "bench-node-churn"}},
	{"remember-deleted-nodes", []string{"node-churn"}},
	{"old-template-on-join", []string{"churn-during-rollout", "bench-churn-rollout"}},
	{"stop-rollout-halfway", []string{"rolling-max-unavailable", "bench-rollout"}},
	{"no-adoption", []string{"many-daemonsets"}},
	{"wrong-desired-count", []string{"label-churn-ssd", "taint-churn"}},
	{"hot-loop-on-error", []string{"chaos-reject-creates"}},
	{"no-status-on-error", []string{"chaos-reject-creates"}},
	{"create-beside-terminating", []string{"rolling-max-unavailable", "bench-repair"}},
	{"trust-write-timeouts", []string{"chaos-write-timeouts"}},
	{"ready-means-running", []string{"rollout-pods-unready"}},
}

// mutantCell is one variant on one scenario.
type mutantCell struct {
	Variant  string `json:"variant"`
	Scenario string `json:"scenario"`
	// Caught: an unexpected violation of a specific kind (not a timeout).
	Caught bool   `json:"caught"`
	Kind   string `json:"kind,omitempty"`
	Detail string `json:"detail,omitempty"`
	// FaultToCatch is seconds from the variant's first wrong action to the
	// start of the violation that caught it; -1 when no fault was recorded.
	FaultToCatch float64 `json:"faultToCatch"`
	// Faulted: the variant acted wrongly at all in this run.
	Faulted bool `json:"faulted"`
	// Timeouts are NotConverged and other unspecific findings.
	Timeouts int `json:"timeouts,omitempty"`
	// Spurious are specific violations that began before the variant's
	// first wrong action (or without any): not its bug, so no catch.
	Spurious []string `json:"spurious,omitempty"`
	Outcome  string   `json:"outcome"`
	Error    string   `json:"error,omitempty"`
	Seconds  float64  `json:"seconds"`
}

// specificKind says whether a violation names what went wrong, rather
// than only that something did not finish in time.
func specificKind(k string) bool {
	switch scenarios.ViolationKind(k) {
	case scenarios.NotConverged, scenarios.StepFailed, "ExpectedViolationMissing":
		return false
	}
	return true
}

// judgeMutantRun turns a run of a variant into its cell.
func judgeMutantRun(variant string, run reports.Run, fault time.Time) mutantCell {
	c := mutantCell{Variant: variant, Scenario: run.Scenario, Outcome: run.Outcome, Error: run.Error,
		FaultToCatch: -1, Faulted: !fault.IsZero(), Seconds: run.End.Sub(run.Start).Seconds()}
	vs := slices.Clone(run.Violations)
	slices.SortStableFunc(vs, func(a, b reports.Violation) int { return a.Start.Compare(b.Start) })
	for _, v := range vs {
		if v.Expected {
			continue
		}
		if !specificKind(v.Kind) {
			c.Timeouts++
			continue
		}
		// The oracle may see the fault's effect before the variant's own
		// clock wrote it down, but not long before.
		if variant != correctVariant && (fault.IsZero() || v.Start.Before(fault.Add(-time.Second))) {
			c.Spurious = append(c.Spurious, v.Kind)
			continue
		}
		if !c.Caught {
			c.Caught, c.Kind, c.Detail = true, v.Kind, v.Detail
			if !fault.IsZero() {
				c.FaultToCatch = v.Start.Sub(fault).Seconds()
			}
		}
	}
	for _, st := range run.Steps {
		if !st.Converged && !st.ExpectedNotConverged {
			c.Timeouts++
		}
	}
	return c
}

// firstFault reads the earliest fault line of a variant's fault file.
func firstFault(path string) (time.Time, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	var first time.Time
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		stamp, _, _ := strings.Cut(sc.Text(), " ")
		t, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: bad fault line %q: %w", path, sc.Text(), err)
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first, sc.Err()
}

func runMutants(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet("mutants", "[flags]", env)
	var f runFlags
	f.cluster.register(fs, env)
	fs.StringVar(&f.cluster.kubeconfig, "kubeconfig", "", "run against this cluster instead of a local KWOK cluster")
	fs.StringVar(&f.ctrlBinary, "controller-binary", "", "the controller built with -tags mutants (default: CACHE/daemonset-controller-mutants)")
	fs.IntVar(&f.nodes, "nodes", 100, "scale every scenario to this many nodes")
	fs.StringVar(&f.outBase, "out", filepath.Join("reports", "out"), "the table goes to OUT/mutants-<timestamp>/")
	fs.BoolVar(&f.keep, "keep-cluster", false, "leave the KWOK cluster up afterwards")
	var only, onlyScenarios []string
	var matrix string
	var withCorrect bool
	var record string
	fs.StringSliceVar(&only, "mutants", nil, "variants to run (default: all)")
	fs.StringSliceVar(&onlyScenarios, "scenarios", nil, "limit to these library scenarios")
	fs.StringVar(&matrix, "matrix", "targeted", "targeted: each variant on the scenarios that exercise its bug; full: every variant on every scenario")
	fs.BoolVar(&withCorrect, "correct", true, "also run the correct controller on every scenario of the matrix, which must be clean")
	fs.StringVar(&record, "record", "", "write a journal of each run's oracle inputs to DIR/<variant>-<scenario>.jsonl.gz, replayed by bench's TestReplayStreams")
	if err := parse(fs, args); err != nil {
		return err
	}
	var bad flagErrors
	f.cluster.validate(&bad)
	withKubeconfig(fs, &bad)
	if f.nodes <= 0 || f.nodes > scenarios.MaxNodes {
		bad.add("nodes", f.nodes, "want a node count from 1 to %d", scenarios.MaxNodes)
	}
	if matrix != "targeted" && matrix != "full" {
		bad.add("matrix", matrix, "want targeted or full")
	}
	known := map[string][]string{}
	var names []string
	for _, m := range mutantTargets {
		known[m.name] = m.scenarios
		names = append(names, m.name)
	}
	for _, m := range only {
		if _, ok := known[m]; !ok {
			bad.add("mutants", m, "unknown variant: want %s", strings.Join(names, ", "))
		}
	}
	for _, sc := range onlyScenarios {
		if !slices.Contains(scenarios.Library(), sc) {
			bad.add("scenarios", sc, "not a library scenario (see `dsbench library`)")
		}
	}
	if f.ctrlBinary != "" {
		bad.inputFile("controller-binary", f.ctrlBinary)
	}
	bad.outputDir("out", f.outBase)
	if record != "" {
		bad.outputDir("record", record)
	}
	if fs.NArg() > 0 {
		bad = append(bad, fmt.Errorf("unexpected arguments %q (use --scenarios)", fs.Args()))
	}
	if err := bad.err("mutants"); err != nil {
		return err
	}
	type cellRun struct{ variant, scenario string }
	var plan []cellRun
	all := scenarios.Library()
	inScope := func(sc string) bool { return len(onlyScenarios) == 0 || slices.Contains(onlyScenarios, sc) }
	used := map[string]bool{}
	for _, m := range mutantTargets {
		if len(only) > 0 && !slices.Contains(only, m.name) {
			continue
		}
		list := m.scenarios
		if matrix == "full" {
			list = all
		}
		for _, sc := range list {
			if inScope(sc) {
				plan = append(plan, cellRun{m.name, sc})
				used[sc] = true
			}
		}
	}
	if withCorrect {
		for _, sc := range all {
			if used[sc] || (len(only) == 0 && inScope(sc)) {
				plan = append(plan, cellRun{correctVariant, sc})
			}
		}
	}
	if len(plan) == 0 {
		return usageError("mutants", errors.New("nothing to run: no variant targets the chosen scenarios"))
	}
	loaded := map[string]*scenarios.Scenario{}
	for _, c := range plan {
		if loaded[c.scenario] != nil {
			continue
		}
		sc, _, err := scenarios.LoadLibrary(c.scenario)
		if err != nil {
			return err
		}
		if _, err := scenarios.Scale(sc, f.nodes); err != nil {
			return usageError("mutants", fmt.Errorf("--nodes: %s: %w", c.scenario, err))
		}
		sc.Repetitions = 1
		loaded[c.scenario] = sc
	}

	bin := f.ctrlBinary
	if bin == "" {
		bin = filepath.Join(kwok.CacheDir(), "daemonset-controller-mutants")
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("the mutants build %s: %w (run `make mutants`, which builds it with -tags mutants)", bin, err)
	}
	kubeconfig, cfg, cluster, down, err := openCluster(ctx, env, &f)
	owns := cluster != nil
	if err != nil {
		return err
	}
	defer down()
	out := filepath.Join(f.outBase, "mutants-"+time.Now().UTC().Format("20060102T150405Z"))
	if err := os.MkdirAll(filepath.Join(out, "runs"), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", out, err)
	}
	if err := os.MkdirAll(filepath.Join(out, "faults"), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", out, err)
	}
	progress := bench.NewProgress(env.Stderr, false)
	var cells []mutantCell
	save := func() error {
		if err := writeJSON(filepath.Join(out, "mutants.json"), cells); err != nil {
			return err
		}
		return writeFileAtomic(filepath.Join(out, "mutants.md"), []byte(mutantTable(cells)))
	}
	for _, c := range plan {
		if ctx.Err() != nil {
			break
		}
		faults := filepath.Join(out, "faults", c.variant+"-"+c.scenario+".txt")
		ctrl := bench.ControllerConfig{Workers: 5}
		if c.variant != correctVariant {
			ctrl.Env = []string{"DSBENCH_MUTANT=" + c.variant, "DSBENCH_MUTANT_FAULTS=" + faults}
		}
		runner, err := bench.NewRunner(bench.Config{
			REST: cfg, Kubeconfig: kubeconfig, OwnsCluster: owns, ClusterFaults: clusterFaults(cluster), Controller: ctrl,
			Binaries: map[bench.Controller]string{bench.Ours: bin},
			Nodes:    f.nodes, LogDir: filepath.Join(out, "logs", c.variant), Progress: progress,
			StopAtViolation: c.variant != correctVariant,
			JournalDir:      record, Variant: c.variant,
		})
		if err != nil {
			return err
		}
		run := runner.Run(ctx, loaded[c.scenario], bench.Ours, 0)
		progress.Done()
		fault, err := firstFault(faults)
		if err != nil {
			return err
		}
		// The whole run, violations with their details included, for
		// whoever has to find out why a cell is what it is.
		if err := writeJSON(filepath.Join(out, "runs", c.variant+"-"+c.scenario+".json"), run); err != nil {
			return err
		}
		cell := judgeMutantRun(c.variant, run, fault)
		fmt.Fprintf(env.Stderr, "%s on %s: %s (%.0fs)\n", c.variant, c.scenario, cellText(cell, true), cell.Seconds)
		cells = append(cells, cell)
		if err := save(); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted; partial table in %s: %w", out, err)
	}
	fmt.Fprint(env.Stdout, mutantTable(cells))
	fmt.Fprintf(env.Stdout, "table: %s\n", filepath.Join(out, "mutants.md"))
	if problems := mutantVerdict(cells); len(problems) > 0 {
		return fmt.Errorf("the mutants gate failed: %s", strings.Join(problems, "; "))
	}
	return nil
}

// mutantVerdict lists what fails the gate: a variant no scenario caught by
// a specific kind, or a finding on the correct controller.
func mutantVerdict(cells []mutantCell) []string {
	var problems []string
	caught := map[string]bool{}
	var variants []string
	for _, c := range cells {
		if len(c.Spurious) > 0 {
			problems = append(problems, fmt.Sprintf("%s on %s: %s before any fault (a finding a correct controller could have caused)", c.Variant, c.Scenario, strings.Join(c.Spurious, ", ")))
		}
		if c.Variant == correctVariant {
			if c.Caught || c.Timeouts > 0 || c.Outcome != reports.OutcomeOK {
				problems = append(problems, fmt.Sprintf("the correct controller is not clean on %s (%s%s)", c.Scenario, c.Kind, errSuffix(c.Error)))
			}
			continue
		}
		if !slices.Contains(variants, c.Variant) {
			variants = append(variants, c.Variant)
		}
		caught[c.Variant] = caught[c.Variant] || c.Caught
	}
	for _, v := range variants {
		if !caught[v] {
			problems = append(problems, v+" was caught by no scenario")
		}
	}
	return problems
}

// mutantTable renders the cells as a Markdown table, variant × scenario.
func mutantTable(cells []mutantCell) string {
	var variants, scs []string
	byKey := map[[2]string]mutantCell{}
	for _, c := range cells {
		if !slices.Contains(variants, c.Variant) {
			variants = append(variants, c.Variant)
		}
		if !slices.Contains(scs, c.Scenario) {
			scs = append(scs, c.Scenario)
		}
		byKey[[2]string{c.Variant, c.Scenario}] = c
	}
	slices.Sort(scs)
	var b strings.Builder
	b.WriteString("| variant | " + strings.Join(scs, " | ") + " |\n|---|" + strings.Repeat("---|", len(scs)) + "\n")
	for _, v := range variants {
		row := []string{v}
		for _, sc := range scs {
			c, ok := byKey[[2]string{v, sc}]
			row = append(row, cellText(c, ok))
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	return b.String()
}

func cellText(c mutantCell, ran bool) string {
	switch {
	case !ran:
		return "·"
	case c.Variant == correctVariant && !c.Caught && c.Timeouts == 0 && c.Outcome == reports.OutcomeOK:
		return "clean"
	case c.Variant == correctVariant:
		return fmt.Sprintf("**NOT CLEAN** (%s, %d timeouts)", c.Kind, c.Timeouts)
	case len(c.Spurious) > 0 && !c.Caught:
		return fmt.Sprintf("**missed** (%s before any fault)", strings.Join(c.Spurious, ", "))
	case c.Caught:
		// Slightly negative when the oracle's clock saw the effect before
		// the variant's process wrote its fault down.
		return fmt.Sprintf("%s +%.1fs", c.Kind, max(0, c.FaultToCatch))
	case !c.Faulted:
		return "missed (no fault)"
	case c.Timeouts > 0:
		return "missed (timeout only)"
	}
	return "**missed**"
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'))
}

// writeFileAtomic writes through a temporary file and a rename, so that an
// interrupted write never leaves half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := io.Copy(tmp, strings.NewReader(string(data))); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
