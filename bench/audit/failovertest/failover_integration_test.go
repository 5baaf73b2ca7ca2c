package failovertest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dsbench/dsbench/bench/audit"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/kwok/kwoktest"
)

// leaseNamespace holds the replicas' Lease; the cluster's audit policy logs
// every Lease write in it.
const leaseNamespace = "dsbench-failover"

func TestMain(m *testing.M) {
	kwoktest.Main(m, "failover-pkg-test", func(c *kwok.ClusterConfig) {
		c.Audit = &kwok.AuditConfig{LeaseNamespace: leaseNamespace}
	})
}

// The replicas' election timing, short so that three failovers fit in one
// rollout. validate in cmd/daemonset-controller/options.go wants
// renewDeadline > 1.2 × retryPeriod and leaseDuration > renewDeadline. The
// lease is whole seconds: client-go writes it to the Lease as
// leaseDurationSeconds, truncated, and standbys wait that long.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// The workload. With maxUnavailable 1 and maxSurge 0 the rollout replaces
// one pod at a time, and each new pod turns Ready readyDelay after binding
// (a kwok stage), so that 30 nodes take about 40 s to roll with no failover:
// long enough for three kills with rollout progress between them.
const (
	nodeCount      = 30
	maxUnavailable = 1
	readyDelay     = time.Second
	imageV1        = "example.com/agent:v1"
	imageV2        = "example.com/agent:v2"

	kills = 3
	// Each new leader must update this many more nodes before the next
	// kill: it acted, and the rollout went on under it.
	progressBetweenKills = 2
	// A kill must leave this many nodes to update, so that the new leader
	// has pod writes to make: the kill is mid-rollout.
	minRemainingAtKill = 3
)

// Bounds of the waits, for a loaded 2-core machine.
const (
	startTimeout    = 30 * time.Second
	convergeTimeout = 90 * time.Second
	rolloutTimeout  = 3 * time.Minute
	stopTimeout     = 30 * time.Second
	cleanupTimeout  = 2 * time.Minute
	pollEvery       = 100 * time.Millisecond
)

