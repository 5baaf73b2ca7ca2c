package cli

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dsbench/dsbench/bench"
	"github.com/dsbench/dsbench/bench/floor"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// flagErrors collects every bad flag of a command line, each named with its
// value, so that one try reports them all, before any cluster or file work.
type flagErrors []error

// add records that --flag's value is bad, and why.
func (e *flagErrors) add(flag string, value any, format string, args ...any) {
	if s, ok := value.(string); ok {
		value = fmt.Sprintf("%q", s)
	}
	*e = append(*e, fmt.Errorf("--%s %v: %s", flag, value, fmt.Sprintf(format, args...)))
}

// conflict records two flags that cannot go together.
func (e *flagErrors) conflict(a, b, why string) {
	*e = append(*e, fmt.Errorf("--%s with --%s: %s", a, b, why))
}

// err is nil or a usage error of cmd listing every problem.
func (e flagErrors) err(cmd string) error {
	if len(e) == 0 {
		return nil
	}
	return usageError(cmd, errors.Join(e...))
}

func (e *flagErrors) positive(flag string, n int) {
	if n <= 0 {
		e.add(flag, n, "must be positive")
	}
}

func (e *flagErrors) notNegative(flag string, n int) {
	if n < 0 {
		e.add(flag, n, "must not be negative")
	}
}

// rate checks a rate or ratio: finite and not negative.
func (e *flagErrors) rate(flag string, f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		e.add(flag, f, "must be a finite number, not negative")
	}
}

// inputFile checks a file that must be there to be read.
func (e *flagErrors) inputFile(flag, path string) {
	info, err := os.Stat(path)
	switch {
	case err != nil:
		e.add(flag, path, "%v", cleanStatError(err))
	case !info.Mode().IsRegular():
		e.add(flag, path, "not a regular file")
	}
}

// outputDir checks a folder that is created if missing: it must not be a
// file.
func (e *flagErrors) outputDir(flag, path string) {
	if path == "" {
		e.add(flag, path, "must not be empty")
		return
	}
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		e.add(flag, path, "is a file, want a folder")
	}
}

// outputFile checks a file that is written at the end, so that a long run
// does not fail only then: its folder must exist, and it must not be one.
func (e *flagErrors) outputFile(flag, path string) {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		e.add(flag, path, "is a folder, want a file")
		return
	}
	if info, err := os.Stat(filepath.Dir(path)); err != nil || !info.IsDir() {
		e.add(flag, path, "its folder %s does not exist", filepath.Dir(path))
	}
}

