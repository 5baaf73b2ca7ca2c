package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Controller names the DaemonSet controller under test.
type Controller string

// The controllers the runner can start.
const (
	// Ours is this project's cmd/daemonset-controller, which pins each pod
	// to its node and leaves the binding to kube-scheduler, as upstream does.
	Ours Controller = "ours"
	// OursDirect is the same binary started with --bind-mode=direct: it sets
	// spec.nodeName itself and kube-scheduler never sees its pods. It is
	// measured beside Ours to show what skipping the scheduler saves;
	// neither the gate nor the verdict of a run judges it (see Judge).
	OursDirect Controller = "ours-direct"
	// Upstream is kube-controller-manager running only its DaemonSet
	// controller, in its own process, as the baseline.
	Upstream Controller = "upstream"
	// Floor is no process: the harness itself creates and deletes the pods
	// the oracle says are missing or misplaced, bound, as fast as its pacing
	// allows (floorctl.go). It measures what the cluster could do, not a
	// controller: it writes no status and no ControllerRevisions.
	Floor Controller = "floor"
	// External is a DaemonSet controller already running against the
	// cluster (the Deployment of deploy/, or the cluster's built-in one):
	// the harness starts nothing, plays the steps and judges what it
	// sees. Its CPU, memory and API requests are not measured, and
	// scenarios that act on its process or the API server are refused
	// (externalUnsupported). It runs alone, and only on a cluster the
	// harness does not own (see checkExternal).
	External Controller = "external"
)

// ParseController checks a --controller value.
func ParseController(s string) (Controller, error) {
	switch Controller(s) {
	case Ours, OursDirect, Upstream, Floor, External:
		return Controller(s), nil
	}
	return "", fmt.Errorf("controller %q: want ours, ours-direct, upstream, floor or external", s)
}

// Why the external controller runs alone, and only against a cluster the
// harness does not own; the CLI names its flags around them.
const (
	ExternalAloneReason   = "the cluster's controller and one the harness starts would fight over the same DaemonSets"
	ExternalClusterReason = "on a cluster the harness brings up itself the built-in DaemonSet controller is off, so nothing would converge"
)

// checkExternal refuses the external controller beside others, or on a
// cluster the harness owns.
func checkExternal(which []Controller, ownsCluster bool) error {
	if !slices.Contains(which, External) {
		return nil
	}
	if len(which) > 1 {
		return fmt.Errorf("controllers %v: %s runs alone: %s", which, External, ExternalAloneReason)
	}
	if ownsCluster {
		return fmt.Errorf("controller %s needs a cluster the harness does not own (--kubeconfig): %s", External, ExternalClusterReason)
	}
	return nil
}

// IsOurs says whether c runs this project's binary, in either bind mode:
// what applies to our process (its flags, ExtraArgs such as --sync-delay,
// its metrics) applies to both.
func (c Controller) IsOurs() bool { return c == Ours || c == OursDirect }

// Measured says whether the harness runs c itself and so measures what it
// costs (CPU, memory, API requests): every controller but External.
func (c Controller) Measured() bool { return c != External }

// bindModeFlag is our binary's flag that OursDirect sets; ExtraArgs must
// not, since the controller's name is what says how it binds.
const bindModeFlag = "--bind-mode"

// binary is the binary that runs c: its own entry in bins, or for
// OursDirect, which is the same program, the one of Ours.
func (c Controller) binary(bins map[Controller]string) string {
	if b, ok := bins[c]; ok || c != OursDirect {
		return b
	}
	return bins[Ours]
}

// ControllerConfig says how to start the controller under test. Every
// controller gets the same worker count and client rate limits.
type ControllerConfig struct {
	Which Controller
	// Binary is cmd/daemonset-controller (ours, ours-direct) or
	// kube-controller-manager.
	Binary     string
	Kubeconfig string
	Workers    int
	// QPS and Burst of the controller's API client; QPS <= 0 means unlimited
	// (ours) or a very high limit (upstream, which has no "off").
	QPS   float64
	Burst int
	// LogPath receives the process's output.
	LogPath string
	// ExtraArgs are appended to our binary's arguments, in either bind mode
	// (for example --sync-delay for the gate test); upstream, which knows
	// none of our flags, and the floor do not get them. They must not set
	// --bind-mode: Which decides it (checkExtraArgs).
	ExtraArgs []string
	// Env is added to the runner's environment (for example DSBENCH_MUTANT).
	Env []string
	// OursEnv is added to our binary's environment only, in either bind
	// mode (for example GOGC=50); upstream and the floor do not get it. It
	// must pass CheckControllerEnv.
	OursEnv []string
	// Floor paces the floor and sets its binding; it ignores everything above.
	Floor FloorConfig
}