// TestLeaderFailoverUnderLoad runs two replicas of the controller binary,
// SIGKILLs the leader three times mid-rollout (restarting it each time as a
// standby), and proves from the API server's audit log that no replica
// wrote outside its own term of the Lease, that each standby took over
// within takeoverBound of the killed leader's last renewal, and that each
// new leader moved the rollout on. A watch on the pods proves meanwhile that
// no node ever ran two live daemon pods and that no more than
// maxUnavailable nodes lacked a Ready one; at the end every node runs one
// Ready pod of the new template.
func TestLeaderFailoverUnderLoad(t *testing.T) {
	cluster, cfg, client := kwoktest.Cluster(t)
	ctx := t.Context()
	bin := buildController(t)

	suffix := strconv.FormatUint(uint64(rand.Uint32()), 16)
	f := &fixture{
		t: t, ctx: ctx, client: client,
		ns:        "failover-" + suffix,
		leaseName: "failover-" + suffix, // fresh per run: the audit log keeps every run's
		// Fresh node names: kwok v0.8.0 stalls pods bound to a node
		// re-created under a deleted one's name (kwok/stall_integration_test.go).
		pool: kwok.NodePool{Prefix: "failover-" + suffix, Count: nodeCount},
	}
	f.nodes = f.pool.NodeNames()

	if err := kwok.ApplyStages(ctx, cfg, kwok.StageOptions{ReadyDelay: readyDelay}); err != nil {
		t.Fatalf("slowing pods down: %v", err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := kwok.ApplyStages(cctx, cfg, kwok.StageOptions{}); err != nil {
			t.Errorf("cleanup: restoring pod stages: %v", err)
		}
	})
	f.createNodes()
	f.createNamespaces()

	// Every event of this run is received after this instant: earlier
	// runs' replicas, in the same cluster's log, are left out.
	start := time.Now()
	f.reps = &replicas{t: t, ctx: ctx, bin: bin, dir: t.TempDir(), current: map[string]*proc{}, args: []string{
		"--kubeconfig", cluster.Kubeconfig(),
		"--leader-elect=true",
		"--leader-elect-resource-namespace", leaseNamespace,
		"--leader-elect-resource-name", f.leaseName,
		"--leader-elect-lease-duration", leaseDuration.String(),
		"--leader-elect-renew-deadline", renewDeadline.String(),
		"--leader-elect-retry-period", retryPeriod.String(),
		// Served as deployed, on ports of the kernel's choosing.
		"--metrics-bind-address", "127.0.0.1:0",
		"--health-probe-bind-address", "127.0.0.1:0",
	}}
	t.Cleanup(f.reps.logTailsOnFailure)
	t.Cleanup(f.deleteLease)

	// A leads before B starts, so that no handover but the kills' happens.
	f.reps.start("A")
	firstID, first := f.waitLeader("", startTimeout)
	if first.slot != "A" {
		t.Fatalf("the first leader is replica %s, want A", first.slot)
	}
	f.waitStandingBy(f.reps.start("B"))
	t.Logf("replica A leads as %s; B stands by", firstID)

	// The pods' watch starts before the DaemonSet exists, so that it sees
	// every state of them.
	w := f.watchPods(imageV1)
	ds := f.createDaemonSet()
	f.waitRollout(imageV1, convergeTimeout)
	// The watch may trail the list that saw the first rollout done, and
	// the states it has yet to deliver are the create's: it arms itself
	// when it reaches the converged state, and the rollout waits for that.
	f.waitFor(convergeTimeout, "the pod watch to reach the converged state", func(context.Context) (bool, string, error) {
		return w.armed.Load(), "", nil
	})

	patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":"agent","image":%q}]}}}}`, imageV2)
	if _, err := client.AppsV1().DaemonSets(ds.Namespace).Patch(ctx, ds.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("starting the rollout: %v", err)
	}
	f.waitUpdated(progressBetweenKills)

	var done []kill
	for i := range kills {
		done = append(done, f.killLeader(i))
		if i < kills-1 {
			f.waitUpdated(done[i].updated + progressBetweenKills)
		}
	}
	f.waitRollout(imageV2, rolloutTimeout)

	w.judge(t)

	// The standby first: then the leader's release hands the Lease to
	// no one, and the log's handovers are the kills' alone.
	f.stopAll()

	// Read before the cluster goes down: Down deletes the log.
	log, err := audit.ReadFile(cluster.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	events := since(log.Events, start)
	rep, err := audit.Check(audit.Config{LeaseNamespace: leaseNamespace, LeaseName: f.leaseName, LeaseDuration: leaseDuration}, events)
	if err != nil {
		t.Fatal(err)
	}
	f.judge(rep, events, done)
	if t.Failed() {
		t.Logf("audit report of %s (%d events of this run):\n%s", cluster.AuditLog(), len(events), rep)
	} else {
		t.Logf("audit: %s", strings.SplitN(rep.String(), "\n", 2)[0])
	}
}

// kill is one SIGKILL of the leader and the takeover that followed.
type kill struct {
	from, to string // identities
	toSlot   string
	// updated counts the nodes updated at the takeover.
	updated int
}

// judge asserts what the audit report must show of the run.
func (f *fixture) judge(rep audit.Report, events []audit.Event, done []kill) {
	t := f.t
	if !rep.OK() {
		t.Errorf("%d writes outside the writer's own term of the Lease (two replicas acting at once, or one acting without the Lease):", len(rep.Violations))
		for _, v := range rep.Violations {
			t.Errorf("  %s", v)
		}
	}
	// The policy logs the Lease's bodies, so that expiry and release are
	// judged from the records themselves, not estimated.
	for i, tm := range rep.Terms {
		if !tm.Exact {
			t.Errorf("term %d (%s): the audit log has no Lease body; expiry is only estimated", i, tm.Holder)
		}
	}
	// One handover per kill, each from the killed leader to the standby.
	if got := rep.LeaderChanges(); got != len(done) || got < kills {
		t.Errorf("%d leader changes in the audit log, want %d (one per kill)", got, len(done))
	}
	bound := takeoverBound(leaseDuration, retryPeriod)
	for i, h := range rep.Handovers {
		if i < len(done) && (h.From != done[i].from || h.To != done[i].to) {
			t.Errorf("handover %d: %s -> %s, but kill %d was of %s, and %s took over", i, h.From, h.To, i, done[i].from, done[i].to)
		}
		if h.Released {
			t.Errorf("handover %d: %s released the Lease, though it was killed", i, h.From)
		}
		if h.BeforeExpiry {
			t.Errorf("handover %d: %s took the Lease %v after %s's last renewal, before the record it saw first can have expired, though a killed leader never releases", i, h.To, h.Gap, h.From)
		}
		if h.Gap > bound {
			t.Errorf("handover %d: %s took the Lease %v after %s's last renewal, more than %v (lease %v, retry period %v)", i, h.To, h.Gap, h.From, bound, leaseDuration, retryPeriod)
		}
	}
	p50, maxGap := rep.TakeoverGaps()
	t.Logf("takeover gaps: p50 %v, max %v, bound %v", p50, maxGap, bound)

	// Each new leader moved the rollout, and so both replicas acted; the
	// check above says that they did at different times.
	writes := podWritesByIdentity(events)
	for i, k := range done {
		if writes[k.to] == 0 {
			t.Errorf("kill %d: %s (replica %s) took over with %d of %d nodes left to update, but made no pod writes", i, k.to, k.toSlot, nodeCount-k.updated, nodeCount)
		}
	}
	bySlot := map[string]int{}
	for _, p := range f.reps.all {
		if id := p.identity(); id != "" {
			bySlot[p.slot] += writes[id]
		}
	}
	for _, slot := range []string{"A", "B"} {
		if bySlot[slot] == 0 {
			t.Errorf("replica %s made no pod writes", slot)
		}
	}
	t.Logf("pod writes by identity %v, by replica %v", writes, bySlot)
}

// ---------------------------------------------------------------------------
// The cluster side: nodes, namespaces, the DaemonSet, the Lease, waits.

// fixture is the run's share of the cluster and its replicas.
type fixture struct {
	t         *testing.T
	ctx       context.Context
	client    kubernetes.Interface
	ns        string
	leaseName string
	pool      kwok.NodePool
	nodes     []string
	reps      *replicas
}

// createNodes creates the pool and waits until it is schedulable; cleanup
// deletes it.
func (f *fixture) createNodes() {
	t := f.t
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := kwok.DeleteNodes(ctx, f.client, f.nodes, 0); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := kwok.CreateNodes(f.ctx, f.client, f.pool, 0); err != nil {
		t.Fatal(err)
	}
	f.waitFor(convergeTimeout, fmt.Sprintf("%d nodes schedulable", nodeCount), func(ctx context.Context) (bool, string, error) {
		list, err := f.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwok.PoolLabel + "=" + f.pool.Prefix})
		if err != nil {
			return false, "", err
		}
		ok := 0
		for i := range list.Items {
			if kwok.NodeSchedulable(&list.Items[i]) {
				ok++
			}
		}
		return ok == nodeCount, fmt.Sprintf("%d of %d schedulable", ok, nodeCount), nil
	})
}

