package bench

import (
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary play a process the harness starts: it
// spends helperCPU of CPU, then answers /healthz on its
// --health-probe-bind-address until SIGTERM.
const (
	helperEnv = "DSBENCH_TEST_HELPER_PROCESS"
	helperCPU = 300 * time.Millisecond
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperProcess())
	}
	os.Exit(m.Run())
}

func helperProcess() int {
	var addr string
	for _, a := range os.Args {
		if v, ok := strings.CutPrefix(a, "--health-probe-bind-address="); ok {
			addr = v
		}
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	// Busy until the process has used helperCPU (user and system).
	for start := time.Now(); ; {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= helperCPU || time.Since(start) > 10*time.Second {
			break
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return 3
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	}()
	<-term
	return 0
}

// A process's usage counts every incarnation once: stopped and started
// again, killed and started again, and stopped at the end.
func TestProcessUsageCountsEveryIncarnation(t *testing.T) {
	p, err := StartController(t.Context(), ControllerConfig{Which: Floor, Binary: os.Args[0], Kubeconfig: "unused", Workers: 1, Env: []string{helperEnv + "=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	p.Stop()
	if err := p.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if err := p.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	p.Stop() // repeated: counts nothing more
	got := p.Usage().CPUSeconds
	// Three incarnations of at least helperCPU each, and not a fourth.
	if low, high := 3*helperCPU.Seconds(), 4*helperCPU.Seconds(); got < low || got >= high {
		t.Errorf("CPU of three incarnations: %.3f s, want within [%.1f, %.1f)", got, low, high)
	}
}