// ControllerProcess is a running controller.
type ControllerProcess struct {
	conf        ControllerConfig
	cmd         *exec.Cmd
	metricsURL  string
	healthURL   string
	done        chan struct{}
	waitErr     error
	log         *os.File
	mu          sync.Mutex
	lastUsage   ProcessUsage
	accumulated ProcessUsage // from earlier incarnations (kill/restart)
	// exitUsage is the exact usage of the incarnation that last exited,
	// from the kernel's rusage at wait.
	exitUsage ProcessUsage
	// apiAccum are the API requests of earlier incarnations, by verb.
	apiAccum map[string]float64
	// pprofURL is the running incarnation's /debug/pprof (its ports are
	// new at each start).
	pprofURL string
}

// PprofURL is where the running process serves Go's pprof profiles
// (/debug/pprof, loopback): ours with --profiling, upstream's
// kube-controller-manager, and the floor's informers; "" once it exited.
func (p *ControllerProcess) PprofURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pprofURL
}

// ProcessUsage is what a process cost.
type ProcessUsage struct {
	CPUSeconds   float64
	PeakRSSBytes int64
}

// Args is the command line the controller gets, with the kubeconfig and the
// ports (chosen at start) as placeholders, for the report.
func (c ControllerConfig) Args() []string {
	switch c.Which {
	case Floor:
		return c.Floor.Args()
	case External:
		return nil // the harness does not know how it was started
	}
	c.Kubeconfig = "KUBECONFIG"
	args := c.args(0, 0)
	for i, a := range args {
		args[i] = strings.NewReplacer("127.0.0.1:0", "127.0.0.1:PORT", "--secure-port=0", "--secure-port=PORT").Replace(a)
	}
	return args
}

func (c ControllerConfig) args(metricsPort, healthPort int) []string {
	qps, burst := c.QPS, c.Burst
	switch c.Which {
	case Upstream:
		if qps <= 0 {
			qps, burst = 100000, 100000 // kube-controller-manager has no "unlimited"
		}
		if burst <= 0 {
			burst = int(qps)
		}
		return []string{
			"--kubeconfig=" + c.Kubeconfig,
			"--controllers=daemonset-controller",
			"--leader-elect=false",
			"--use-service-account-credentials=false",
			"--concurrent-daemonset-syncs=" + strconv.Itoa(c.Workers),
			"--kube-api-qps=" + strconv.FormatFloat(qps, 'f', -1, 64),
			"--kube-api-burst=" + strconv.Itoa(burst),
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(metricsPort),
			// pprof as ours's (always served, unauthenticated, on loopback
			// only), which a profiled run (--profile) reads.
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*",
		}
	case Floor: // the floor's informers (FloorConfig.Watch): dsbench again
		return floorInformersArgs(c.Kubeconfig, healthPort)
	default: // ours, in either bind mode
		args := []string{
			"--kubeconfig=" + c.Kubeconfig,
			"--leader-elect=false",
			"--concurrent-daemonset-syncs=" + strconv.Itoa(c.Workers),
			"--kube-api-qps=" + strconv.FormatFloat(qps, 'f', -1, 64),
			"--kube-api-burst=" + strconv.Itoa(burst),
			"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort),
			"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(healthPort),
			// As kube-controller-manager's default: pprof on the metrics
			// port (loopback), so that a run can be profiled while it goes.
			"--profiling",
		}
		if c.Which == OursDirect {
			args = append(args, bindModeFlag+"=direct")
		}
		return append(args, c.ExtraArgs...)
	}
}