// createNamespaces makes the Lease's namespace, kept for later runs, and
// the DaemonSet's, which cleanup deletes (before the nodes, so that kwok
// still finalizes its pods).
func (f *fixture) createNamespaces() {
	t := f.t
	_, err := f.client.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", leaseNamespace, err)
	}
	if _, err := f.client.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", f.ns, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := f.client.CoreV1().Namespaces().Delete(ctx, f.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting namespace %s: %v", f.ns, err)
			return
		}
		err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := f.client.CoreV1().Namespaces().Get(ctx, f.ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("cleanup: namespace %s not gone within %v", f.ns, cleanupTimeout)
		}
	})
	// Without its default ServiceAccount the namespace refuses every pod.
	f.waitFor(startTimeout, "default ServiceAccount in "+f.ns, func(ctx context.Context) (bool, string, error) {
		_, err := f.client.CoreV1().ServiceAccounts(f.ns).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "missing", nil
		}
		return err == nil, "", err
	})
}

func (f *fixture) deleteLease() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := f.client.CoordinationV1().Leases(leaseNamespace).Delete(ctx, f.leaseName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Errorf("cleanup: deleting Lease %s/%s: %v", leaseNamespace, f.leaseName, err)
	}
}

// createDaemonSet creates a DaemonSet of imageV1 on the pool's nodes,
// rolling one node at a time with no surge.
func (f *fixture) createDaemonSet() *appsv1.DaemonSet {
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: f.ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{kwok.PoolLabel: f.pool.Prefix},
					Containers:   []corev1.Container{{Name: "agent", Image: imageV1}},
				},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{
					MaxUnavailable: ptr.To(intstr.FromInt32(maxUnavailable)),
					MaxSurge:       ptr.To(intstr.FromInt32(0)),
				},
			},
		},
	}
	out, err := f.client.AppsV1().DaemonSets(f.ns).Create(f.ctx, ds, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("creating DaemonSet %s/%s: %v", ds.Namespace, ds.Name, err)
	}
	return out
}

