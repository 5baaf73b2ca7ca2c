package kwok

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	configv1alpha1 "sigs.k8s.io/kwok/pkg/apis/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// ErrClusterInUse means a live cluster already has the requested name.
var ErrClusterInUse = errors.New("cluster name already in use")

// ClusterConfig says how to bring a cluster up.
type ClusterConfig struct {
	// Name of the cluster; a DNS label. Default "dsbench".
	Name string
	// Workdir holds every cluster's files (kwokctl's KWOK_WORKDIR). Default .cache/kwok.
	Workdir string
	// Binaries is the folder with the pinned control plane.
	Binaries Binaries
	// UpstreamDaemonSetController keeps kube-controller-manager's own
	// DaemonSet controller on, as a baseline. Off by default so the
	// controller under test is the only one.
	UpstreamDaemonSetController bool
	// APIServerPort is the kube-apiserver port; 0 picks a free one.
	APIServerPort int
	// Parallelism of the kwok controller's node and pod stage workers and of
	// its lease renewals. 0 means DefaultKwokParallelism.
	KwokParallelism int
	// KwokLogLevel is the kwok controller's --v: DEBUG, INFO, WARN or
	// ERROR. "" keeps kwok's default (INFO). DEBUG logs why kwok skips each
	// pod event (not managed, read only, no stage matched), which INFO
	// does not: what a stalled pod needs.
	KwokLogLevel string
	// KwokWatch says which kwok controller runs: KwokWatchRelist (v0.8.0
	// as released) or KwokWatchResume (v0.8.0 patched to resume its
	// watches). "" means DefaultKwokWatch.
	KwokWatch KwokWatch
	// DisableScheduler leaves kube-scheduler out, for controllers that bind
	// pods themselves (--bind-mode=direct).
	DisableScheduler bool
	// Audit, if set, turns kube-apiserver's audit log on (see AuditPolicy);
	// Cluster.AuditLog says where it is written.
	Audit *AuditConfig
	// Timeout bounds the whole `up`. 0 means 3 minutes.
	Timeout time.Duration
	// Log receives kwokctl's output. nil discards it.
	Log io.Writer
}

// DefaultKwokParallelism is the kwok controller's worker count per stage
// kind. kwok's own default (4) is the simulator bottleneck at thousands of
// pods (HARNESS-NOTES); 32 kept 5000 pods moving here.
const DefaultKwokParallelism = 32

// KwokWatch is how the kwok controller watches after a watch ends.
type KwokWatch string

const (
	// KwokWatchRelist is kwok v0.8.0 as released: every watch, the first
	// after its list and each one after kube-apiserver closed the last,
	// starts from resourceVersion "0", which sends every object again as
	// ADDED; kwok works through all of them before what changed.
	KwokWatchRelist KwokWatch = "relist"
	// KwokWatchResume is kwok v0.8.0 with kwok/tools/patches/kwok-watch-resume.patch:
	// a watch resumes from the last resourceVersion it saw, as client-go's
	// reflector means it to, and replays nothing. It also carries
	// kwok-outage-recovery.patch (a stage whose request lost its connection
	// is retried; its watches, pods, nodes and leases, back off at most
	// about a second), which
	// changes nothing unless kube-apiserver goes away, and
	// kwok-lease-spread.patch (each node's first lease renewal at a random
	// point of the interval, so that nodes made together do not renew in
	// one burst every 50 s), which changes the cluster's load and so is
	// named in the version string; and kwok-pprof-cpu.patch (a CPU profile
	// under /debug/pprof/profile, which v0.8.0 does not serve).
	KwokWatchResume KwokWatch = "resume"
)

// DefaultKwokWatch is the kwok controller a cluster runs unless told: the
// patched one, whose watches do not replay (at 5000 nodes its runs had no
// stall; bench/SCALE.md, "Node churn with every controller, and a kwok
// that resumes its watches").
const DefaultKwokWatch = KwokWatchResume