// ReservedControllerFlags are the flags of our binary that the harness sets
// itself, so ExtraArgs must not: our binary takes a flag's last value, so
// they would silently change what the report says was run. --bind-mode is
// chosen by the controller's name (ours or ours-direct); the others by the
// harness's own flags, the same for every controller, or by the ports it
// picks.
var ReservedControllerFlags = []string{
	bindModeFlag, "--kubeconfig", "--leader-elect", "--concurrent-daemonset-syncs",
	"--kube-api-qps", "--kube-api-burst", "--metrics-bind-address", "--health-probe-bind-address",
}

// CheckControllerArg checks one extra argument for our binary: a flag
// ("--name" or "--name=value") that the harness does not set itself.
func CheckControllerArg(a string) error {
	if !strings.HasPrefix(a, "--") || len(a) == 2 {
		return fmt.Errorf("want a flag, --name=value")
	}
	name, _, _ := strings.Cut(a, "=")
	if slices.Contains(ReservedControllerFlags, name) {
		if name == bindModeFlag {
			return fmt.Errorf("the controller's name chooses the bind mode (%s or %s)", Ours, OursDirect)
		}
		return fmt.Errorf("the harness sets %s itself (reserved: %s)", name, strings.Join(ReservedControllerFlags, " "))
	}
	return nil
}

// checkExtraArgs refuses ExtraArgs that CheckControllerArg refuses, and
// OursEnv that CheckControllerEnv refuses.
func (c ControllerConfig) checkExtraArgs() error {
	for _, a := range c.ExtraArgs {
		if err := CheckControllerArg(a); err != nil {
			return fmt.Errorf("controller extra argument %q: %w", a, err)
		}
	}
	for _, kv := range c.OursEnv {
		if err := CheckControllerEnv(kv); err != nil {
			return fmt.Errorf("controller environment variable %q: %w", kv, err)
		}
	}
	return nil
}

// harnessEnvPrefix names the variables the harness sets itself
// (DSBENCH_MUTANT, DSBENCH_MUTANT_FAULTS).
const harnessEnvPrefix = "DSBENCH_"

// CheckControllerEnv checks one variable for our binary's environment,
// NAME=VALUE. The Go runtime's own knobs are checked as the runtime parses
// them, since it ignores a malformed GOGC or GOMAXPROCS without a word and
// would leave the run measuring the default.
func CheckControllerEnv(kv string) error {
	name, value, ok := strings.Cut(kv, "=")
	if !ok || !validEnvName(name) {
		return fmt.Errorf("want NAME=VALUE, NAME of letters, digits and underscores, not starting with a digit")
	}
	if strings.HasPrefix(name, harnessEnvPrefix) {
		return fmt.Errorf("the harness sets %s* variables itself", harnessEnvPrefix)
	}
	switch name {
	case "GOGC":
		// The runtime reads a negative GOGC as off: say off.
		if n, err := strconv.ParseInt(value, 10, 32); value != "off" && (err != nil || n < 0) {
			return fmt.Errorf("GOGC %q: want off or a percentage, 0 or more", value)
		}
	case "GOMEMLIMIT":
		if _, err := ParseGoMemLimit(value); err != nil {
			return err
		}
	case "GOMAXPROCS":
		if n, err := strconv.ParseInt(value, 10, 32); err != nil || n < 1 {
			return fmt.Errorf("GOMAXPROCS %q: want a count, 1 or more", value)
		}
	}
	return nil
}

func validEnvName(name string) bool {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for _, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// ParseGoMemLimit parses GOMEMLIMIT as the Go runtime does: off (or
// empty), or a count of bytes with no unit or one of B, KiB, MiB, GiB, TiB,
// at most MaxInt64 bytes. It returns -1 for off. The runtime refuses to
// start on anything else.
func ParseGoMemLimit(s string) (int64, error) {
	if s == "" || s == "off" {
		return -1, nil
	}
	digits := strings.TrimRight(s, "BKMGTi")
	unit := s[len(digits):]
	shift, ok := map[string]uint{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}[unit]
	n, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil || n < 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("GOMEMLIMIT %q: want off, or bytes with no unit or one of B, KiB, MiB, GiB, TiB (e.g. 200MiB)", s)
	}
	return n << shift, nil
}

// environ is what the controller's process gets on top of the runner's
// environment.
func (c ControllerConfig) environ() []string {
	if c.Which.IsOurs() {
		return slices.Concat(c.Env, c.OursEnv)
	}
	return c.Env
}

