package bench

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

func TestParseController(t *testing.T) {
	tests := []struct {
		in      string
		want    Controller
		wantErr bool
	}{
		{in: "ours", want: Ours},
		{in: "ours-direct", want: OursDirect},
		{in: "upstream", want: Upstream},
		{in: "floor", want: Floor},
		{in: "external", want: External},
		{in: "direct", wantErr: true},
		{in: "ours_direct", wantErr: true},
		{in: "Ours", wantErr: true},
		{in: "both", wantErr: true}, // the CLI's shorthand, not a controller
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseController(tt.in)
			if tt.wantErr {
				// The message lists every controller there is.
				if err == nil || !strings.Contains(err.Error(), "want ours, ours-direct, upstream, floor or external") {
					t.Fatalf("ParseController(%q) = %q, %v; want an error listing the controllers", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseController(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestIsOurs(t *testing.T) {
	for c, want := range map[Controller]bool{Ours: true, OursDirect: true, Upstream: false, Floor: false, External: false} {
		if c.IsOurs() != want {
			t.Errorf("%s.IsOurs() = %v, want %v", c, !want, want)
		}
	}
}

// The harness measures the cost of every controller but the external one,
// which it did not start.
func TestMeasured(t *testing.T) {
	for c, want := range map[Controller]bool{Ours: true, OursDirect: true, Upstream: true, Floor: true, External: false} {
		if c.Measured() != want {
			t.Errorf("%s.Measured() = %v, want %v", c, !want, want)
		}
	}
}

// The external controller runs alone, and only on a cluster the harness
// does not own; the others are not its concern.
func TestCheckExternal(t *testing.T) {
	tests := []struct {
		name  string
		which []Controller
		owns  bool
		want  string // a part of the error; "" for none
	}{
		{"alone on someone else's cluster", []Controller{External}, false, ""},
		{"ours on an owned cluster", []Controller{Ours, Upstream, Floor}, true, ""},
		{"beside ours", []Controller{External, Ours}, false, ExternalAloneReason},
		{"after the floor", []Controller{Floor, External}, false, ExternalAloneReason},
		{"on an owned cluster", []Controller{External}, true, ExternalClusterReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkExternal(tt.which, tt.owns)
			if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checkExternal(%v, %v) = %v, want an error with %q", tt.which, tt.owns, err, tt.want)
			}
		})
	}
}

// ours-direct is ours's command line plus --bind-mode=direct, exactly once,
// before the extra arguments; ours keeps the binary's default (scheduler);
// upstream gets neither the bind mode nor our extra arguments, which
// kube-controller-manager would refuse as unknown flags.
func TestControllerArgs(t *testing.T) {
	base := ControllerConfig{Workers: 7, QPS: 50, Burst: 100, ExtraArgs: []string{"--sync-delay=1s"}}
	ours := []string{
		"--kubeconfig=KUBECONFIG",
		"--leader-elect=false",
		"--concurrent-daemonset-syncs=7",
		"--kube-api-qps=50",
		"--kube-api-burst=100",
		"--metrics-bind-address=127.0.0.1:PORT",
		"--health-probe-bind-address=127.0.0.1:PORT",
		"--profiling",
	}
	tests := []struct {
		which Controller
		want  []string
	}{
		{Ours, append(slices.Clone(ours), "--sync-delay=1s")},
		{OursDirect, append(slices.Clone(ours), "--bind-mode=direct", "--sync-delay=1s")},
		{Upstream, []string{
			"--kubeconfig=KUBECONFIG",
			"--controllers=daemonset-controller",
			"--leader-elect=false",
			"--use-service-account-credentials=false",
			"--concurrent-daemonset-syncs=7",
			"--kube-api-qps=50",
			"--kube-api-burst=100",
			"--bind-address=127.0.0.1",
			"--secure-port=PORT",
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*",
		}},
	}
	// The floor's informers (--floor-watch) are dsbench again, with none of
	// our flags.
	if got, want := (ControllerConfig{Which: Floor, Kubeconfig: "K", Workers: 1, ExtraArgs: []string{"--sync-delay=1s"}}).args(1, 2),
		[]string{FloorInformersCommand, "--kubeconfig=K", "--health-probe-bind-address=127.0.0.1:2"}; !slices.Equal(got, want) {
		t.Errorf("the floor's informers' args %q, want %q", got, want)
	}
	// The external controller's command line is whatever started it.
	if got := (ControllerConfig{Which: External, Workers: 7, ExtraArgs: []string{"--sync-delay=1s"}}).Args(); got != nil {
		t.Errorf("external args %q, want none", got)
	}
	for _, tt := range tests {
		t.Run(string(tt.which), func(t *testing.T) {
			c := base
			c.Which = tt.which
			got := c.Args()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			n := 0
			for _, a := range got {
				if strings.HasPrefix(a, "--bind-mode") {
					n++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tt.which == OursDirect]; n != want {
				t.Errorf("--bind-mode appears %d times in %v, want %d", n, got, want)
			}
		})
	}
}

// Extra arguments may not choose the bind mode (the controller's name does)
// nor set what the harness sets itself: our binary would take the last value
// given, and the report would describe another controller.
func TestCheckExtraArgs(t *testing.T) {
	tests := []struct {
		extra   []string
		wantErr string // a part of the error; "" for none
	}{
		{extra: nil},
		{extra: []string{"--sync-delay=1s"}},
		{extra: []string{"--create-pacing=adaptive", "--profiling=false"}},
		{extra: []string{"--bind-modest=1"}}, // another flag, however unlikely
		{extra: []string{"--bind-mode=direct"}, wantErr: "bind mode"},
		{extra: []string{"--bind-mode=scheduler"}, wantErr: "bind mode"},
		{extra: []string{"--sync-delay=1s", "--bind-mode", "direct"}, wantErr: "bind mode"},
		{extra: []string{"--kube-api-qps=5"}, wantErr: "the harness sets --kube-api-qps itself"},
		{extra: []string{"--concurrent-daemonset-syncs=1"}, wantErr: "the harness sets --concurrent-daemonset-syncs itself"},
		{extra: []string{"--kubeconfig=/elsewhere"}, wantErr: "the harness sets --kubeconfig itself"},
		{extra: []string{"--sync-delay", "1s"}, wantErr: `"1s": want a flag, --name=value`},
		{extra: []string{"--"}, wantErr: "want a flag"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.extra, " "), func(t *testing.T) {
			err := ControllerConfig{Workers: 1, ExtraArgs: tt.extra}.checkExtraArgs()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkExtraArgs(%q) = %v, want nil", tt.extra, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("checkExtraArgs(%q) = %v, want an error with %q", tt.extra, err, tt.wantErr)
			}
			if _, serr := StartController(t.Context(), ControllerConfig{Which: OursDirect, Workers: 1, Binary: "/nonexistent", ExtraArgs: tt.extra}); serr == nil || serr.Error() != err.Error() {
				t.Errorf("StartController: %v, want %v before anything starts", serr, err)
			}
			if _, rerr := NewRunner(Config{REST: &rest.Config{Host: "http://127.0.0.1:1"}, Controller: ControllerConfig{ExtraArgs: tt.extra}}); rerr == nil || !strings.Contains(rerr.Error(), tt.wantErr) {
				t.Errorf("NewRunner: %v, want an error with %q", rerr, tt.wantErr)
			}
		})
	}
}

// Our controller's environment variables: NAME=VALUE, not the harness's
// own, and the Go runtime's knobs as the runtime reads them (it would
// ignore a malformed GOGC and run with the default).
func TestCheckControllerEnv(t *testing.T) {
	tests := []struct {
		kv      string
		wantErr string // a part of the error; "" for none
	}{
		{kv: "GOGC=50"},
		{kv: "GOGC=0"},
		{kv: "GOGC=off"},
		{kv: "GOMEMLIMIT=off"},
		{kv: "GOMEMLIMIT=100MiB"},
		{kv: "GOMEMLIMIT=1073741824"},
		{kv: "GOMEMLIMIT=512B"},
		{kv: "GOMAXPROCS=2"},
		{kv: "GODEBUG=gctrace=1"}, // the value may hold '='
		{kv: "MY_VAR="},           // empty values are values
		{kv: "_x1=a b"},
		{kv: "GOGC", wantErr: "want NAME=VALUE"},
		{kv: "=1", wantErr: "want NAME=VALUE"},
		{kv: "1X=1", wantErr: "want NAME=VALUE"},
		{kv: "MY-VAR=1", wantErr: "want NAME=VALUE"},
		{kv: "DSBENCH_MUTANT=surge-all", wantErr: "the harness sets DSBENCH_*"},
		{kv: "GOGC=-1", wantErr: "want off or a percentage"},
		{kv: "GOGC=fifty", wantErr: "want off or a percentage"},
		{kv: "GOGC=", wantErr: "want off or a percentage"},
		{kv: "GOMEMLIMIT=100MB", wantErr: "GOMEMLIMIT \"100MB\""},
		{kv: "GOMEMLIMIT=100mib", wantErr: "GOMEMLIMIT"},
		{kv: "GOMEMLIMIT=MiB", wantErr: "GOMEMLIMIT"},
		{kv: "GOMEMLIMIT="}, // off, to the runtime
		{kv: "GOMEMLIMIT=-1", wantErr: "GOMEMLIMIT"},
		{kv: "GOMEMLIMIT=+1"}, // strconv.ParseInt, as the runtime
		{kv: "GOMEMLIMIT=1.5GiB", wantErr: "GOMEMLIMIT"},
		{kv: "GOMEMLIMIT=9999999TiB", wantErr: "GOMEMLIMIT"},
		{kv: "GOMAXPROCS=0", wantErr: "want a count"},
		{kv: "GOGC=4294967296", wantErr: "want off or a percentage"}, // past int32: the runtime would use 100
	}
	for _, tt := range tests {
		t.Run(tt.kv, func(t *testing.T) {
			err := CheckControllerEnv(tt.kv)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckControllerEnv(%q) = %v, want nil", tt.kv, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckControllerEnv(%q) = %v, want an error with %q", tt.kv, err, tt.wantErr)
			}
			if _, serr := StartController(t.Context(), ControllerConfig{Which: Ours, Workers: 1, Binary: "/nonexistent", OursEnv: []string{tt.kv}}); serr == nil || !strings.Contains(serr.Error(), tt.wantErr) {
				t.Errorf("StartController: %v, want %v before anything starts", serr, err)
			}
		})
	}
}

func TestParseGoMemLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"off": -1, "": -1, "+7": 7, "0": 0, "1": 1, "512B": 512, "3KiB": 3 << 10, "100MiB": 100 << 20, "2GiB": 2 << 30, "1TiB": 1 << 40,
		"9223372036854775807": math.MaxInt64,
	} {
		if got, err := ParseGoMemLimit(in); err != nil || got != want {
			t.Errorf("ParseGoMemLimit(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
}

// ParseGoMemLimit agrees with the Go runtime itself: the test binary run
// again with GOMEMLIMIT set reports the limit the runtime took, or dies on
// one it refuses.
func TestParseGoMemLimitAgreesWithRuntime(t *testing.T) {
	if v, ok := os.LookupEnv(memLimitChildEnv); ok && v == "1" {
		fmt.Println(memLimitChildSays, debug.SetMemoryLimit(-1))
		os.Exit(0)
	}
	for _, in := range []string{"off", "", "0", "1", "+7", "512B", "3KiB", "100MiB", "2GiB", "1TiB", "8388607TiB", "8388608TiB",
		"9223372036854775807", "9223372036854775808", "100MB", "100mib", "MiB", "-1", "1.5GiB", "5iB", " 5", "5 "} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestParseGoMemLimitAgreesWithRuntime$")
		cmd.Env = append(os.Environ(), memLimitChildEnv+"=1", "GOMEMLIMIT="+in)
		out, runErr := cmd.CombinedOutput()
		got, err := ParseGoMemLimit(in)
		if got < 0 {
			got = math.MaxInt64 // the runtime's "no limit"
		}
		_, said, found := strings.Cut(string(out), memLimitChildSays+" ")
		runtimeTook := runErr == nil && found
		if runtimeTook != (err == nil) {
			t.Errorf("GOMEMLIMIT=%q: ParseGoMemLimit error %v, but the runtime took it: %v (%v; %s)", in, err, runtimeTook, runErr, out)
			continue
		}
		if runtimeTook {
			limit, _, _ := strings.Cut(said, "\n")
			if limit != strconv.FormatInt(got, 10) {
				t.Errorf("GOMEMLIMIT=%q: ParseGoMemLimit = %d, the runtime took %s", in, got, limit)
			}
		}
	}
}

const (
	memLimitChildEnv  = "DSBENCH_TEST_MEMLIMIT_CHILD"
	memLimitChildSays = "runtime memory limit:"
)

// FuzzParseGoMemLimit: never a panic, and what it accepts is what it
// gives back when written in bytes.
func FuzzParseGoMemLimit(f *testing.F) {
	for _, s := range []string{"off", "100MiB", "1.5GiB", "", "B", "+1", "iB", "8388607TiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseGoMemLimit(s)
		if err != nil || n < 0 {
			return
		}
		if back, err := ParseGoMemLimit(strconv.FormatInt(n, 10)); err != nil || back != n {
			t.Errorf("ParseGoMemLimit(%q) = %d, but %d in bytes reads back as %d, %v", s, n, n, back, err)
		}
	})
}