// Version is how reports name this kwok: the release, with the patches
// that change what a run measures. The gate compares only runs on the same
// one.
func (w KwokWatch) Version() string {
	if w == KwokWatchResume {
		return KwokVersion + "+watch-resume+lease-spread"
	}
	return KwokVersion
}

// binary is the kwok controller's binary in the cache.
func (w KwokWatch) binary() string {
	if w == KwokWatchResume {
		return BinKwokResume
	}
	return BinKwok
}

// NodeLeaseDurationSeconds is the fake nodes' lease duration before
// kwokctl's heartbeat factor of 5: the leases last 200 s.
const NodeLeaseDurationSeconds = 40

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// withDefaults returns the config with defaults filled in, or an error that
// names the offending field.
func (c ClusterConfig) withDefaults() (ClusterConfig, error) {
	if c.Name == "" {
		c.Name = "dsbench"
	}
	if !dnsLabel.MatchString(c.Name) {
		return c, fmt.Errorf("cluster name %q: must be a DNS label (lower-case letters, digits and '-')", c.Name)
	}
	if c.Workdir == "" {
		c.Workdir = filepath.Join(".cache", "kwok")
	}
	abs, err := filepath.Abs(c.Workdir)
	if err != nil {
		return c, fmt.Errorf("workdir %q: %w", c.Workdir, err)
	}
	c.Workdir = abs
	if c.APIServerPort < 0 || c.APIServerPort > 65535 {
		return c, fmt.Errorf("apiserver port %d: must be between 0 and 65535", c.APIServerPort)
	}
	if c.KwokParallelism < 0 {
		return c, fmt.Errorf("kwok parallelism %d: must not be negative", c.KwokParallelism)
	}
	if c.KwokParallelism == 0 {
		c.KwokParallelism = DefaultKwokParallelism
	}
	switch c.KwokLogLevel {
	case "", "DEBUG", "INFO", "WARN", "ERROR":
	default:
		return c, fmt.Errorf("kwok log level %q: must be DEBUG, INFO, WARN or ERROR", c.KwokLogLevel)
	}
	switch c.KwokWatch {
	case "":
		c.KwokWatch = DefaultKwokWatch
	case KwokWatchRelist, KwokWatchResume:
	default:
		return c, fmt.Errorf("kwok watch %q: must be %q or %q", c.KwokWatch, KwokWatchRelist, KwokWatchResume)
	}
	if c.Audit != nil {
		if err := c.Audit.validate(); err != nil {
			return c, err
		}
	}
	if c.Timeout <= 0 {
		c.Timeout = 3 * time.Minute
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c, nil
}

// Cluster is a running KWOK cluster.
type Cluster struct {
	conf ClusterConfig
	// restarting is held while RestartAPIServer or ReviveDead starts
	// components, so that a supervisor never starts the API server that a
	// fault step holds down.
	restarting sync.Mutex
}

// Open returns a handle on the cluster named in conf without starting it.
func Open(conf ClusterConfig) (*Cluster, error) {
	conf, err := conf.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Cluster{conf: conf}, nil
}

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.conf.Name }

// KwokWatch is the kwok controller the cluster runs (or would run).
func (c *Cluster) KwokWatch() KwokWatch { return c.conf.KwokWatch }

// Dir is the folder that holds this cluster's files.
func (c *Cluster) Dir() string { return filepath.Join(c.conf.Workdir, "clusters", c.conf.Name) }

// Kubeconfig is the path of the cluster's admin kubeconfig.
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.Dir(), "kubeconfig.yaml") }

// LogDir holds the components' logs.
func (c *Cluster) LogDir() string { return filepath.Join(c.Dir(), "logs") }

// SaveLog writes the log of component (e.g. "kwok-controller"), gzipped, to
// dst, so that it outlives the cluster: kwok's log says when it patched each
// pod, which tells a pod it never started from one it was late to start.
func (c *Cluster) SaveLog(component, dst string) error {
	return gzipFile(filepath.Join(c.LogDir(), component+".log"), dst)
}

func gzipFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		return fmt.Errorf("compressing %s: %w", src, err)
	}
	return zw.Close()
}

// AuditLog is the path of kube-apiserver's audit log (JSON lines of
// audit.k8s.io/v1 Event), or "" when ClusterConfig.Audit is nil. It lives in
// the cluster's folder, so Down removes it: read or copy it before.
func (c *Cluster) AuditLog() string {
	if c.conf.Audit == nil {
		return ""
	}
	return filepath.Join(c.LogDir(), AuditLogName)
}

// auditPolicyPath is where the harness writes the policy for kwokctl, which
// copies it into the cluster's folder.
func (c *Cluster) auditPolicyPath() string {
	return filepath.Join(c.conf.Workdir, c.conf.Name+".audit-policy.yaml")
}

// RESTConfig returns a client config with client-side rate limits off.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	return LoadRESTConfig(c.Kubeconfig())
}

// LoadRESTConfig loads a kubeconfig and turns client-side rate limits off,
// so that the harness never becomes its own bottleneck.
func LoadRESTConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	// Inline the certificates. client-go caches transports by file path
	// when a kubeconfig names files, so a cluster brought up again under
	// the same name (new PKI, same paths) would be dialled with the dead
	// cluster's CA for the rest of the process.
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = "", "", ""
	cfg.QPS = -1
	cfg.Burst = 0
	cfg.Timeout = 60 * time.Second
	return cfg, nil
}