// StartController starts the controller and waits until it answers its
// health check.
func StartController(ctx context.Context, conf ControllerConfig) (*ControllerProcess, error) {
	if conf.Workers <= 0 {
		return nil, fmt.Errorf("workers %d: must be positive", conf.Workers)
	}
	if err := conf.checkExtraArgs(); err != nil {
		return nil, err
	}
	p := &ControllerProcess{conf: conf}
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *ControllerProcess) start(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	conf := p.conf
	if conf.LogPath != "" {
		if err := os.MkdirAll(filepath.Dir(conf.LogPath), 0o755); err != nil {
			return fmt.Errorf("creating log dir: %w", err)
		}
		p.log, err = os.OpenFile(conf.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("opening controller log: %w", err)
		}
	}
	cmd := exec.Command(conf.Binary, conf.args(ports[0], ports[1])...)
	if env := conf.environ(); len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if p.log != nil {
		cmd.Stdout, cmd.Stderr = p.log, p.log
	}
	// Its own process group, so that Ctrl-C on the runner does not kill it
	// before the runner has read its usage; Stop always ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		if p.log != nil {
			_ = p.log.Close()
			p.log = nil
		}
		return fmt.Errorf("starting %s controller %s: %w", conf.Which, conf.Binary, err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	done := p.done
	go func() {
		err := cmd.Wait()
		var u ProcessUsage
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			u = ProcessUsage{CPUSeconds: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), PeakRSSBytes: ru.Maxrss * 1024}
		}
		p.mu.Lock()
		u.PeakRSSBytes = exitPeakRSS(u.PeakRSSBytes, p.lastUsage.PeakRSSBytes)
		p.waitErr, p.exitUsage = err, u
		p.pprofURL = "" // until a restart serves it again
		p.mu.Unlock()
		close(done)
	}()
	pprofURL := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", ports[0])
	switch conf.Which {
	case Upstream:
		p.metricsURL = fmt.Sprintf("https://127.0.0.1:%d/metrics", ports[0])
		p.healthURL = fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0])
		pprofURL = fmt.Sprintf("https://127.0.0.1:%d/debug/pprof", ports[0])
	case Floor: // the floor's informers serve /healthz and pprof only
		p.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0])
		p.healthURL = fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[1])
		pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", ports[1])
	default:
		p.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0])
		p.healthURL = fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[1])
	}
	p.mu.Lock()
	p.pprofURL = pprofURL
	p.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := httpGet(ctx, p.healthURL, io.Discard); err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s controller exited during start: %v (log %s)", conf.Which, p.waitErr, conf.LogPath)
		case <-ctx.Done():
			p.Stop()
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return fmt.Errorf("%s controller not healthy after 60s (log %s)", conf.Which, conf.LogPath)
		}
	}
}

