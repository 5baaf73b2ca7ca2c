package main

import (
	"errors"
	goflag "flag"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/dsbench/dsbench/controller"
	"github.com/dsbench/dsbench/controller/plan"
	"github.com/dsbench/dsbench/controller/secureserving"
)

// options are the command-line flags, named like kube-controller-manager's.
type options struct {
	kubeconfig string
	master     string

	workers         int
	qps             float32
	burst           int
	contentType     string
	bindMode        string
	burstReplicas   int
	maxCreateBatch  int
	slowStartFirst  int
	maxPodWrites    int
	podWriteConns   int
	podWriteStreams int
	createPacing    string
	slowStart       string
	syncDelay       time.Duration

	leaderElect       bool
	leaseName         string
	leaseNamespace    string
	leaseDuration     time.Duration
	renewDeadline     time.Duration
	retryPeriod       time.Duration
	metricsAddr       string
	healthProbeAddr   string
	secureMetrics     bool
	tlsCertFile       string
	tlsKeyFile        string
	alwaysAllowPaths  []string
	expectationsTTL   time.Duration
	statusInterval    time.Duration
	podUpdateBatch    time.Duration
	batchFactor       int
	profiling         bool
	shutdownGraceTime time.Duration
	goMemLimitRatio   float64
}

// Defaults. kube-api-qps/burst are higher than kube-controller-manager's
// 20/30 because this process runs one controller, and a DaemonSet on
// thousands of nodes needs thousands of writes; APF on the server still
// protects the API server.
const (
	defaultQPS   = 100
	defaultBurst = 200
	// Protobuf, as kube-controller-manager: JSON costs the API server and
	// this process several times the CPU per object.
	defaultContentType = runtime.ContentTypeProtobuf
	defaultLeaseName   = "dsbench-daemonset-controller"
	defaultMetricsAddr = ":8080"
	defaultHealthAddr  = ":8081"
)

// defaultAlwaysAllowPaths are the health endpoints that the secure port
// serves too: the kubelet probes them without a token.
// kube-controller-manager's default also has /livez, which we do not serve.
var defaultAlwaysAllowPaths = []string{"/healthz", "/readyz"}

func newOptions() *options {
	return &options{
		workers:           controller.DefaultWorkers,
		qps:               defaultQPS,
		podWriteStreams:   90,
		burst:             defaultBurst,
		maxCreateBatch:    controller.DefaultMaxCreateBatch,
		slowStartFirst:    controller.DefaultSlowStartInitialBatch,
		createPacing:      createPacingBatch,
		slowStart:         slowStartBatch,
		contentType:       defaultContentType,
		bindMode:          string(plan.BindScheduler),
		leaderElect:       true,
		leaseName:         defaultLeaseName,
		leaseDuration:     15 * time.Second,
		renewDeadline:     10 * time.Second,
		retryPeriod:       2 * time.Second,
		metricsAddr:       defaultMetricsAddr,
		healthProbeAddr:   defaultHealthAddr,
		alwaysAllowPaths:  slices.Clone(defaultAlwaysAllowPaths),
		expectationsTTL:   controller.DefaultExpectationsTTL,
		statusInterval:    controller.DefaultStatusInterval,
		podUpdateBatch:    controller.DefaultPodUpdateBatch,
		batchFactor:       controller.DefaultPodUpdateBatchCostFactor,
		shutdownGraceTime: 10 * time.Second,
		goMemLimitRatio:   defaultGoMemLimitRatio,
	}
}