func cleanStatError(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return errors.New("no such file")
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// validate checks the cluster flags. Only `cluster up` and a run that brings
// a cluster up use the timeout, port and parallelism, but a bad value is
// wrong wherever it is given.
func (f *clusterFlags) validate(e *flagErrors) {
	if errs := validation.IsDNS1123Label(f.name); len(errs) > 0 {
		e.add("name", f.name, "must be a DNS label (lower-case letters, digits and '-', at most 63)")
	}
	e.outputDir("workdir", f.workdir)
	if info, err := os.Stat(f.binDir); err == nil && !info.IsDir() {
		e.add("bin-dir", f.binDir, "is a file, want the folder of the control plane")
	}
	if f.port < 0 || f.port > 65535 {
		e.add("apiserver-port", f.port, "want 0 (a free one) to 65535")
	}
	e.positive("kwok-parallelism", f.parallelism)
	switch f.kwokLog {
	case "", "DEBUG", "INFO", "WARN", "ERROR":
	default:
		e.add("kwok-log-level", f.kwokLog, "want DEBUG, INFO, WARN or ERROR")
	}
	switch kwok.KwokWatch(f.kwokWatch) {
	case kwok.KwokWatchRelist, kwok.KwokWatchResume:
	default:
		e.add("kwok-watch", f.kwokWatch, "want %q or %q", kwok.KwokWatchRelist, kwok.KwokWatchResume)
	}
	if f.timeout <= 0 {
		e.add("timeout", f.timeout, "must be positive")
	}
	if f.kubeconfig != "" {
		e.inputFile("kubeconfig", f.kubeconfig)
	}
}

// withKubeconfig rejects flags that only shape a local KWOK cluster when
// --kubeconfig names another one.
func withKubeconfig(fs *pflag.FlagSet, e *flagErrors) {
	if !fs.Changed("kubeconfig") || fs.Lookup("kubeconfig").Value.String() == "" {
		return
	}
	for _, flag := range []string{"keep-cluster", "apiserver-port", "kwok-parallelism", "kwok-log-level", "kwok-watch", "upstream-daemonset-controller"} {
		if fs.Lookup(flag) != nil && fs.Changed(flag) {
			e.conflict(flag, "kubeconfig", "it shapes a local KWOK cluster, and --kubeconfig names another one")
		}
	}
}

// validate checks the flags of run and bench, after bench has filled in its
// defaults.
func (f *runFlags) validate(fs *pflag.FlagSet, e *flagErrors) {
	f.cluster.validate(e)
	withKubeconfig(fs, e)
	which, err := f.controllerList()
	if err != nil {
		*e = append(*e, err)
	}
	for i, c := range which {
		if slices.Contains(which[:i], c) {
			e.add("controller", f.controllers, "%s is listed twice", c)
		}
	}
	if f.nodes < 0 || f.nodes > scenarios.MaxNodes {
		e.add("nodes", f.nodes, "want 0 (the scenario's own) to %d", scenarios.MaxNodes)
	}
	if f.reps < 0 || f.reps > scenarios.MaxRepetitions {
		e.add("repetitions", f.reps, "want 0 (the scenario's own) to %d", scenarios.MaxRepetitions)
	}
	if f.warmup != warmupOn && f.warmup != warmupOff && f.warmup != warmupAuto {
		e.add("warmup", f.warmup, "want %q, %q or %q", warmupOn, warmupOff, warmupAuto)
	}
	e.positive("workers", f.workers)
	e.rate("kube-api-qps", f.qps)
	e.notNegative("kube-api-burst", f.burst)
	if fs.Changed("floor-inflight") {
		f.floorSearch = false
		if len(f.floorInFlight) == 0 {
			e.add("floor-inflight", "", "want at least one count")
		}
	}
	for _, n := range f.floorInFlight {
		if n <= 0 {
			e.add("floor-inflight", n, "want positive counts")
		}
	}
	e.rate("floor-qps", f.floorQPS)
	if _, bindErr := floor.ParseBinding(f.floorBind); bindErr != nil {
		e.add("floor-bind", f.floorBind, "want %q or %q", floor.BindNodeName, floor.BindScheduler)
	}
	if err == nil && !slices.Contains(which, bench.Floor) {
		for _, flag := range []string{"floor-inflight", "floor-qps", "floor-bind", "floor-watch"} {
			if fs.Changed(flag) {
				e.conflict(flag, "controller "+f.controllers, "it sets up the floor, which is not measured")
			}
		}
	}
	if err == nil && slices.Contains(which, bench.External) {
		f.validateExternal(fs, e, which)
	}
	if f.syncDelay < 0 {
		e.add("sync-delay", f.syncDelay, "must not be negative")
	}
	if err == nil && fs.Changed("sync-delay") && !slices.ContainsFunc(which, bench.Controller.IsOurs) {
		e.conflict("sync-delay", "controller "+f.controllers, "it slows our controller, which is not measured")
	}
	for _, a := range f.ctrlArgs {
		if err := bench.CheckControllerArg(a); err != nil {
			e.add("controller-arg", a, "%v", err)
		}
	}
	if err == nil && len(f.ctrlArgs) > 0 && !slices.ContainsFunc(which, bench.Controller.IsOurs) {
		e.conflict("controller-arg", "controller "+f.controllers, "it is an argument of our controller, which is not measured")
	}
	for _, kv := range f.ctrlEnv {
		if err := bench.CheckControllerEnv(kv); err != nil {
			e.add("controller-env", kv, "%v", err)
		}
	}
	if err == nil && len(f.ctrlEnv) > 0 && !slices.ContainsFunc(which, bench.Controller.IsOurs) {
		e.conflict("controller-env", "controller "+f.controllers, "it is in our controller's environment, and our controller is not measured")
	}
	if f.ctrlBinary != "" {
		e.inputFile("controller-binary", f.ctrlBinary)
	}
	e.outputDir("out", f.outBase)
	if f.record != "" {
		e.outputDir("record", f.record)
	}
	if f.baseline != "" {
		e.baseline("baseline", f.baseline)
	}
}

// validateExternal checks a run of the external controller: alone, on a
// cluster named by --kubeconfig, and without the flags that shape a
// controller the harness starts.
func (f *runFlags) validateExternal(fs *pflag.FlagSet, e *flagErrors, which []bench.Controller) {
	if len(which) > 1 {
		e.add("controller", f.controllers, "%s runs alone: %s", bench.External, bench.ExternalAloneReason)
	}
	if f.cluster.kubeconfig == "" {
		e.add("controller", f.controllers, "%s needs --kubeconfig, a cluster the harness does not bring up: %s", bench.External, bench.ExternalClusterReason)
	}
	for _, flag := range []string{"workers", "kube-api-qps", "kube-api-burst", "controller-binary"} {
		if fs.Changed(flag) {
			e.conflict(flag, "controller "+f.controllers, "it shapes a controller the harness starts, and it starts none")
		}
	}
}

// baseline checks a baseline to gate against: read now, since the gate
// comes only after the whole suite has run.
func (e *flagErrors) baseline(flag, path string) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		e.add(flag, path, "no such file (--%s '' runs without the gate)", flag)
		return
	}
	if _, err := reports.ReadBaseline(path); err != nil {
		e.add(flag, path, "%v", err)
	}
}