// Up brings a cluster up and waits until it can run pods: the API is ready,
// the `default` ServiceAccount exists and the pod stages are installed.
// A dead cluster of the same name (left by a crash or Ctrl-C) is cleaned up
// first; a live one is ErrClusterInUse.
func Up(ctx context.Context, conf ClusterConfig) (*Cluster, error) {
	c, err := Open(conf)
	if err != nil {
		return nil, err
	}
	conf = c.conf
	if err := conf.Binaries.Check(); err != nil {
		return nil, err
	}
	if conf.APIServerPort != 0 {
		if err := portFree(conf.APIServerPort); err != nil {
			return nil, fmt.Errorf("apiserver port %d: %w", conf.APIServerPort, err)
		}
	}
	if pids := c.livePIDs(); len(pids) > 0 {
		return nil, fmt.Errorf("cluster %q is running (pids %v; kubeconfig %s); bring it down with `dsbench cluster down --name %s`: %w",
			conf.Name, pids, c.Kubeconfig(), conf.Name, ErrClusterInUse)
	}
	if _, err := os.Stat(c.Dir()); err == nil {
		fmt.Fprintf(conf.Log, "cleaning up the remains of cluster %q\n", conf.Name)
		if err := c.Down(ctx); err != nil {
			return nil, fmt.Errorf("cleaning up dead cluster %q: %w", conf.Name, err)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, conf.Timeout)
	defer cancel()
	err = c.create(ctx)
	if err != nil && ctx.Err() == nil {
		// kwokctl picks free ports before it starts the components, so a
		// cluster started at the same moment can take one; try once more.
		fmt.Fprintf(conf.Log, "up failed (%v); retrying once\n", err)
		if derr := c.Down(ctx); derr == nil {
			err = c.create(ctx)
		}
	}
	if err != nil {
		if saved := c.saveLogs(); saved != "" {
			err = fmt.Errorf("%w (component logs saved in %s)", err, saved)
		}
		// Whatever half-started must not outlive us.
		downCtx, downCancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer downCancel()
		if derr := c.Down(downCtx); derr != nil {
			err = errors.Join(err, fmt.Errorf("tearing down after failed up: %w", derr))
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) create(ctx context.Context) error {
	if err := os.MkdirAll(c.conf.Workdir, 0o755); err != nil {
		return fmt.Errorf("creating workdir: %w", err)
	}
	if c.conf.Audit != nil {
		policy, err := AuditPolicy(*c.conf.Audit)
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.auditPolicyPath(), policy, 0o644); err != nil {
			return fmt.Errorf("writing audit policy: %w", err)
		}
	}
	cfgPath := filepath.Join(c.conf.Workdir, c.conf.Name+".kwokctl.yaml")
	data, err := c.kwokctlConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		return fmt.Errorf("writing kwokctl config: %w", err)
	}
	if err := c.kwokctl(ctx, "create", "cluster", "--config", cfgPath, "--kubeconfig", "", "--wait", "2m"); err != nil {
		return fmt.Errorf("creating cluster %q: %w (logs in %s)", c.conf.Name, err, c.LogDir())
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	// The API answering says nothing of the others: a component that lost a
	// port race exits (kwok: no node becomes Ready; kube-controller-manager:
	// no default ServiceAccount, ever). Checked on every poll, so that such
	// an up fails at once and is retried instead of waiting out its timeout.
	allAlive := func() error {
		for comp, pid := range c.componentPIDs() {
			if !processAlive(pid) {
				return fmt.Errorf("component %s (pid %d) exited during up (logs in %s)", comp, pid, c.LogDir())
			}
		}
		return nil
	}
	if err := waitReady(ctx, client, allAlive); err != nil {
		return err
	}
	if err := allAlive(); err != nil {
		return err
	}
	return ApplyStages(ctx, cfg, StageOptions{})
}

// saveLogs copies the cluster's component logs to <workdir>/<name>.failed-logs
// (replacing an earlier copy), so that Down after a failed up does not take
// the evidence with it. It returns the copy's path, or "" if nothing was saved.
func (c *Cluster) saveLogs() string {
	dst := filepath.Join(c.conf.Workdir, c.conf.Name+".failed-logs")
	if err := os.RemoveAll(dst); err != nil {
		return ""
	}
	if entries, err := os.ReadDir(c.LogDir()); err != nil || len(entries) == 0 {
		return ""
	}
	if err := os.CopyFS(dst, os.DirFS(c.LogDir())); err != nil {
		return ""
	}
	return dst
}

// waitReady waits for /readyz and for the default ServiceAccount, without
// which the apiserver refuses every pod.
// alive is checked on every poll; its error ends the wait at once.
func waitReady(ctx context.Context, client kubernetes.Interface, alive func() error) error {
	var last error // why the last poll said no, for the timeout's message
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := alive(); err != nil {
			return false, err
		}
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		switch {
		case err != nil:
			last = fmt.Errorf("/readyz: %w", err)
			return false, nil
		case string(body) != "ok":
			last = fmt.Errorf("/readyz said %q", body)
			return false, nil
		}
		_, err = client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			last = fmt.Errorf("default ServiceAccount: %w", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if last != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w (last: %v)", err, last)
		}
		return fmt.Errorf("waiting for the API and the default ServiceAccount: %w", err)
	}
	return nil
}

// DeleteCollectionWorkers is kube-apiserver's --delete-collection-workers.
const DeleteCollectionWorkers = 16

func (c *Cluster) kwokctlConfig() ([]byte, error) {
	disable, enable := true, true
	// One replica each: nothing to elect. With a Lease, a leader that
	// cannot renew it within 10 s exits, and at 5000 nodes the saturated
	// API server made kube-scheduler do so mid-suite: every later pod that
	// needed binding stayed Pending.
	noLeaderElection := configv1alpha1.ExtraArgs{Key: "leader-elect", Value: "false"}
	kcmArgs := []configv1alpha1.ExtraArgs{noLeaderElection}
	if !c.conf.UpstreamDaemonSetController {
		kcmArgs = append(kcmArgs, configv1alpha1.ExtraArgs{Key: "controllers", Value: "*,-daemonset-controller"})
	}
	apiserverArgs := []configv1alpha1.ExtraArgs{
		{Key: "delete-collection-workers", Value: strconv.Itoa(DeleteCollectionWorkers)},
		{Key: "v", Value: APIServerVerbosity}, // KwokPodWatchCloses reads its log
	}
	if c.conf.Audit != nil {
		// One file for the whole cluster's life: the default rotates at
		// 100 MB, and a reader of audit.log alone would miss the start.
		apiserverArgs = append(apiserverArgs, configv1alpha1.ExtraArgs{Key: "audit-log-maxsize", Value: "0"})
	}
	b := c.conf.Binaries
	ctl := configv1alpha1.KwokctlConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: configv1alpha1.GroupVersion.String(), Kind: configv1alpha1.KwokctlConfigurationKind},
		Options: configv1alpha1.KwokctlConfigurationOptions{
			Runtime:                     "binary",
			KubeVersion:                 KubernetesVersion,
			KwokVersion:                 KwokVersion,
			EtcdVersion:                 EtcdVersion,
			KubeApiserverPort:           uint32(c.conf.APIServerPort),
			KubeApiserverBinary:         b.Path(BinKubeAPIServer),
			KubeControllerManagerBinary: b.Path(BinKubeControllerManager),
			KubeSchedulerBinary:         b.Path(BinKubeScheduler),
			KubectlBinary:               b.Path(BinKubectl),
			KwokControllerBinary:        b.Path(c.conf.KwokWatch.binary()),
			EtcdBinary:                  b.Path(BinEtcd),
			CacheDir:                    filepath.Join(c.conf.Workdir, "cache"),
			DisableQPSLimits:            &disable,
			// kwokctl's default, pinned: kwokctl multiplies it by its
			// heartbeat factor (5), so the leases last 200 s and are renewed
			// every 50 s, and kube-controller-manager's node-monitor grace
			// is scaled alike (40 s to 200 s).
			NodeLeaseDurationSeconds: NodeLeaseDurationSeconds,
			EnableCRDs:               []string{"Stage"},
			// kwokctl's default is every interface: etcd without
			// authentication and kwok's debugging handlers (profiles
			// included, below) would be open to the network.
			BindAddress: "127.0.0.1",
		},
		ComponentsPatches: []configv1alpha1.ComponentPatches{
			{Name: "kube-controller-manager", ExtraArgs: kcmArgs},
			{Name: "kube-scheduler", ExtraArgs: []configv1alpha1.ExtraArgs{noLeaderElection}},
			// The default of one worker deletes a collection one object
			// at a time: resetting 2000 pods between runs took 12 s.
			{Name: "kube-apiserver", ExtraArgs: apiserverArgs},
			// pprof on etcd's client URL, for a profiled run (loopback).
			{Name: "etcd", ExtraArgs: []configv1alpha1.ExtraArgs{{Key: "enable-pprof", Value: "true"}}},
		},
	}
	if c.conf.KwokLogLevel != "" {
		ctl.ComponentsPatches = append(ctl.ComponentsPatches, configv1alpha1.ComponentPatches{
			Name: "kwok-controller", ExtraArgs: []configv1alpha1.ExtraArgs{{Key: "v", Value: c.conf.KwokLogLevel}},
		})
	}
	if c.conf.DisableScheduler {
		ctl.Options.Disable = []string{"kube-scheduler"}
	}
	if c.conf.Audit != nil {
		// The config file's form of `kwokctl create cluster --kube-audit-policy`.
		ctl.Options.KubeAuditPolicy = c.auditPolicyPath()
	}
	p := uint(c.conf.KwokParallelism)
	kw := configv1alpha1.KwokConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: configv1alpha1.GroupVersion.String(), Kind: configv1alpha1.KwokConfigurationKind},
		Options: configv1alpha1.KwokConfigurationOptions{
			PodPlayStageParallelism:          p,
			NodePlayStageParallelism:         p,
			NodeLeaseParallelism:             p,
			DisregardStatusWithLabelSelector: FrozenStatusLabel + "=true",
			// /debug/pprof on kwok's server (loopback, see BindAddress),
			// for a profiled run.
			EnableDebuggingHandlers: &enable,
			EnableProfilingHandler:  &enable,
		},
	}
	var out bytes.Buffer
	for i, obj := range []any{ctl, kw} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encoding kwokctl config: %w", err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(data)
	}
	return out.Bytes(), nil
}

