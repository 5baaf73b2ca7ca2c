package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/dsbench/dsbench/bench"
	"github.com/dsbench/dsbench/scenarios"
)

// isolatedEnv points the cache (control plane, controller binaries,
// clusters) at an empty folder, so that a command that got past its flag
// checks fails on a missing binary, not by touching a cluster.
func isolatedEnv(t *testing.T) Env {
	t.Helper()
	cache := t.TempDir()
	t.Setenv("DSBENCH_CACHE", cache)
	env, _, _ := testEnv()
	env.Getenv = func(k string) string {
		if k == "DSBENCH_CACHE" {
			return cache
		}
		return ""
	}
	return env
}

// flagFixtures are paths the cases refer to.
type flagFixtures struct {
	file, dir, missing, garbage, baseline string
}

func newFlagFixtures(t *testing.T) flagFixtures {
	dir := t.TempDir()
	f := flagFixtures{
		file:     filepath.Join(dir, "a-file"),
		dir:      dir,
		missing:  filepath.Join(dir, "missing.json"),
		garbage:  filepath.Join(dir, "garbage.json"),
		baseline: filepath.Join("..", "..", "reports", "testdata", "baseline.json"),
	}
	for path, data := range map[string]string{f.file: "x", f.garbage: "{not json"} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

type flagCase struct {
	name string
	args []string
	// want are substrings of the error: the flag and its value.
	want []string
}

// checkFlagCases runs each command line and wants a usage error, raised
// before any cluster or file work, naming the flag and the bad value.
func checkFlagCases(t *testing.T, tests []flagCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := isolatedEnv(t)
			err := Main(t.Context(), env, tt.args)
			if err == nil {
				t.Fatalf("dsbench %s succeeded, want a usage error", strings.Join(tt.args, " "))
			}
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("dsbench %s: %v\nwant a usage error, raised before any cluster or file work", strings.Join(tt.args, " "), err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

// args builds a command line.
func args(a ...string) []string { return a }

func TestRunFlags(t *testing.T) {
	fx := newFlagFixtures(t)
	run := func(a ...string) []string { return append(append([]string{"run"}, a...), "bench-rollout") }
	checkFlagCases(t, []flagCase{
		{"negative nodes", run("--nodes", "-1"), []string{"--nodes -1"}},
		{"too many nodes", run("--nodes", "1000000"), []string{"--nodes 1000000"}},
		{"negative repetitions", run("--repetitions", "-2"), []string{"--repetitions -2"}},
		{"too many repetitions", run("--repetitions", "5000"), []string{"--repetitions 5000"}},
		{"no workers", run("--workers", "0"), []string{"--workers 0", "positive"}},
		{"negative qps", run("--kube-api-qps", "-1"), []string{"--kube-api-qps -1"}},
		{"NaN qps", run("--kube-api-qps", "NaN"), []string{"--kube-api-qps NaN"}},
		{"negative burst", run("--kube-api-burst", "-3"), []string{"--kube-api-burst -3"}},
		{"unknown controller", run("--controller", "ours,best"), []string{"--controller", `"best"`}},
		{"empty controller", run("--controller", ""), []string{"--controller", `""`}},
		{"controller twice", run("--controller", "ours,upstream,ours"), []string{`--controller "ours,upstream,ours"`, "twice"}},
		{"zero floor pacing", run("--controller", "floor", "--floor-inflight", "8,0"), []string{"--floor-inflight 0"}},
		{"negative floor pacing", run("--controller", "floor", "--floor-inflight", "-8"), []string{"--floor-inflight -8"}},
		{"negative floor qps", run("--controller", "floor", "--floor-qps", "-1"), []string{"--floor-qps -1"}},
		{"floor pacing without the floor", run("--floor-inflight", "8"), []string{"--floor-inflight with --controller ours"}},
		{"unknown floor binding", run("--controller", "floor", "--floor-bind", "kubelet"), []string{`--floor-bind "kubelet"`, `want "direct" or "scheduler"`}},
		{"floor binding without the floor", run("--floor-bind", "scheduler"), []string{"--floor-bind with --controller ours"}},
		{"floor watch without the floor", run("--controller", "ours-direct", "--floor-watch"), []string{"--floor-watch with --controller ours-direct"}},
		{"floor informers without a kubeconfig", args("floor-informers"), []string{"--kubeconfig: want the cluster's kubeconfig"}},
		{"floor informers with arguments", args("floor-informers", "--kubeconfig", "k", "extra"), []string{`unexpected arguments ["extra"]`}},
		{"bad warmup", run("--warmup", "yes"), []string{`--warmup "yes"`, `"on", "off" or "auto"`}},
		{"negative sync delay", run("--sync-delay", "-1s"), []string{"--sync-delay -1s"}},
		{"sync delay without ours", run("--controller", "upstream", "--sync-delay", "1s"), []string{"--sync-delay with --controller upstream"}},
		{"controller arg that sets the bind mode", run("--controller-arg=--bind-mode=direct"), []string{`--controller-arg "--bind-mode=direct"`, "bind mode"}},
		{"controller arg the harness sets", run("--controller-arg=--kube-api-burst=5"), []string{`--controller-arg "--kube-api-burst=5"`, "the harness sets --kube-api-burst itself"}},
		{"controller arg not a flag", run("--controller-arg", "adaptive"), []string{`--controller-arg "adaptive"`, "want a flag"}},
		{"controller arg without ours", run("--controller", "upstream,floor", "--controller-arg=--create-pacing=adaptive"), []string{"--controller-arg with --controller upstream,floor"}},
		{"controller env without a value", run("--controller-env", "GOGC"), []string{`--controller-env "GOGC"`, "want NAME=VALUE"}},
		{"controller env with a bad name", run("--controller-env", "9LIVES=1"), []string{`--controller-env "9LIVES=1"`, "want NAME=VALUE"}},
		{"controller env the harness sets", run("--controller-env", "DSBENCH_MUTANT=surge-all"), []string{`--controller-env "DSBENCH_MUTANT=surge-all"`, "the harness sets DSBENCH_* variables itself"}},
		{"GOGC the runtime would ignore", run("--controller-env", "GOGC=fast"), []string{`--controller-env "GOGC=fast"`, "want off or a percentage"}},
		{"GOMEMLIMIT the runtime refuses", run("--controller-env", "GOMEMLIMIT=100MB"), []string{`--controller-env "GOMEMLIMIT=100MB"`, "KiB, MiB"}},
		{"controller env without ours", run("--controller", "upstream,floor", "--controller-env=GOGC=50"), []string{"--controller-env with --controller upstream,floor"}},
		{"name not a DNS label", run("--name", "Not_A_Label"), []string{`--name "Not_A_Label"`, "DNS label"}},
		{"zero timeout", run("--timeout", "0"), []string{"--timeout 0s"}},
		{"negative timeout", run("--timeout", "-1m"), []string{"--timeout -1m0s"}},
		{"port out of range", run("--apiserver-port", "70000"), []string{"--apiserver-port 70000"}},
		{"no kwok parallelism", run("--kwok-parallelism", "0"), []string{"--kwok-parallelism 0"}},
		{"kwok log level in lower case", run("--kwok-log-level", "debug"), []string{`--kwok-log-level "debug"`, "DEBUG, INFO, WARN or ERROR"}},
		{"kwok watch unknown", run("--kwok-watch", "replay"), []string{`--kwok-watch "replay"`, `want "relist" or "resume"`}},
		{"missing baseline", run("--baseline", fx.missing), []string{"--baseline", "missing.json", "no such file"}},
		{"baseline not JSON", run("--baseline", fx.garbage), []string{"--baseline", "garbage.json", "JSON"}},
		{"baseline a folder", run("--baseline", fx.dir), []string{"--baseline", fx.dir}},
		{"out a file", run("--out", fx.file), []string{"--out", "a-file", "is a file"}},
		{"empty out", run("--out", ""), []string{`--out ""`}},
		{"record a file", run("--record", fx.file), []string{"--record", "a-file"}},
		{"missing controller binary", run("--controller-binary", fx.missing), []string{"--controller-binary", "no such file"}},
		{"missing kubeconfig", run("--kubeconfig", fx.missing), []string{"--kubeconfig", "no such file"}},
		{"kubeconfig and keep-cluster", run("--kubeconfig", fx.file, "--keep-cluster"), []string{"--keep-cluster with --kubeconfig"}},
		{"kubeconfig and port", run("--kubeconfig", fx.file, "--apiserver-port", "6443"), []string{"--apiserver-port with --kubeconfig"}},
		{"workdir a file", run("--workdir", fx.file), []string{"--workdir", "is a file"}},
		{"bin-dir a file", run("--bin-dir", fx.file), []string{"--bin-dir", "is a file"}},
		{"external beside ours", run("--kubeconfig", fx.file, "--controller", "external,ours"),
			[]string{`--controller "external,ours"`, "external runs alone", "fight over the same DaemonSets"}},
		{"external beside the floor", run("--kubeconfig", fx.file, "--controller", "floor,external"), []string{`--controller "floor,external"`, "runs alone"}},
		{"external without kubeconfig", run("--controller", "external"),
			[]string{`--controller "external"`, "needs --kubeconfig", "built-in DaemonSet controller is off"}},
		{"external with workers", run("--kubeconfig", fx.file, "--controller", "external", "--workers", "3"), []string{"--workers with --controller external", "starts none"}},
		{"external with qps", run("--kubeconfig", fx.file, "--controller", "external", "--kube-api-qps", "50"), []string{"--kube-api-qps with --controller external"}},
		{"external with our binary", run("--kubeconfig", fx.file, "--controller", "external", "--controller-binary", fx.file), []string{"--controller-binary with --controller external"}},
		{"external with sync delay", run("--kubeconfig", fx.file, "--controller", "external", "--sync-delay", "1s"), []string{"--sync-delay with --controller external"}},
		{"external with a controller arg", run("--kubeconfig", fx.file, "--controller", "external", "--controller-arg=--create-pacing=adaptive"), []string{"--controller-arg with --controller external"}},
		{"no scenario", args("run"), []string{"want scenario files"}},
		{"every problem at once", run("--nodes", "-1", "--workers", "0", "--timeout", "0"), []string{"--nodes -1", "--workers 0", "--timeout 0s"}},
	})
}

func TestBenchFlags(t *testing.T) {
	fx := newFlagFixtures(t)
	bench := func(a ...string) []string { return append([]string{"bench", "--baseline", fx.baseline}, a...) }
	checkFlagCases(t, []flagCase{
		// bench/baseline.json is relative to the repository's root.
		{"default baseline missing here", args("bench"), []string{`--baseline "bench/baseline.json"`, "no such file"}},
		{"missing baseline", args("bench", "--baseline", fx.missing), []string{"--baseline", "no such file", "''"}},
		{"negative nodes", bench("--nodes", "-5"), []string{"--nodes -5"}},
		{"no workers", bench("--workers", "-1"), []string{"--workers -1"}},
		{"unknown controller", bench("--controller", "theirs"), []string{"--controller", `"theirs"`}},
		{"smoke and floor pacing", bench("--smoke", "--floor-inflight", "8"), []string{"--floor-inflight with --controller both"}},
		{"tolerance below 1", bench("--write-baseline", filepath.Join(fx.dir, "b.json"), "--tolerance", "0.5"), []string{"--tolerance 0.5"}},
		{"tolerance without a new baseline", bench("--tolerance", "1.5"), []string{"--tolerance 1.5", "--write-baseline"}},
		{"write-baseline and baseline", bench("--write-baseline", filepath.Join(fx.dir, "b.json")), []string{"--write-baseline with --baseline"}},
		{"write-baseline of external", args("bench", "--kubeconfig", fx.file, "--controller", "external", "--write-baseline", filepath.Join(fx.dir, "b.json")),
			[]string{"--write-baseline with --controller external", "baseline holds ours and upstream"}},
		{"write-baseline a folder", args("bench", "--write-baseline", fx.dir), []string{"--write-baseline", "is a folder"}},
		{"write-baseline nowhere", args("bench", "--write-baseline", filepath.Join(fx.missing, "b.json")), []string{"--write-baseline", "does not exist"}},
		{"empty scenario name", bench("--scenarios", "bench-rollout,,node-churn"), []string{`--scenarios "bench-rollout,,node-churn"`}},
		{"out a file", bench("--out", fx.file), []string{"--out", "is a file"}},
		{"name not a DNS label", bench("--name", "-x"), []string{`--name "-x"`}},
		{"zero timeout", bench("--timeout", "0s"), []string{"--timeout 0s"}},
		{"arguments", bench("bench-rollout"), []string{"unexpected arguments"}},
	})
}

func TestMutantsFlags(t *testing.T) {
	fx := newFlagFixtures(t)
	checkFlagCases(t, []flagCase{
		{"no nodes", args("mutants", "--nodes", "0"), []string{"--nodes 0"}},
		{"too many nodes", args("mutants", "--nodes", "200000"), []string{"--nodes 200000"}},
		{"unknown matrix", args("mutants", "--matrix", "diagonal"), []string{`--matrix "diagonal"`}},
		{"unknown variant", args("mutants", "--mutants", "surge-all,fly"), []string{`--mutants "fly"`, "surge-all"}},
		{"unknown scenario", args("mutants", "--scenarios", "node-churn,nod-churn"), []string{`--scenarios "nod-churn"`}},
		{"out a file", args("mutants", "--out", fx.file), []string{"--out", "is a file"}},
		{"record a file", args("mutants", "--record", fx.file), []string{"--record", "is a file"}},
		{"missing controller binary", args("mutants", "--controller-binary", fx.missing), []string{"--controller-binary", "no such file"}},
		{"missing kubeconfig", args("mutants", "--kubeconfig", fx.missing), []string{"--kubeconfig", "no such file"}},
		{"kubeconfig and keep-cluster", args("mutants", "--kubeconfig", fx.file, "--keep-cluster"), []string{"--keep-cluster with --kubeconfig"}},
		{"name not a DNS label", args("mutants", "--name", "UPPER"), []string{`--name "UPPER"`}},
		{"zero timeout", args("mutants", "--timeout", "0"), []string{"--timeout 0s"}},
		{"arguments", args("mutants", "node-churn"), []string{"unexpected arguments"}},
	})
}

func TestClusterFlags(t *testing.T) {
	fx := newFlagFixtures(t)
	var tests []flagCase
	for _, sub := range []string{"up", "down", "status"} {
		c := func(a ...string) []string { return append([]string{"cluster", sub}, a...) }
		tests = append(tests,
			flagCase{sub + " zero timeout", c("--timeout", "0"), []string{"cluster " + sub, "--timeout 0s"}},
			flagCase{sub + " negative timeout", c("--timeout", "-5s"), []string{"--timeout -5s"}},
			flagCase{sub + " name not a DNS label", c("--name", "Not_A_Label"), []string{`--name "Not_A_Label"`}},
			flagCase{sub + " long name", c("--name", strings.Repeat("a", 64)), []string{"--name", "DNS label"}},
			flagCase{sub + " negative port", c("--apiserver-port", "-1"), []string{"--apiserver-port -1"}},
			flagCase{sub + " port out of range", c("--apiserver-port", "65536"), []string{"--apiserver-port 65536"}},
			flagCase{sub + " negative kwok parallelism", c("--kwok-parallelism", "-1"), []string{"--kwok-parallelism -1"}},
			flagCase{sub + " workdir a file", c("--workdir", fx.file), []string{"--workdir", "is a file"}},
			flagCase{sub + " bin-dir a file", c("--bin-dir", fx.file), []string{"--bin-dir", "is a file"}},
			flagCase{sub + " arguments", c("extra"), []string{"unexpected arguments"}},
		)
	}
	tests = append(tests,
		flagCase{"down all and name", args("cluster", "down", "--all", "--name", "x"), []string{"--all with --name"}},
		flagCase{"no subcommand", args("cluster"), []string{"want a subcommand"}},
		flagCase{"unknown subcommand", args("cluster", "sideways"), []string{`unknown subcommand "sideways"`}},
	)
	checkFlagCases(t, tests)
}

func TestNodesFlags(t *testing.T) {
	fx := newFlagFixtures(t)
	create := func(a ...string) []string { return append([]string{"nodes", "create", "--count", "3"}, a...) }
	checkFlagCases(t, []flagCase{
		{"negative count", args("nodes", "create", "--count", "-5"), []string{"--count -5", "must not be negative"}},
		{"no count", args("nodes", "create"), []string{"--count is required"}},
		{"negative start", create("--start", "-1"), []string{"--start -1"}},
		{"no parallelism", create("--parallelism", "0"), []string{"--parallelism 0"}},
		{"negative wait", create("--wait-ready", "-1s"), []string{"--wait-ready -1s"}},
		{"prefix not a DNS name", create("--prefix", "Node_"), []string{`--prefix "Node_"`}},
		{"empty prefix", create("--prefix", ""), []string{`--prefix ""`}},
		{"label without value", create("--label", "noequals"), []string{`--label "noequals"`, "key=value"}},
		{"bad label key", create("--label", "bad key=v"), []string{`--label "bad key=v"`, "key"}},
		{"bad label value", create("--label", "k=not ok!"), []string{`--label "k=not ok!"`, "value"}},
		{"bad taint effect", create("--taint", "gpu=true:Sometimes"), []string{"--taint", `effect "Sometimes"`}},
		{"taint without effect", create("--taint", "gpu=true"), []string{"--taint", "key[=value]:Effect"}},
		{"bad cpu", create("--cpu", "lots"), []string{`--cpu "lots"`}},
		{"negative memory", create("--memory", "-1Gi"), []string{`--memory "-1Gi"`, "negative"}},
		{"negative pods", create("--pods", "-5"), []string{`--pods "-5"`}},
		{"missing kubeconfig", create("--kubeconfig", fx.missing), []string{"--kubeconfig", "no such file"}},
		{"kubeconfig and port", create("--kubeconfig", fx.file, "--apiserver-port", "1"), []string{"--apiserver-port with --kubeconfig"}},
		{"name not a DNS label", create("--name", "a.b"), []string{`--name "a.b"`}},
		{"arguments", create("extra"), []string{"unexpected arguments"}},
		{"delete without selector", args("nodes", "delete"), []string{"--selector is required"}},
		{"bad selector", args("nodes", "delete", "--selector", "a in (b"), []string{`--selector "a in (b"`}},
		{"patch without selector", args("nodes", "patch", "--cordon"), []string{"--selector is required"}},
		{"nothing to patch", args("nodes", "patch", "--selector", "a=b"), []string{"nothing to patch"}},
		{"cordon and uncordon", args("nodes", "patch", "--selector", "a=b", "--cordon", "--uncordon"), []string{"--cordon with --uncordon", "choose one"}},
		{"bad label removal", args("nodes", "patch", "--selector", "a=b", "--label", "bad key-"), []string{`--label "bad key-"`}},
		{"bad taint removal", args("nodes", "patch", "--selector", "a=b", "--remove-taint", "bad key:NoSchedule"), []string{`--remove-taint "bad key:NoSchedule"`}},
		{"no parallelism on delete", args("nodes", "delete", "--selector", "a=b", "--parallelism", "-1"), []string{"--parallelism -1"}},
		{"unknown subcommand", args("nodes", "grow"), []string{`unknown subcommand "grow"`}},
	})
}

func TestReportFlags(t *testing.T) {
	fx := newFlagFixtures(t)
	report := filepath.Join("..", "..", "reports", "testdata", "report.json")
	newBaseline := filepath.Join(fx.dir, "b.json")
	checkFlagCases(t, []flagCase{
		{"tolerance below 1", args("report", "--write-baseline", newBaseline, "--tolerance", "0.9", report), []string{"--tolerance 0.9"}},
		{"NaN tolerance", args("report", "--write-baseline", newBaseline, "--tolerance", "NaN", report), []string{"--tolerance NaN"}},
		{"tolerance without a new baseline", args("report", "--tolerance", "1.5", report), []string{"--tolerance 1.5", "--write-baseline"}},
		{"missing baseline", args("report", "--baseline", fx.missing, report), []string{"--baseline", "no such file"}},
		{"baseline not JSON", args("report", "--baseline", fx.garbage, report), []string{"--baseline", "JSON"}},
		{"out a file", args("report", "--out", fx.file, report), []string{"--out", "is a file"}},
		{"write-baseline a folder", args("report", "--write-baseline", fx.dir, report), []string{"--write-baseline", "is a folder"}},
		{"no report", args("report"), []string{"want one report.json"}},
		{"two reports", args("report", report, report), []string{"want one report.json"}},
	})
}

func TestValidateLibraryCompareFlags(t *testing.T) {
	checkFlagCases(t, []flagCase{
		{"validate at no nodes", args("validate", "--nodes", "100,0", "node-churn"), []string{"--nodes 0"}},
		// The flag is checked even when the scenario does not load.
		{"validate at negative nodes", args("validate", "--nodes", "-5", "no-such-scenario.yaml"), []string{"--nodes -5"}},
		{"validate nothing", args("validate"), []string{"want scenario files"}},
		{"library arguments", args("library", "node-churn"), []string{"unexpected arguments"}},
		{"compare one run", args("compare", "a"), []string{"want two saved runs"}},
	})
}

// pflagTypeNames are the value names pflag derives from a flag's type;
// any other word after a flag in --help is a back-quoted word of its usage
// ("--bin-dir make tools").
var pflagTypeNames = map[string]bool{
	"string": true, "int": true, "float": true, "duration": true, "strings": true,
	"ints": true, "stringArray": true, "uint": true, "int64": true, "float32": true,
}

var helpFlagRE = regexp.MustCompile(`^\s+(?:-\w, )?--([\w-]+)(?: (\S+))?\s{2,}\S`)

// Every command's --help is a help, not an error: it shows the command's
// synopsis and every flag with its usage, and no back-quoted word of a usage
// posing as the value's name.
func TestHelp(t *testing.T) {
	for _, cmd := range [][]string{
		{"run"}, {"bench"}, {"scale"}, {"mutants"}, {"validate"}, {"library"}, {"report"}, {"report", "scale"}, {"compare"},
		{"cluster"}, {"cluster", "up"}, {"cluster", "down"}, {"cluster", "status"},
		{"nodes"}, {"nodes", "create"}, {"nodes", "delete"}, {"nodes", "patch"},
	} {
		name := strings.Join(cmd, " ")
		t.Run(name, func(t *testing.T) {
			env, out, errOut := testEnv()
			err := Main(t.Context(), env, append(cmd, "--help"))
			if !errors.Is(err, pflag.ErrHelp) {
				t.Fatalf("%s --help: got %v, want pflag.ErrHelp (exit 0)", name, err)
			}
			help := out.String() + errOut.String()
			if !strings.HasPrefix(help, "Usage: dsbench "+name) {
				t.Errorf("%s --help does not start with its synopsis:\n%s", name, help)
			}
			for _, line := range strings.Split(help, "\n") {
				m := helpFlagRE.FindStringSubmatch(line)
				if m == nil {
					if strings.Contains(line, "--") && strings.HasPrefix(strings.TrimSpace(line), "-") {
						t.Errorf("%s --help: flag line without a usage: %q", name, line)
					}
					continue
				}
				if m[2] != "" && !pflagTypeNames[m[2]] {
					t.Errorf("%s --help shows %q as the value name of --%s (a back-quoted word in its usage?): %q", name, m[2], m[1], line)
				}
			}
		})
	}
}

func TestControllerList(t *testing.T) {
	tests := []struct {
		in      string
		want    []bench.Controller
		wantErr string
	}{
		{in: "both", want: []bench.Controller{bench.Ours, bench.Upstream}},
		{in: "ours-direct", want: []bench.Controller{bench.OursDirect}},
		{in: "ours, ours-direct,upstream,floor", want: []bench.Controller{bench.Ours, bench.OursDirect, bench.Upstream, bench.Floor}},
		{in: "external", want: []bench.Controller{bench.External}},
		{in: "ours,direct", wantErr: "ours-direct"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			f := runFlags{controllers: tt.in}
			got, err := f.controllerList()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("controllerList(%q) = %v, %v; want an error naming %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("controllerList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

// --sync-delay slows our binary, so either bind mode of it is enough to
// take the flag; without one, it is a conflict.
func TestSyncDelayNeedsOurBinary(t *testing.T) {
	for _, tt := range []struct {
		controllers string
		conflict    bool
	}{
		{"ours", false},
		{"ours-direct", false},
		{"upstream,ours-direct", false},
		{"upstream,floor", true},
	} {
		t.Run(tt.controllers, func(t *testing.T) {
			fs := newFlagSet("run", "", isolatedEnv(t))
			var f runFlags
			f.register(fs, isolatedEnv(t), "both", "")
			if err := fs.Parse([]string{"--controller", tt.controllers, "--sync-delay", "1s"}); err != nil {
				t.Fatal(err)
			}
			var e flagErrors
			f.validate(fs, &e)
			got := strings.Contains(fmt.Sprint(e), "--sync-delay with --controller")
			if got != tt.conflict {
				t.Errorf("--controller %s --sync-delay 1s: conflict %v, want %v (errors %v)", tt.controllers, got, tt.conflict, e)
			}
		})
	}
}

// The external controller is accepted alone with --kubeconfig, by every
// command that plays scenarios, and refused otherwise with the flag named.
func TestExternalFlags(t *testing.T) {
	fx := newFlagFixtures(t)
	for _, tt := range []struct {
		name string
		args []string
		want string // a part of the flag errors; "" for none
	}{
		{"alone with kubeconfig", args("--controller", "external", "--kubeconfig", fx.file), ""},
		{"with the flags that shape nothing the harness starts", args("--controller", "external", "--kubeconfig", fx.file, "--repetitions", "3", "--nodes", "500"), ""},
		{"alone without kubeconfig", args("--controller", "external"), `--controller "external": external needs --kubeconfig`},
		{"beside ours", args("--controller", "ours,external", "--kubeconfig", fx.file), `--controller "ours,external": external runs alone`},
		{"twice", args("--controller", "external,external", "--kubeconfig", fx.file), "listed twice"},
		{"floor pacing", args("--controller", "external", "--kubeconfig", fx.file, "--floor-inflight", "8"), "--floor-inflight with --controller external"},
		{"workers", args("--controller", "external", "--kubeconfig", fx.file, "--workers", "2"), "--workers with --controller external"},
		{"burst", args("--controller", "external", "--kubeconfig", fx.file, "--kube-api-burst", "2"), "--kube-api-burst with --controller external"},
		{"ours without kubeconfig is as before", args("--controller", "ours,upstream"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := isolatedEnv(t)
			fs := newFlagSet("run", "", env)
			var f runFlags
			f.register(fs, env, "ours", "")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			var e flagErrors
			f.validate(fs, &e)
			got := fmt.Sprint(e)
			if tt.want == "" && len(e) > 0 || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("flag errors %v, want one with %q", e, tt.want)
			}
		})
	}
}

func TestWarmsUp(t *testing.T) {
	small, _, err := scenarios.LoadLibrary("bench-rollout") // 100 nodes of its own
	if err != nil {
		t.Fatal(err)
	}
	scs := []*scenarios.Scenario{small}
	for _, tc := range []struct {
		warmup string
		nodes  int
		want   bool
	}{
		{warmupAuto, 0, false},
		{warmupAuto, warmupAutoNodes - 1, false},
		{warmupAuto, warmupAutoNodes, true},
		{warmupOn, 0, true},
		{warmupOff, 5000, false},
	} {
		f := &runFlags{warmup: tc.warmup}
		if got := f.warmsUp(scs, tc.nodes); got != tc.want {
			t.Errorf("--warmup %s at %d nodes: warms up %v, want %v", tc.warmup, tc.nodes, got, tc.want)
		}
	}
}

// --controller-arg reaches our controller's command line, in the order
// given and before --sync-delay, and so the report's record of it.
func TestControllerArgReachesOurController(t *testing.T) {
	got := suiteOfFlags(t, "both", "--controller-arg=--create-pacing=adaptive", "--controller-arg=--max-create-batch=64", "--sync-delay=1s").Controller.ExtraArgs
	want := []string{"--create-pacing=adaptive", "--max-create-batch=64", "--sync-delay=1s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ExtraArgs (-want +got):\n%s", diff)
	}
}

// suiteOfFlags is the suite that run's flags, with the default controllers
// given, make; it fails the test on a flag error.
func suiteOfFlags(t *testing.T, controllers string, args ...string) bench.SuiteConfig {
	t.Helper()
	env := isolatedEnv(t)
	fs := newFlagSet("run", "", env)
	var f runFlags
	f.register(fs, env, controllers, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	var e flagErrors
	f.validate(fs, &e)
	if len(e) > 0 {
		t.Fatalf("flag errors: %v", e)
	}
	st := &stage{env: env, f: &f}
	return st.suite(0, "", "")
}

// --controller-env reaches our controller's variables (OursEnv), in the
// order given, and not the variables every controller gets (Env);
// bench.TestControllerEnviron shows that only ours and ours-direct get them.
func TestControllerEnvReachesOurControllerOnly(t *testing.T) {
	conf := suiteOfFlags(t, "ours,ours-direct,upstream,floor", "--controller-env=GOMEMLIMIT=100MiB", "--controller-env", "GOGC=50")
	want := []string{"GOMEMLIMIT=100MiB", "GOGC=50"}
	if diff := cmp.Diff(want, conf.Controller.OursEnv); diff != "" {
		t.Errorf("OursEnv (-want +got):\n%s", diff)
	}
	if len(conf.Controller.Env) > 0 {
		t.Errorf("Env = %q, want nothing for every controller", conf.Controller.Env)
	}
}

// A controller argument with the external controller is one problem, said once.
func TestControllerArgWithExternalSaidOnce(t *testing.T) {
	fx := newFlagFixtures(t)
	err := Main(t.Context(), isolatedEnv(t), args("run", "--kubeconfig", fx.file, "--controller", "external", "--controller-arg=--create-pacing=adaptive", "bench-rollout"))
	if n := strings.Count(fmt.Sprint(err), "--controller-arg with"); n != 1 {
		t.Errorf("--controller-arg reported %d times, want once:\n%v", n, err)
	}
}

// Without --floor-inflight, run leaves the floor's pacing to the node count
// (one value) and bench and scale to a search by node count (their help
// says so); given, it is what the suite tries.
func TestFloorPacingDefaults(t *testing.T) {
	for _, tc := range []struct {
		search bool // as bench and scale
		args   []string
		given  []int
		want   bool
	}{
		{false, []string{"--controller", "floor"}, nil, false},
		{false, []string{"--controller", "floor", "--floor-inflight", "8,32"}, []int{8, 32}, false},
		{true, []string{"--controller", "floor"}, nil, true},
		{true, []string{"--controller", "floor", "--floor-inflight", "8,32"}, []int{8, 32}, false},
	} {
		env := isolatedEnv(t)
		fs := newFlagSet("run", "", env)
		var f runFlags
		f.register(fs, env, "both", "")
		if tc.search {
			f.searchFloorPacing(fs)
		}
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		var e flagErrors
		f.validate(fs, &e)
		if len(e) > 0 {
			t.Fatalf("%v: flag errors: %v", tc.args, e)
		}
		conf := (&stage{env: env, f: &f}).suite(0, "", "")
		if !slices.Equal(conf.FloorInFlight, tc.given) || conf.FloorSearch != tc.want {
			t.Errorf("%v (search by default %v): floor pacing %v, search %v; want %v, %v", tc.args, tc.search, conf.FloorInFlight, conf.FloorSearch, tc.given, tc.want)
		}
	}
	for cmd, want := range map[string]string{"run": floorPacingByNodes, "bench": floorSearchByNodes, "scale": floorSearchByNodes} {
		env, out, errOut := testEnv()
		if err := Main(t.Context(), env, []string{cmd, "--help"}); !errors.Is(err, pflag.ErrHelp) {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		if help := out.String() + errOut.String(); !strings.Contains(help, "(default "+want+")") {
			t.Errorf("%s --help: --floor-inflight's default is not %q:\n%s", cmd, want, help)
		}
	}
}