// Our variables go to ours and ours-direct only; the harness's own to
// every controller it starts.
func TestControllerEnviron(t *testing.T) {
	conf := ControllerConfig{Env: []string{"DSBENCH_MUTANT=x"}, OursEnv: []string{"GOGC=50"}}
	for which, want := range map[Controller][]string{
		Ours:       {"DSBENCH_MUTANT=x", "GOGC=50"},
		OursDirect: {"DSBENCH_MUTANT=x", "GOGC=50"},
		Upstream:   {"DSBENCH_MUTANT=x"},
	} {
		conf.Which = which
		if diff := cmp.Diff(want, conf.environ()); diff != "" {
			t.Errorf("%s: environ (-want +got):\n%s", which, diff)
		}
	}
}

// ours-direct runs ours's binary unless it is given one of its own.
func TestControllerBinary(t *testing.T) {
	tests := []struct {
		name  string
		bins  map[Controller]string
		which Controller
		want  string
	}{
		{"ours", map[Controller]string{Ours: "/ours", Upstream: "/kcm"}, Ours, "/ours"},
		{"ours-direct runs ours's", map[Controller]string{Ours: "/ours", Upstream: "/kcm"}, OursDirect, "/ours"},
		{"ours-direct's own wins", map[Controller]string{Ours: "/ours", OursDirect: "/other"}, OursDirect, "/other"},
		{"upstream", map[Controller]string{Ours: "/ours", Upstream: "/kcm"}, Upstream, "/kcm"},
		{"upstream does not fall back", map[Controller]string{Ours: "/ours"}, Upstream, ""},
		{"the floor has none", map[Controller]string{Ours: "/ours"}, Floor, ""},
		{"the external controller has none", map[Controller]string{Ours: "/ours", Upstream: "/kcm"}, External, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.which.binary(tt.bins); got != tt.want {
				t.Errorf("binary = %q, want %q", got, tt.want)
			}
		})
	}
}