// Down stops every process of the cluster and removes its files. It is safe
// to call on a cluster that is already down or half up.
func (c *Cluster) Down(ctx context.Context) error {
	pids := c.pids()
	var errs []error
	if _, err := os.Stat(c.Dir()); err == nil {
		if err := c.kwokctl(ctx, "delete", "cluster"); err != nil {
			errs = append(errs, fmt.Errorf("kwokctl delete cluster: %w", err))
		}
	}
	// kwokctl only signals; make sure nothing outlives us.
	for _, pid := range pids {
		if err := stopProcess(ctx, pid); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(c.Dir()); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", c.Dir(), err))
	}
	_ = os.Remove(filepath.Join(c.conf.Workdir, c.conf.Name+".kwokctl.yaml"))
	_ = os.Remove(c.auditPolicyPath())
	return errors.Join(errs...)
}

// Status describes a cluster.
type Status struct {
	Name       string
	Dir        string
	Kubeconfig string
	Exists     bool
	// Processes maps each component to its pid and whether it is alive.
	Processes  []Process
	APIReady   bool
	APIError   string
	NodeCount  int
	ServerVers string
}

// Process is one component process.
type Process struct {
	Component string
	PID       int
	Alive     bool
}

// Status reports what runs and whether the API answers.
func (c *Cluster) Status(ctx context.Context) Status {
	st := Status{Name: c.conf.Name, Dir: c.Dir(), Kubeconfig: c.Kubeconfig()}
	if _, err := os.Stat(c.Dir()); err != nil {
		return st
	}
	st.Exists = true
	for comp, pid := range c.componentPIDs() {
		st.Processes = append(st.Processes, Process{Component: comp, PID: pid, Alive: processAlive(pid)})
	}
	sortProcesses(st.Processes)
	cfg, err := c.RESTConfig()
	if err != nil {
		st.APIError = err.Error()
		return st
	}
	cfg.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		st.APIError = err.Error()
		return st
	}
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		st.APIError = err.Error()
		return st
	}
	st.ServerVers = v.GitVersion
	st.APIReady = true
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err == nil {
		st.NodeCount = len(nodes.Items)
	}
	return st
}