// defaultGoMemLimitRatio leaves a tenth of the container's memory to what
// the Go runtime does not count (its own overhead, page tables, fragments).
const defaultGoMemLimitRatio = 0.9

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "Path to a kubeconfig file. Empty: the in-cluster configuration.")
	fs.StringVar(&o.master, "master", o.master, "The address of the API server; overrides the server in --kubeconfig.")
	fs.IntVar(&o.workers, "concurrent-daemonset-syncs", o.workers,
		"DaemonSets synced in parallel. Upstream's 2 lets two large DaemonSets block all others; a sync is I/O bound, so more workers are cheap.")
	fs.Float32Var(&o.qps, "kube-api-qps", o.qps, "Client-side QPS limit towards the API server. 0 or negative: no client-side limit (APF on the server still applies).")
	fs.IntVar(&o.burst, "kube-api-burst", o.burst, "Client-side burst towards the API server; 0: the QPS rounded up.")
	fs.StringVar(&o.contentType, "kube-api-content-type", o.contentType,
		`Wire format towards the API server: "application/vnd.kubernetes.protobuf" (kube-controller-manager's default) or "application/json".`)
	fs.StringVar(&o.bindMode, "bind-mode", o.bindMode,
		`How daemon pods are bound: "scheduler" pins them with node affinity (matchFields metadata.name) and kube-scheduler binds them; "direct" sets spec.nodeName.`)
	fs.IntVar(&o.burstReplicas, "burst-replicas", o.burstReplicas,
		"Cap on a DaemonSet's creates, and on its deletes, in flight (sent and not yet seen); 0: no cap (upstream's fixed 250 slows large clusters). Creates always go in slow-start batches 1, 2, 4, ... that stop at the first failing batch.")
	fs.IntVar(&o.maxCreateBatch, "max-create-batch", o.maxCreateBatch,
		"Cap on creates in flight at once: slow-start batches double up to this size, then go on at it within the same sync. A sync's deletes stream with at most this many in flight.")
	fs.IntVar(&o.slowStartFirst, "slow-start-initial-batch", o.slowStartFirst,
		"First slow-start batch of a DaemonSet's creates when none of its creates ended in the last minute (1: upstream's). A larger one saves a round trip per doubling on a new DaemonSet; after a failed create the retries start at 1 whatever it is.")
	fs.IntVar(&o.maxPodWrites, "max-pod-writes-in-flight", o.maxPodWrites,
		"Cap on pod creates and deletes in flight at once, over all DaemonSets; 0: no cap. Up to about 90 the requests fit in one HTTP/2 connection to kube-apiserver (100 streams by default) beside the watches; past that Go's client dials a new connection, with its TLS handshake, for each request that waits. Measured at 1000 nodes with --bind-mode=direct, a cap of 90 kept 2 connections instead of 60-82, spent 0.91x the CPU and brought pods to Ready a little sooner, but made them exist later (bench/SCALE.md).")
	fs.IntVar(&o.podWriteConns, "pod-write-connections", o.podWriteConns,
		"Send pod creates and deletes over this many HTTP/2 connections of their own, with at most --pod-write-streams in flight on each, the rest waiting for a stream; 0: over the main client, where Go's HTTP/2 client dials a new connection (and TLS handshake) for each request that finds every stream taken. The QPS limit stays shared with the main client. Measured at 1000 nodes with --bind-mode=direct and 3 connections: pods existed sooner (0.95x the floor's time against 1.02x), Ready no sooner, the maxUnavailable rollout slower (1.09x the floor against 1.04x), no CPU saved (bench/SCALE.md).")
	fs.IntVar(&o.podWriteStreams, "pod-write-streams", o.podWriteStreams,
		"Pod writes in flight on each of the --pod-write-connections; keep it under kube-apiserver's streams per connection (--http2-max-streams-per-connection, 100 by default).")
	fs.StringVar(&o.createPacing, "create-pacing", o.createPacing,
		`How creates are paced: "batch" sends each sync's slow-start batches at their full size; "adaptive" adds a controller-wide limit on creates in flight (8 to --max-create-batch) that grows while creates are acknowledged fast and shrinks as the API server queues them, leaving it headroom for the scheduler's bindings and the kubelets.`)
	fs.StringVar(&o.slowStart, "slow-start", o.slowStart,
		`How a sync's creates start: "batch" sends them in batches of 1, 2, 4, ... each waiting for the one before, as upstream; "window" keeps a window of creates in flight that starts as the first batch would and grows by one with each create that succeeds, so that no create waits for the slowest of a batch. Either stops at the first failure.`)
	fs.BoolVar(&o.leaderElect, "leader-elect", o.leaderElect, "Elect a leader through a Lease before syncing, so that several replicas can run.")
	fs.StringVar(&o.leaseName, "leader-elect-resource-name", o.leaseName, "Name of the Lease used for leader election.")
	fs.StringVar(&o.leaseNamespace, "leader-elect-resource-namespace", o.leaseNamespace,
		"Namespace of the Lease. Empty: $POD_NAMESPACE, else the in-cluster service account's namespace, else \"default\".")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", o.leaseDuration, "How long standbys wait after the last renewal before taking over.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", o.renewDeadline, "How long the leader retries renewing before it gives up leading; less than the lease duration.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", o.retryPeriod, "How long to wait between attempts to acquire or renew the Lease.")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", o.metricsAddr, `Address of the Prometheus /metrics endpoint; "0" disables it.`)
	fs.StringVar(&o.healthProbeAddr, "health-probe-bind-address", o.healthProbeAddr, `Address of /healthz and /readyz over plain HTTP; "0" disables them.`)
	fs.BoolVar(&o.secureMetrics, "secure-metrics", o.secureMetrics,
		"Serve --metrics-bind-address over HTTPS, as kube-controller-manager's secure port: /metrics needs a bearer token that a TokenReview authenticates and whose user a SubjectAccessReview allows to get the non-resource URL /metrics (401 without a valid token, 403 if denied); /healthz and /readyz are served there too. Off: plain HTTP, and /metrics is open to whoever reaches the port.")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", o.tlsCertFile,
		"PEM certificate (with its chain) for --secure-metrics. Empty, with --tls-private-key-file empty too: a self-signed certificate generated in memory at start-up, which scrapers cannot verify.")
	fs.StringVar(&o.tlsKeyFile, "tls-private-key-file", o.tlsKeyFile, "PEM private key of --tls-cert-file.")
	fs.StringSliceVar(&o.alwaysAllowPaths, "authorization-always-allow-paths", o.alwaysAllowPaths,
		"With --secure-metrics, paths served without a token: each a path, or a prefix ending in *.")
	fs.DurationVar(&o.expectationsTTL, "expectations-ttl", o.expectationsTTL, "How long an unobserved create or delete is counted as on its way (its node held, the rolling update's budget spent) before the controller stops waiting for it.")
	fs.DurationVar(&o.statusInterval, "status-write-interval", o.statusInterval,
		"Least time between two status writes of one DaemonSet that change only its counters (a new observedGeneration is written at once); 0: write at every sync that changes the status, as kube-controller-manager does.")
	fs.DurationVar(&o.podUpdateBatch, "pod-update-batch-period", o.podUpdateBatch,
		"Longest a DaemonSet's sync waits after an event of one of its pods (its creation, an update, the start or the end of its deletion), so that the events that arrive meanwhile share one sync; adoptions wake it at once. 0: a sync for every event, as kube-controller-manager does.")
	fs.IntVar(&o.batchFactor, "pod-update-batch-cost-factor", o.batchFactor,
		"Stretch --pod-update-batch-period for a DaemonSet whose plans take long (many nodes) to this many times its recent planning time, at most 250 ms, so that while its pods' events stream its syncs take a bounded share of a core. 0: the period alone.")
	fs.BoolVar(&o.profiling, "profiling", o.profiling,
		"Serve Go's pprof profiles under /debug/pprof/ on --metrics-bind-address (behind its token check with --secure-metrics). Off by default: the plain-HTTP port has no access control.")
	fs.Float64Var(&o.goMemLimitRatio, "go-memory-limit-ratio", o.goMemLimitRatio,
		"Set the Go runtime's soft memory limit to this fraction of the memory limit of the process's cgroup (a container's limit), read at start-up, so that the garbage collector works harder as the heap nears it instead of the kernel killing the container. 0: off. GOMEMLIMIT in the environment wins.")
	fs.DurationVar(&o.shutdownGraceTime, "shutdown-grace-period", o.shutdownGraceTime, "How long HTTP servers get to finish requests on shutdown.")
	fs.DurationVar(&o.syncDelay, "sync-delay", o.syncDelay, "Testing only: sleep this long in every sync, to check that a bench notices a slow controller.")
	_ = fs.MarkHidden("sync-delay")
}