// rollout lists the pods and says how far they are from every node running
// one Ready pod of image (rolloutState); the namespace holds no other pods.
func (f *fixture) rollout(ctx context.Context, image string) (updated int, problems []string, err error) {
	list, err := f.client.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, nil, err
	}
	updated, problems = rolloutState(list.Items, f.nodes, image)
	return updated, problems, nil
}

// waitRollout waits until every node runs exactly one live, Ready pod of
// image and nothing else is left: computed from the nodes the test made,
// never from the DaemonSet's status.
func (f *fixture) waitRollout(image string, timeout time.Duration) {
	f.t.Helper()
	f.waitFor(timeout, fmt.Sprintf("every node running one Ready pod of %s", image), func(ctx context.Context) (bool, string, error) {
		_, problems, err := f.rollout(ctx, image)
		return err == nil && len(problems) == 0, strings.Join(problems, "\n"), err
	})
}

// waitUpdated waits until at least n nodes run a Ready pod of imageV2.
func (f *fixture) waitUpdated(n int) {
	f.t.Helper()
	f.waitFor(convergeTimeout, fmt.Sprintf("%d nodes updated", n), func(ctx context.Context) (bool, string, error) {
		updated, _, err := f.rollout(ctx, imageV2)
		return updated >= n, fmt.Sprintf("%d updated", updated), err
	})
}

// holder is the Lease's holder, "" if there is none or no Lease yet.
func (f *fixture) holder(ctx context.Context) (string, error) {
	l, err := f.client.CoordinationV1().Leases(leaseNamespace).Get(ctx, f.leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), nil
}

// waitLeader waits until the Lease has a holder other than not and a
// running replica has logged that it leads as that identity.
func (f *fixture) waitLeader(not string, timeout time.Duration) (string, *proc) {
	f.t.Helper()
	var id string
	var leader *proc
	f.waitFor(timeout, fmt.Sprintf("a leader other than %q", not), func(ctx context.Context) (bool, string, error) {
		h, err := f.holder(ctx)
		if err != nil || h == "" || h == not {
			return false, fmt.Sprintf("holder %q", h), err
		}
		id, leader = h, f.reps.byIdentity(h)
		if leader == nil || f.reps.current[leader.slot] != leader {
			return false, fmt.Sprintf("holder %q: no running replica has logged that it leads as it", h), nil
		}
		return true, "", nil
	})
	return id, leader
}

// waitStandingBy waits until p has seen the Lease and stands by.
func (f *fixture) waitStandingBy(p *proc) {
	f.t.Helper()
	f.waitFor(startTimeout, fmt.Sprintf("replica %s standing by", p), func(context.Context) (bool, string, error) {
		data, err := os.ReadFile(p.log)
		return standsBy(data), "no \"Standing by\" line yet", err
	})
}

// killLeader SIGKILLs the leader mid-rollout, waits for the standby to take
// the Lease, and restarts the killed replica as the new standby.
func (f *fixture) killLeader(i int) kill {
	t := f.t
	t.Helper()
	updated, _, err := f.rollout(f.ctx, imageV2)
	if err != nil {
		t.Fatal(err)
	}
	if left := nodeCount - updated; left < minRemainingAtKill {
		t.Fatalf("kill %d: only %d of %d nodes left to update: the rollout outran the kills (slow it with readyDelay or more nodes)", i, left, nodeCount)
	}
	fromID, from := f.waitLeader("", startTimeout)
	killed := time.Now()
	from.kill()
	select {
	case <-from.done:
	case <-time.After(stopTimeout):
		t.Fatalf("kill %d: replica %s still running %v after SIGKILL", i, from, stopTimeout)
	}
	// Generous: the assertion on the takeover's speed is the audit log's.
	toID, to := f.waitLeader(fromID, 3*takeoverBound(leaseDuration, retryPeriod))
	took := time.Since(killed)
	if to.slot == from.slot {
		t.Fatalf("kill %d: the Lease went from %s to %s, both replica %s", i, fromID, toID, to.slot)
	}
	k := kill{from: fromID, to: toID, toSlot: to.slot}
	k.updated, _, err = f.rollout(f.ctx, imageV2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kill %d: SIGKILLed replica %s (%s) with %d of %d nodes updated; replica %s (%s) took the Lease %v later",
		i, from.slot, fromID, updated, nodeCount, to.slot, toID, took.Round(time.Millisecond))
	f.waitStandingBy(f.reps.start(from.slot))
	return k
}