func (c *Cluster) kwokctl(ctx context.Context, args ...string) error {
	full := append([]string{"--name", c.conf.Name}, args...)
	cmd := exec.CommandContext(ctx, c.conf.Binaries.Path(BinKwokctl), full...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+c.conf.Workdir)
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, c.conf.Log)
	cmd.Stderr = cmd.Stdout
	// kwokctl must finish its own cleanup even when we are interrupted.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kwokctl %s: %w: %s", strings.Join(args, " "), err, lastLines(out.String(), 5))
	}
	return nil
}

// componentPIDs reads kwokctl's pid files.
func (c *Cluster) componentPIDs() map[string]int {
	out := map[string]int{}
	dir := filepath.Join(c.Dir(), "pids")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 {
			continue
		}
		out[strings.TrimSuffix(e.Name(), ".pid")] = pid
	}
	return out
}

func (c *Cluster) pids() []int {
	var pids []int
	for _, pid := range c.componentPIDs() {
		pids = append(pids, pid)
	}
	return pids
}

func (c *Cluster) livePIDs() []int {
	var live []int
	for _, pid := range c.pids() {
		if processAlive(pid) {
			live = append(live, pid)
		}
	}
	return live
}

// LivePIDs lists the cluster's processes that are still running.
func (c *Cluster) LivePIDs() []int { return c.livePIDs() }

func portFree(port int) error {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return fmt.Errorf("port is already in use: %w", err)
	}
	return l.Close()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ClusterNames lists the clusters that have files in workdir.
func ClusterNames(workdir string) []string {
	entries, err := os.ReadDir(filepath.Join(workdir, "clusters"))
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}