// validate checks every flag; errors name the flag.
func (o *options) validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
	}
	if o.kubeconfig != "" {
		if info, err := os.Stat(o.kubeconfig); err != nil {
			bad("kubeconfig", "%q: %v", o.kubeconfig, err)
		} else if !info.Mode().IsRegular() {
			bad("kubeconfig", "%q is not a regular file", o.kubeconfig)
		}
	}
	if o.master != "" {
		// As the client will read it, so that a bad one fails here, with exit 2.
		if _, _, err := rest.DefaultServerUrlFor(&rest.Config{Host: o.master}); err != nil {
			bad("master", "%q: %v", o.master, err)
		}
	}
	if o.workers < 1 {
		bad("concurrent-daemonset-syncs", "must be at least 1, got %d", o.workers)
	}
	if q := float64(o.qps); math.IsNaN(q) || math.IsInf(q, 0) {
		bad("kube-api-qps", "must be a finite number, got %v", o.qps)
	}
	if o.burst < 0 {
		bad("kube-api-burst", "must not be negative, got %d", o.burst)
	}
	switch o.contentType {
	case runtime.ContentTypeProtobuf, runtime.ContentTypeJSON:
	default:
		bad("kube-api-content-type", "must be %q or %q, got %q", runtime.ContentTypeProtobuf, runtime.ContentTypeJSON, o.contentType)
	}
	switch plan.BindMode(o.bindMode) {
	case plan.BindScheduler, plan.BindDirect:
	default:
		bad("bind-mode", "must be %q or %q, got %q", plan.BindScheduler, plan.BindDirect, o.bindMode)
	}
	if o.createPacing != createPacingBatch && o.createPacing != createPacingAdaptive {
		bad("create-pacing", "must be %q or %q, got %q", createPacingBatch, createPacingAdaptive, o.createPacing)
	}
	if o.slowStart != slowStartBatch && o.slowStart != slowStartWindow {
		bad("slow-start", "must be %q or %q, got %q", slowStartBatch, slowStartWindow, o.slowStart)
	}
	if o.maxCreateBatch < 1 {
		bad("max-create-batch", "must be at least 1, got %d", o.maxCreateBatch)
	}
	if o.slowStartFirst < 1 || o.slowStartFirst > o.maxCreateBatch {
		bad("slow-start-initial-batch", "must be between 1 and --max-create-batch (%d), got %d", o.maxCreateBatch, o.slowStartFirst)
	}
	if o.maxPodWrites < 0 {
		bad("max-pod-writes-in-flight", "must be 0 (no cap) or positive, got %d", o.maxPodWrites)
	}
	if o.podWriteConns < 0 {
		bad("pod-write-connections", "must be 0 (off) or positive, got %d", o.podWriteConns)
	}
	if o.podWriteStreams <= 0 {
		bad("pod-write-streams", "must be positive, got %d", o.podWriteStreams)
	}
	if o.burstReplicas < 0 {
		bad("burst-replicas", "must be 0 (no cap) or positive, got %d", o.burstReplicas)
	}
	if o.syncDelay < 0 {
		bad("sync-delay", "must not be negative, got %v", o.syncDelay)
	}
	if o.expectationsTTL <= 0 {
		bad("expectations-ttl", "must be positive, got %v", o.expectationsTTL)
	}
	if o.statusInterval < 0 {
		bad("status-write-interval", "must not be negative, got %v", o.statusInterval)
	}
	if o.podUpdateBatch < 0 {
		bad("pod-update-batch-period", "must not be negative, got %v", o.podUpdateBatch)
	}
	if o.batchFactor < 0 {
		bad("pod-update-batch-cost-factor", "must be 0 (off) or positive, got %d", o.batchFactor)
	}
	if r := o.goMemLimitRatio; math.IsNaN(r) || r < 0 || r > 1 {
		bad("go-memory-limit-ratio", "must be 0 (off) or a fraction up to 1, got %v", r)
	}
	if o.shutdownGraceTime < 0 {
		bad("shutdown-grace-period", "must not be negative, got %v", o.shutdownGraceTime)
	}
	if o.leaderElect {
		if o.leaseName == "" {
			bad("leader-elect-resource-name", "must not be empty")
		} else if errs := validation.IsDNS1123Subdomain(o.leaseName); len(errs) > 0 {
			bad("leader-elect-resource-name", "%q is not a valid Lease name: %s", o.leaseName, strings.Join(errs, "; "))
		}
		if errs := validation.IsDNS1123Label(o.leaseNamespace); o.leaseNamespace != "" && len(errs) > 0 {
			bad("leader-elect-resource-namespace", "%q is not a valid namespace: %s", o.leaseNamespace, strings.Join(errs, "; "))
		}
		if o.retryPeriod <= 0 {
			bad("leader-elect-retry-period", "must be positive, got %v", o.retryPeriod)
		}
		// The same rules as client-go's leader election, named by flag.
		if o.renewDeadline <= time.Duration(1.2*float64(o.retryPeriod)) {
			bad("leader-elect-renew-deadline", "must be greater than 1.2 × --leader-elect-retry-period (%v), got %v", o.retryPeriod, o.renewDeadline)
		}
		if o.leaseDuration <= o.renewDeadline {
			bad("leader-elect-lease-duration", "must be greater than --leader-elect-renew-deadline (%v), got %v", o.renewDeadline, o.leaseDuration)
		}
	}
	for _, a := range []struct{ flag, addr string }{
		{"metrics-bind-address", o.metricsAddr},
		{"health-probe-bind-address", o.healthProbeAddr},
	} {
		if a.addr == "0" {
			continue
		}
		_, port, err := net.SplitHostPort(a.addr)
		if err != nil {
			bad(a.flag, `must be host:port, :port or "0", got %q`, a.addr)
			continue
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			bad(a.flag, "port %q in %q: want 0 to 65535", port, a.addr)
		}
	}
	// Two servers cannot listen on one address; port 0 picks two free ones.
	if _, port, err := net.SplitHostPort(o.metricsAddr); err == nil && port != "0" && o.metricsAddr == o.healthProbeAddr {
		bad("health-probe-bind-address", "%q is --metrics-bind-address too: give them different ports", o.healthProbeAddr)
	}
	o.validateSecureMetrics(bad)
	return errors.Join(errs...)
}

