package kwok

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// APIServerRestartTimeout bounds RestartAPIServer's wait, after the
// downtime, for kube-apiserver to run again and answer /readyz.
const APIServerRestartTimeout = 2 * time.Minute

// leaderElectionSettle is how long after the kill RestartAPIServer looks at
// the other components. With leader election on (kwokctl's default, which
// the harness turns off: see config), kube-controller-manager and
// kube-scheduler hold a leader Lease with the upstream defaults (renew
// deadline 10 s, a try every 2 s); a leader that cannot renew in time exits
// ("leaderelection lost"), at the latest about 2 s + 10 s after the API
// server went away. The check stays for clusters made before, and for any
// other exit.
const leaderElectionSettle = 15 * time.Second

// RestartAPIServer crashes kube-apiserver (SIGKILL) and, after downtime,
// has kwokctl start it again with the command line it was created with,
// then waits until /readyz answers ok and the default ServiceAccount is
// served again (at most APIServerRestartTimeout). Clients see their
// connections reset, their watches end, and a watch resumed from a resource
// version older than the new watch cache's start gets 410 Gone.
//
// SIGKILL, not SIGTERM: a crash gives no graceful shutdown (no draining of
// requests, no clean end of watches), which is the harsher fault and the
// one that an OOM kill or a lost machine deals; it also makes the downtime
// exact, where a graceful shutdown may take up to a minute.
//
// kwokctl v0.8.0 has no command to restart one component, but `kwokctl start
// cluster` starts each component whose pid file names no live process, from
// the binary and arguments in kwokctl's record (kwok.yaml), and writes the
// new pid file: so Down and Status see the new process. The dead process's
// pid file is removed first, as `kwokctl stop cluster` does, since kwokctl
// would take a zombie for a live process; its log, which kwokctl would
// truncate, is kept as logs/<component>.<old pid>.log.
//
// kube-controller-manager and kube-scheduler may exit while the API server
// is away: a leader that cannot renew its Lease does. RestartAPIServer
// waits until such an exit would have happened (15 s after the kill in all)
// and starts any component that died again, as a supervisor would; it says
// so on ClusterConfig.Log.
//
// Cancelling ctx cuts the downtime short but not the restart: the API server
// is never left down. RestartAPIServer must not run at the same time as
// another RestartAPIServer, Up or Down of the same cluster.
func (c *Cluster) RestartAPIServer(ctx context.Context, downtime time.Duration) error {
	if downtime < 0 {
		return fmt.Errorf("restarting kube-apiserver of cluster %q: downtime %v is negative", c.conf.Name, downtime)
	}
	c.restarting.Lock()
	defer c.restarting.Unlock()
	before := c.componentPIDs()
	wasAlive := map[string]int{}
	for comp, pid := range before {
		if processAlive(pid) {
			wasAlive[comp] = pid
		}
	}
	if err := c.killComponent(ComponentKubeAPIServer, before[ComponentKubeAPIServer]); err != nil {
		return fmt.Errorf("restarting kube-apiserver of cluster %q: %w", c.conf.Name, err)
	}
	killed := time.Now()
	fmt.Fprintf(c.conf.Log, "killed kube-apiserver (pid %d) of cluster %q; starting it again in %v\n", before[ComponentKubeAPIServer], c.conf.Name, downtime)

	var cancelled error
	select {
	case <-ctx.Done():
		cancelled = ctx.Err()
	case <-time.After(downtime):
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), APIServerRestartTimeout)
	defer cancel()
	newPID, err := c.startDeadComponents(rctx)
	if err != nil {
		return errors.Join(cancelled, fmt.Errorf("restarting kube-apiserver of cluster %q: %w", c.conf.Name, err))
	}
	if cancelled != nil {
		return fmt.Errorf("restarting kube-apiserver of cluster %q: started again (pid %d), without waiting for it to be ready: %w", c.conf.Name, newPID, cancelled)
	}
	if err := c.waitAPIServer(rctx, newPID); err != nil {
		return fmt.Errorf("restarting kube-apiserver of cluster %q: %w", c.conf.Name, err)
	}
	fmt.Fprintf(c.conf.Log, "kube-apiserver of cluster %q is ready again (pid %d), %v after the kill\n", c.conf.Name, newPID, time.Since(killed).Round(time.Millisecond))

	select {
	case <-ctx.Done():
		return fmt.Errorf("restarting kube-apiserver of cluster %q: ready again, but the other components were not checked: %w", c.conf.Name, ctx.Err())
	case <-time.After(time.Until(killed.Add(leaderElectionSettle))):
	}
	if dead := deadComponents(wasAlive, c.componentPIDs(), processAlive); len(dead) > 0 {
		fmt.Fprintf(c.conf.Log, "components %v of cluster %q exited while kube-apiserver was down; starting them again\n", dead, c.conf.Name)
		sctx, cancel := context.WithTimeout(ctx, APIServerRestartTimeout)
		defer cancel()
		if _, err := c.startDeadComponents(sctx); err != nil {
			return fmt.Errorf("restarting kube-apiserver of cluster %q: starting %v again: %w", c.conf.Name, dead, err)
		}
		if dead := deadComponents(wasAlive, c.componentPIDs(), processAlive); len(dead) > 0 {
			return fmt.Errorf("restarting kube-apiserver of cluster %q: components %v exited and did not start again (logs in %s)", c.conf.Name, dead, c.LogDir())
		}
	}
	return nil
}