// stopAll stops the replicas gracefully, standbys first and the leader
// last; each must exit 0.
func (f *fixture) stopAll() {
	t := f.t
	t.Helper()
	leaderID, err := f.holder(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader := f.reps.byIdentity(leaderID)
	var order []*proc
	for _, slot := range []string{"A", "B"} {
		if p := f.reps.current[slot]; p != leader {
			order = append(order, p)
		}
	}
	if leader != nil {
		order = append(order, leader)
	}
	for _, p := range order {
		if err := p.stop(); err != nil {
			t.Errorf("stopping replica %s: %v", p, err)
		}
	}
}

// waitFor polls cond until it is done or timeout passes; then the test
// fails with what and the last state cond described. Errors of cond are
// retried; a replica exiting on its own fails the test at once.
func (f *fixture) waitFor(timeout time.Duration, what string, cond func(ctx context.Context) (done bool, state string, err error)) {
	f.t.Helper()
	var state string
	var lastErr error
	start := time.Now()
	err := wait.PollUntilContextTimeout(f.ctx, pollEvery, timeout, true, func(ctx context.Context) (bool, error) {
		if f.reps != nil {
			if err := f.reps.exited(); err != nil {
				return false, err
			}
		}
		done, s, err := cond(ctx)
		state, lastErr = s, err
		return err == nil && done, nil
	})
	if err != nil {
		f.t.Fatalf("waiting %v for %s: %v\nlast state: %s\nlast error: %v", timeout, what, err, state, lastErr)
	}
	if d := time.Since(start); d > 3*time.Second {
		f.t.Logf("waited %v for %s", d.Round(time.Millisecond), what)
	}
}

// ---------------------------------------------------------------------------
// The watch on the pods.

// podWatch checks instantProblems after each watch event of the
// DaemonSet's pods (kwoktest.WatchPods), so that no intermediate state is
// missed (polling could skip a short overlap).
type podWatch struct {
	*kwoktest.PodWatch
	// armed turns the unavailability check on, from the first state in
	// which every node runs one Ready pod of the image watchPods was given.
	armed atomic.Bool
	// Read after Stop.
	violations []string
	dropped    int
	judged     bool
}

const maxViolations = 20

func (f *fixture) watchPods(armAt string) *podWatch {
	f.t.Helper()
	w := &podWatch{}
	seen := map[string]bool{} // each problem once
	pw, err := kwoktest.WatchPods(f.ctx, f.client, f.ns, func(pods []*corev1.Pod, rv string) {
		if !w.armed.Load() {
			state := make([]corev1.Pod, len(pods))
			for i, p := range pods {
				state[i] = *p
			}
			if _, problems := rolloutState(state, f.nodes, armAt); len(problems) == 0 {
				w.armed.Store(true)
			}
		}
		for _, v := range instantProblems(pods, f.nodes, maxUnavailable, w.armed.Load()) {
			switch {
			case seen[v]:
			case len(w.violations) < maxViolations:
				seen[v] = true
				w.violations = append(w.violations, fmt.Sprintf("%s (at resourceVersion %s)", v, rv))
			default:
				w.dropped++
			}
		}
	})
	if err != nil {
		f.t.Fatal(err)
	}
	w.PodWatch = pw
	// A test that stops early still says what the watch saw until then.
	f.t.Cleanup(func() { w.judge(f.t) })
	return w
}

// judge stops the watch and fails t for every problem it saw; only its
// first call reports.
func (w *podWatch) judge(t *testing.T) {
	t.Helper()
	if w.judged {
		return
	}
	w.judged = true
	w.Stop()
	t.Logf("pod watch: %d events", w.Events())
	if w.Relists() > 0 {
		t.Errorf("the pod watch had to relist %d times: the states in between went unseen", w.Relists())
	}
	for _, v := range w.violations {
		t.Errorf("pods: %s", v)
	}
	if w.dropped > 0 {
		t.Errorf("pods: and %d more violations", w.dropped)
	}
}

// ---------------------------------------------------------------------------
// The replicas: child processes of the controller binary.

// buildController builds the controller from this checkout, so that the
// binary under test is never older than the test.
func buildController(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "daemonset-controller")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/dsbench/dsbench/cmd/daemonset-controller")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the controller: %v\n%s", err, out)
	}
	return bin
}