// validateSecureMetrics checks the flags of the secure metrics port.
func (o *options) validateSecureMetrics(bad func(flag, format string, args ...any)) {
	switch {
	case o.tlsCertFile != "" && o.tlsKeyFile == "":
		bad("tls-private-key-file", "must be set with --tls-cert-file")
	case o.tlsCertFile == "" && o.tlsKeyFile != "":
		bad("tls-cert-file", "must be set with --tls-private-key-file")
	}
	if !o.secureMetrics && (o.tlsCertFile != "" || o.tlsKeyFile != "") {
		bad("secure-metrics", "must be on for --tls-cert-file and --tls-private-key-file to apply")
	}
	if o.secureMetrics && o.metricsAddr == "0" {
		bad("secure-metrics", `needs a --metrics-bind-address to serve, got "0"`)
	}
	if err := secureserving.ValidateAlwaysAllowPaths(o.alwaysAllowPaths); err != nil {
		bad("authorization-always-allow-paths", "%v", err)
	}
}

// leaseNamespaceOrDefault resolves an empty --leader-elect-resource-namespace.
func (o *options) leaseNamespaceOrDefault() string {
	if o.leaseNamespace != "" {
		return o.leaseNamespace
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "default"
}

// parse parses and validates the flags; errors name the flag.
func parse(args []string) (*options, error) {
	fs := pflag.NewFlagSet("daemonset-controller", pflag.ContinueOnError)
	o := newOptions()
	o.addFlags(fs)
	klogFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	for _, name := range []string{"v", "vmodule"} {
		fs.AddGoFlag(klogFlags.Lookup(name))
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("invalid flags:\n%w", err)
	}
	return o, nil
}

// Values of --slow-start.
const (
	slowStartBatch  = "batch"
	slowStartWindow = "window"
)

// Values of --create-pacing.
const (
	createPacingBatch    = "batch"
	createPacingAdaptive = "adaptive"
)