// ReviveDead has kwokctl start again every component of the cluster whose
// process is gone, as a supervisor (kubelet, systemd) would on a real
// control plane, and returns the ones it started, sorted; none when all
// run. A kube-apiserver it starts is waited for (at most
// APIServerRestartTimeout). It does nothing while RestartAPIServer runs,
// which holds the API server down on purpose and starts the others itself.
//
// A dead component is not the controller's doing: kube-scheduler gone
// leaves every pod that needs binding Pending, whoever created it. Seen at
// 5000 nodes, when kube-scheduler still ran with leader election and lost
// its Lease to a saturated API server: the next run waited on a scheduler
// that was no more.
func (c *Cluster) ReviveDead(ctx context.Context) ([]string, error) {
	if !c.restarting.TryLock() {
		return nil, nil
	}
	defer c.restarting.Unlock()
	var dead []string
	for comp, pid := range c.componentPIDs() {
		if !processAlive(pid) {
			dead = append(dead, comp)
		}
	}
	if len(dead) == 0 {
		return nil, nil
	}
	slices.Sort(dead)
	fmt.Fprintf(c.conf.Log, "components %v of cluster %q exited; starting them again\n", dead, c.conf.Name)
	apiserver, err := c.startDeadComponents(ctx)
	if err != nil {
		return dead, fmt.Errorf("cluster %q: %w", c.conf.Name, err)
	}
	if slices.Contains(dead, ComponentKubeAPIServer) {
		if err := c.waitAPIServer(ctx, apiserver); err != nil {
			return dead, fmt.Errorf("cluster %q: %w", c.conf.Name, err)
		}
	}
	return dead, nil
}

// killComponent sends SIGKILL to comp's process, pid, once it is sure that
// pid runs comp's binary (a stale pid file may name a pid that was reused),
// and waits until it is gone.
func (c *Cluster) killComponent(comp string, pid int) error {
	if pid == 0 {
		return fmt.Errorf("%s is not running: no pid in %s", comp, c.pidFile(comp))
	}
	if !processAlive(pid) {
		return fmt.Errorf("%s (pid %d) is not running", comp, pid)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return fmt.Errorf("%s (pid %d): reading its command line: %w", comp, pid, err)
	}
	if name := commandName(cmdline); name != comp {
		return fmt.Errorf("%s names pid %d, which runs %q, not %s; not killing it", c.pidFile(comp), pid, name, comp)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (pid %d): %w", comp, pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (pid %d) survived SIGKILL for 10s", comp, pid)
		}
	}
	return nil
}