// PID is the process id, or 0 when it is not running.
func (p *ControllerProcess) PID() int {
	if p.cmd == nil || p.cmd.Process == nil || p.exited() {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *ControllerProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Usage is the CPU and peak memory of every incarnation so far: CPU exact
// (the kernel's rusage) for the ones that exited, peak memory the kernel's
// high-water mark (VmHWM) read just before each stop (see exitPeakRSS);
// both read from /proc for a live one.
func (p *ControllerProcess) Usage() ProcessUsage {
	p.sample()
	exited := p.exited()
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.lastUsage
	if exited {
		last = p.exitUsage
	}
	return ProcessUsage{
		CPUSeconds:   p.accumulated.CPUSeconds + last.CPUSeconds,
		PeakRSSBytes: max(p.accumulated.PeakRSSBytes, last.PeakRSSBytes),
	}
}

// APIRequests is the requests by verb of every incarnation so far: each
// one's count is scraped before it is killed, and the live one's now.
func (p *ControllerProcess) APIRequests(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	p.mu.Lock()
	for k, v := range p.apiAccum {
		out[k] += v
	}
	p.mu.Unlock()
	if p.PID() == 0 {
		return out, nil
	}
	text, err := p.Metrics(ctx)
	if err != nil {
		return out, err
	}
	now, err := APIRequestsByMethod(text)
	for k, v := range now {
		out[k] += v
	}
	return out, err
}

// sample reads /proc for the live process; the last reading survives its
// death, so it must be taken before a kill.
func (p *ControllerProcess) sample() {
	pid := p.PID()
	if pid == 0 {
		return
	}
	u, err := readUsage(pid)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.lastUsage = u
	p.mu.Unlock()
}

// Metrics scrapes the controller's Prometheus endpoint.
func (p *ControllerProcess) Metrics(ctx context.Context) (string, error) {
	var b strings.Builder
	if err := httpGet(ctx, p.metricsURL, &b); err != nil {
		return "", fmt.Errorf("scraping %s: %w", p.metricsURL, err)
	}
	return b.String(), nil
}

// Kill ends the process at once (SIGKILL), as a crash would.
func (p *ControllerProcess) Kill() {
	if p.PID() != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if text, err := p.Metrics(ctx); err == nil {
			if byVerb, err := APIRequestsByMethod(text); err == nil {
				p.mu.Lock()
				if p.apiAccum == nil {
					p.apiAccum = map[string]float64{}
				}
				for k, v := range byVerb {
					p.apiAccum[k] += v
				}
				p.mu.Unlock()
			}
		}
		cancel()
	}
	p.sample()
	p.stop(syscall.SIGKILL)
	p.keepExitUsage()
}

// keepExitUsage adds the usage of the incarnation that exited to the
// earlier ones', once.
func (p *ControllerProcess) keepExitUsage() {
	p.mu.Lock()
	p.accumulated.CPUSeconds += p.exitUsage.CPUSeconds
	p.accumulated.PeakRSSBytes = max(p.accumulated.PeakRSSBytes, p.exitUsage.PeakRSSBytes)
	p.lastUsage, p.exitUsage = ProcessUsage{}, ProcessUsage{}
	p.mu.Unlock()
}

// Restart starts a killed or stopped controller again; the usage of the
// incarnation before it counts.
func (p *ControllerProcess) Restart(ctx context.Context) error {
	if p.PID() != 0 {
		return errors.New("restart: the controller is still running")
	}
	p.keepExitUsage()
	return p.start(ctx)
}

// Stop ends the process: SIGTERM, then SIGKILL after 10 s. Safe to repeat.
func (p *ControllerProcess) Stop() {
	p.sample()
	p.stop(syscall.SIGTERM)
	if p.log != nil {
		_ = p.log.Close()
		p.log = nil
	}
}

func (p *ControllerProcess) stop(sig syscall.Signal) {
	if p.cmd == nil || p.cmd.Process == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exitPeakRSS is an exited incarnation's peak memory: VmHWM as sampled
// right before it was told to stop (Stop and Kill sample first), which is
// its own address space's high-water mark since exec. The rusage maxrss of
// a child is not: os/exec starts it with vfork, and exec keeps the larger of
// the new and the old address space's peaks, the old one being the
// harness's. So a controller started by a harness that had grown to 100 MiB
// "peaked" at 100 MiB (make bench: ours 68 MiB in its first run, 88 to 109
// MiB in later ones, upstream a steady 120). rusage is the fallback when the
// process died before any sample.
func exitPeakRSS(rusageMax, sampledHWM int64) int64 {
	if sampledHWM > 0 {
		return sampledHWM
	}
	return rusageMax
}

// readUsage reads utime+stime and VmHWM for pid.
func readUsage(pid int) (ProcessUsage, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcessUsage{}, err
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ProcessUsage{}, fmt.Errorf("parsing /proc/%d/stat", pid)
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is the state (field 3); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return ProcessUsage{}, fmt.Errorf("parsing /proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	const clockTicks = 100 // USER_HZ on Linux
	u := ProcessUsage{CPUSeconds: (utime + stime) / clockTicks}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return u, nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			u.PeakRSSBytes = kb * 1024
		}
	}
	return u, nil
}

var insecureClient = &http.Client{
	Timeout: 10 * time.Second,
	// The upstream controller serves /metrics on a self-signed port.
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback only
}

func httpGet(ctx context.Context, url string, w io.Writer) error {
	return httpGetWith(ctx, insecureClient, url, w)
}

// httpGetWith copies url's body to w; any status but 200 is an error that
// quotes the start of the body.
func httpGetWith(ctx context.Context, client *http.Client, url string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		if msg = bytes.TrimSpace(msg); len(msg) > 0 {
			return fmt.Errorf("%s: %s: %s", url, resp.Status, msg)
		}
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