// replicas are the controller processes, by slot "A" and "B": a slot's
// process is restarted after each kill, under a new identity.
type replicas struct {
	t       *testing.T
	ctx     context.Context
	bin     string
	args    []string
	dir     string
	all     []*proc          // every process started, in order
	current map[string]*proc // the latest of each slot
}

// proc is one controller process.
type proc struct {
	slot string
	n    int // how many of its slot started before it
	cmd  *exec.Cmd
	log  string // its stdout and stderr
	done chan struct{}
	err  error // Wait's, once done is closed
	// ending is set before the test signals it, so that its exit is no
	// surprise.
	ending atomic.Bool
}

func (p *proc) String() string { return fmt.Sprintf("%s%d (pid %d)", p.slot, p.n, p.cmd.Process.Pid) }

// start starts a process in slot, in a process group of its own; cleanup
// kills the group.
func (r *replicas) start(slot string) *proc {
	t := r.t
	t.Helper()
	n := 0
	for _, p := range r.all {
		if p.slot == slot {
			n++
		}
	}
	p := &proc{slot: slot, n: n, log: filepath.Join(r.dir, fmt.Sprintf("%s%d.log", slot, n)), done: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close() // the child has its own descriptor
	cmd := exec.CommandContext(r.ctx, r.bin, r.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		p.ending.Store(true)
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting replica %s: %v", slot, err)
	}
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
			t.Errorf("replica %s still running %v after SIGKILL", p, stopTimeout)
		}
	})
	r.all = append(r.all, p)
	r.current[slot] = p
	t.Logf("started replica %s, log %s", p, p.log)
	return p
}

// kill SIGKILLs p's process group, unless p has exited (its pid may be
// another's by now).
func (p *proc) kill() {
	p.ending.Store(true)
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// stop sends SIGTERM and waits for a clean exit; after stopTimeout it kills.
func (p *proc) stop() error {
	p.ending.Store(true)
	select {
	case <-p.done:
		return fmt.Errorf("exited before it was stopped: %v", p.err)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(stopTimeout):
		p.kill()
		<-p.done
		return fmt.Errorf("still running %v after SIGTERM; killed", stopTimeout)
	}
}

// exited is an error if a current process has exited without the test
// stopping it: a lost Lease, a crash.
func (r *replicas) exited() error {
	for _, p := range r.current {
		select {
		case <-p.done:
			if !p.ending.Load() {
				return fmt.Errorf("replica %s exited on its own: %v (log %s)", p, p.err, p.log)
			}
		default:
		}
	}
	return nil
}

// identity is the identity p logged it leads as, "" if it never led.
func (p *proc) identity() string {
	data, _ := os.ReadFile(p.log)
	return ledAs(data)
}

// byIdentity is the process that logged it leads as id, or nil.
func (r *replicas) byIdentity(id string) *proc {
	if id == "" {
		return nil
	}
	for _, p := range r.all {
		if p.identity() == id {
			return p
		}
	}
	return nil
}

// logTailsOnFailure shows the end of every process's log when the test
// failed; the whole logs are in the test's temporary folder, which goes.
func (r *replicas) logTailsOnFailure() {
	if !r.t.Failed() {
		return
	}
	for _, p := range r.all {
		data, err := os.ReadFile(p.log)
		if err != nil {
			r.t.Logf("replica %s: %v", p, err)
			continue
		}
		lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		exit := "still running"
		select {
		case <-p.done:
			exit = fmt.Sprintf("exited: %v", p.err)
		default:
		}
		r.t.Logf("replica %s, %s; the last lines of its log:\n%s", p, exit, bytes.Join(lines, []byte("\n")))
	}
}