// commandName is the base name of argv[0] in a /proc/<pid>/cmdline.
func commandName(cmdline []byte) string {
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return filepath.Base(string(argv0))
}

func (c *Cluster) pidFile(comp string) string {
	return filepath.Join(c.Dir(), "pids", comp+".pid")
}

func (c *Cluster) logFile(comp string) string {
	return filepath.Join(c.LogDir(), comp+".log")
}

// retireDead removes the pid file of every component whose process is gone
// and keeps its log as <component>.<pid>.log: kwokctl's start takes a pid
// file that names a zombie for a live process, and truncates the log of a
// component it starts. It returns the components it retired, sorted.
func (c *Cluster) retireDead() ([]string, error) {
	var retired []string
	var errs []error
	for comp, pid := range c.componentPIDs() {
		if processAlive(pid) {
			continue
		}
		if err := os.Remove(c.pidFile(comp)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the pid file of dead %s: %w", comp, err))
			continue
		}
		kept := filepath.Join(c.LogDir(), comp+"."+strconv.Itoa(pid)+".log")
		if err := os.Rename(c.logFile(comp), kept); err != nil && !errors.Is(err, os.ErrNotExist) {
			// Not worth failing the restart for.
			fmt.Fprintf(c.conf.Log, "keeping the log of dead %s: %v\n", comp, err)
		}
		retired = append(retired, comp)
	}
	slices.Sort(retired)
	return retired, errors.Join(errs...)
}

// startDeadComponents has kwokctl start every component that does not run,
// and returns kube-apiserver's pid.
func (c *Cluster) startDeadComponents(ctx context.Context) (apiserverPID int, err error) {
	retired, err := c.retireDead()
	if err != nil {
		return 0, err
	}
	// `kwokctl start cluster` starts what does not run, in the order of
	// the components' links, then waits until `kubectl get --raw /version`
	// answers, but never fails for it: --timeout cuts that wait short, so
	// that waitAPIServer's error says what did not come back. The forked
	// components do not share kwokctl's context.
	if err := c.kwokctl(ctx, "start", "cluster", "--timeout", "30s"); err != nil {
		return 0, fmt.Errorf("starting %v again: %w", retired, err)
	}
	pids := c.componentPIDs()
	for _, comp := range retired {
		if pids[comp] == 0 {
			return 0, fmt.Errorf("kwokctl start cluster wrote no pid file for %s (logs in %s)", comp, c.LogDir())
		}
		fmt.Fprintf(c.conf.Log, "started %s of cluster %q again (pid %d)\n", comp, c.conf.Name, pids[comp])
	}
	return pids[ComponentKubeAPIServer], nil
}

// waitAPIServer waits until kube-apiserver, pid, answers /readyz with ok and
// serves the default ServiceAccount; it fails at once if pid exits.
func (c *Cluster) waitAPIServer(ctx context.Context, pid int) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	// No single request may eat the whole wait.
	cfg.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	alive := func() error {
		if !processAlive(pid) {
			return fmt.Errorf("kube-apiserver (pid %d) exited", pid)
		}
		return nil
	}
	if err := waitReady(ctx, client, alive); err != nil {
		// The log goes with the cluster, which a failing test takes down.
		tail, lerr := logTail(c.logFile(ComponentKubeAPIServer), 4)
		if lerr != nil {
			tail = lerr.Error()
		}
		return fmt.Errorf("kube-apiserver (pid %d) did not come back: %w (log in %s, ending: %s)", pid, err, c.logFile(ComponentKubeAPIServer), tail)
	}
	return nil
}

// deadComponents lists, sorted, the components of wasAlive whose process
// (as the pid files say now) does not run.
func deadComponents(wasAlive, now map[string]int, alive func(pid int) bool) []string {
	var dead []string
	for comp := range wasAlive {
		if pid := now[comp]; pid == 0 || !alive(pid) {
			dead = append(dead, comp)
		}
	}
	slices.Sort(dead)
	return dead
}
