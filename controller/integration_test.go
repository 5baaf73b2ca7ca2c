package controller_test

// Integration tests of the DaemonSet controller on a real KWOK cluster:
// etcd, kube-apiserver, kube-controller-manager (its DaemonSet controller
// off), kube-scheduler and kwok. Each test starts its own controller, so
// that exactly one runs against the cluster at a time, and works in its own
// namespace on node pools with their own prefix (and pool label), which its
// cleanup removes before the next test starts. Tests never run in parallel:
// the seed manifests run as published, without a node selector of ours.
//
// Expected placements and statuses are computed here from the nodes the
// test made, never read back from the controller.

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/dsbench/dsbench/controller"
	"github.com/dsbench/dsbench/controller/plan"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/kwok/kwoktest"
	"github.com/dsbench/dsbench/scenarios"
)

func TestMain(m *testing.M) { kwoktest.Main(m, "controller-pkg-test", nil) }

// Bounds of the waits. Everything here is small (a handful of nodes), so a
// healthy controller converges in seconds; the bounds leave room for a
// loaded 2-core machine.
const (
	convergeTimeout = 90 * time.Second
	cleanupTimeout  = 2 * time.Minute
	// quietWindow is how long a test watches for something that must not
	// happen. The controller reacts to an event within tens of milliseconds.
	quietWindow = 5 * time.Second
	pollEvery   = 100 * time.Millisecond
	// callTimeout bounds one poll's requests.
	callTimeout = 20 * time.Second
)

// ---------------------------------------------------------------------------
// The test environment: one controller, namespaces, node pools, cleanup.

// env is one test's share of a cluster and the controller it runs.
type env struct {
	t       *testing.T
	ctx     context.Context
	cluster *kwok.Cluster
	cfg     *rest.Config
	client  kubernetes.Interface
	ctrl    *controller.Controller
	// stopController stops ctrl; nil before startController.
	stopController func()
	res            *resources
}

// resources are what an env and its per-subtest copies made, for cleanup.
type resources struct {
	mu            sync.Mutex
	namespaces    []string
	nodes         []string
	stagesChanged bool
}

// sub is e for a subtest: same cluster, controller and resources.
func (e *env) sub(t *testing.T) *env {
	c := *e
	c.t, c.ctx = t, t.Context()
	return &c
}

// controllerRunning makes sure that only one of our controllers runs
// against a cluster at a time (keyed by kubeconfig path).
var controllerRunning sync.Map

// newEnv uses the shared cluster and starts a controller in scheduler bind
// mode. Cleanup removes the test's namespaces, then its nodes, then stops
// the controller and restores the default pod stages.
func newEnv(t *testing.T) *env {
	t.Helper()
	cluster, cfg, client := kwoktest.Cluster(t)
	e := &env{t: t, ctx: t.Context(), cluster: cluster, cfg: cfg, client: client, res: &resources{}}
	e.requireHealthy()
	t.Cleanup(e.cleanup)
	e.startController(plan.BindScheduler)
	return e
}

// requireHealthy fails the test at once when a component of the cluster has
// died (for example kwok losing a port race with another cluster on the
// machine): nothing would become Ready, and every wait would run out.
func (e *env) requireHealthy() {
	e.t.Helper()
	st := e.cluster.Status(e.ctx)
	var dead []string
	for _, p := range st.Processes {
		if !p.Alive {
			dead = append(dead, fmt.Sprintf("%s (pid %d)", p.Component, p.PID))
		}
	}
	if len(dead) > 0 || !st.APIReady {
		e.t.Fatalf("cluster %s is broken: dead components %v, API ready %v %s; logs in %s", e.cluster.Name(), dead, st.APIReady, st.APIError, e.cluster.LogDir())
	}
}

// newEnvOn is newEnv for another cluster, without a controller yet.
func newEnvOn(t *testing.T, cluster *kwok.Cluster) *env {
	t.Helper()
	cfg, err := cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: t.Context(), cluster: cluster, cfg: cfg, client: client, res: &resources{}}
	e.requireHealthy()
	t.Cleanup(e.cleanup)
	return e
}

// startController runs our controller in-process until stopController or
// cleanup. Its client has no client-side rate limit, and its requests are
// counted in its metrics (api_requests_total), as run.go wires them.
func (e *env) startController(mode plan.BindMode) {
	t := e.t
	t.Helper()
	if _, busy := controllerRunning.LoadOrStore(e.cluster.Kubeconfig(), true); busy {
		t.Fatalf("a controller already runs against cluster %s", e.cluster.Name())
	}
	metrics := controller.NewMetrics()
	cfg := rest.CopyConfig(e.cfg)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = runtime.ContentTypeProtobuf // as the binary's default
	cfg.UserAgent = "dsbench-integration-test/" + controller.ComponentName
	cfg.Wrap(metrics.WrapTransport)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.NewController(controller.Config{Client: client, Workers: 4, BindMode: mode, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	e.ctrl = c
	var once sync.Once
	e.stopController = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("controller Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("controller did not stop within 30s of cancel")
			}
			controllerRunning.Delete(e.cluster.Kubeconfig())
		})
	}
	e.waitFor(30*time.Second, "controller caches synced", func(context.Context) (bool, string, error) {
		return c.HasSynced(), "not synced", nil
	})
}

// whatHolds says, for a failed cleanup, which pods are left in namespaces
// and whether their nodes still exist: a terminating pod is finalized by
// kwok while its node exists, and by the pod GC of kube-controller-manager
// once it does not.
func (e *env) whatHolds(namespaces []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for _, ns := range namespaces {
		pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			fmt.Fprintf(&b, "  %s: listing pods: %v\n", ns, err)
			continue
		}
		for _, p := range pods.Items {
			node := kwoktest.PodNode(&p)
			nodeState := "exists"
			if _, err := e.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				nodeState = "gone"
			} else if err != nil {
				nodeState = err.Error()
			}
			fmt.Fprintf(&b, "  pod %s/%s on node %q (%s): phase %s, deletionTimestamp %v, finalizers %v\n",
				ns, p.Name, node, nodeState, p.Status.Phase, p.DeletionTimestamp, p.Finalizers)
		}
		if len(pods.Items) == 0 {
			fmt.Fprintf(&b, "  %s: no pods left\n", ns)
		}
	}
	return b.String()
}

func (e *env) cleanup() {
	t := e.t
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	e.res.mu.Lock()
	namespaces, nodes, stagesChanged := slices.Clone(e.res.namespaces), slices.Clone(e.res.nodes), e.res.stagesChanged
	e.res.mu.Unlock()
	// Namespaces first, while their pods' nodes still exist, so that kwok
	// finalizes the pods and the namespaces go quickly.
	for _, ns := range namespaces {
		err := e.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting namespace %s: %v", ns, err)
		}
	}
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, ns := range namespaces {
			if _, err := e.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("cleanup: namespaces %v not gone within %v; what holds them:\n%s", namespaces, cleanupTimeout, e.whatHolds(namespaces))
	}
	if err := kwok.DeleteNodes(ctx, e.client, nodes, 0); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, n := range nodes {
			if _, err := e.client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("cleanup: nodes not gone within %v", cleanupTimeout)
	}
	if e.stopController != nil {
		e.stopController()
	}
	if stagesChanged {
		if err := kwok.ApplyStages(ctx, e.cfg, kwok.StageOptions{}); err != nil {
			t.Errorf("cleanup: restoring pod stages: %v", err)
		}
	}
}

// namespace creates a namespace and waits for its default ServiceAccount,
// without which every pod is refused.
func (e *env) namespace(name string) string {
	t := e.t
	t.Helper()
	_, err := e.client.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	e.res.mu.Lock()
	e.res.namespaces = append(e.res.namespaces, name)
	e.res.mu.Unlock()
	e.waitFor(30*time.Second, "default ServiceAccount in "+name, func(ctx context.Context) (bool, string, error) {
		_, err := e.client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "missing", nil
		}
		return err == nil, "", err
	})
	return name
}

// addNodes creates the pool's nodes; cleanup deletes them.
func (e *env) addNodes(p kwok.NodePool) []string {
	e.t.Helper()
	e.res.mu.Lock()
	e.res.nodes = append(e.res.nodes, p.NodeNames()...)
	e.res.mu.Unlock()
	if err := kwok.CreateNodes(e.ctx, e.client, p, 0); err != nil {
		e.t.Fatal(err)
	}
	return p.NodeNames()
}

// waitSchedulable waits until the nodes are Ready and rid of the not-ready
// taint every new node starts with (DaemonSet pods do not tolerate it).
func (e *env) waitSchedulable(names ...string) {
	e.t.Helper()
	e.waitFor(convergeTimeout, fmt.Sprintf("nodes %v schedulable", names), func(ctx context.Context) (bool, string, error) {
		var pending []string
		for _, n := range names {
			node, err := e.client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			if !kwok.NodeSchedulable(node) {
				var taints []string
				for _, t := range node.Spec.Taints {
					taints = append(taints, t.ToString())
				}
				pending = append(pending, fmt.Sprintf("%s (ready %v, taints %v)", n, kwok.NodeReady(node), taints))
			}
		}
		return len(pending) == 0, fmt.Sprintf("not yet schedulable: %v", pending), nil
	})
}

// requireOnlyNodes waits until the cluster holds no node but names: the
// seed manifests run as published and would also count other nodes.
func (e *env) requireOnlyNodes(names []string) {
	e.t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	e.waitFor(cleanupTimeout, "no nodes but this test's", func(ctx context.Context) (bool, string, error) {
		list, err := e.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var others []string
		for _, n := range list.Items {
			if !want[n.Name] {
				others = append(others, n.Name)
			}
		}
		return len(others) == 0, fmt.Sprintf("other nodes: %v", others), nil
	})
}

// removeNodes deletes nodes that run pods of ds. As upstream, the controller
// leaves the bound pods of deleted nodes to the pod GC: once its status shows
// it has seen the nodes go, the test requires those pods still live and no
// NodeNotFound deletion counted. It then force-deletes them, as the pod GC
// would after its 40 s quarantine.
func (e *env) removeNodes(ds *appsv1.DaemonSet, names ...string) {
	t := e.t
	t.Helper()
	pods, err := e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	gone := map[string]bool{}
	for _, n := range names {
		gone[n] = true
	}
	var victims []corev1.Pod
	for _, p := range live(pods) {
		if gone[kwoktest.PodNode(&p)] {
			victims = append(victims, p)
		}
	}
	if len(victims) != len(names) {
		t.Fatalf("%d pods on nodes %v before they leave, want one each", len(victims), names)
	}
	desired := e.getDS(ds.Namespace, ds.Name).Status.DesiredNumberScheduled
	deleted := e.deletedByUs(plan.NodeNotFoundReason)
	if err := kwok.DeleteNodes(e.ctx, e.client, names, 0); err != nil {
		t.Fatal(err)
	}
	e.waitDesired(ds, desired-int32(len(names)), 15*time.Second)
	for _, v := range victims {
		p, err := e.client.CoreV1().Pods(v.Namespace).Get(e.ctx, v.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			t.Errorf("pod %s of deleted node %s: %v; the controller must leave it to the pod GC", v.Name, kwoktest.PodNode(&v), err)
		case p.DeletionTimestamp != nil:
			t.Errorf("pod %s of deleted node %s is being deleted; the controller must leave it to the pod GC", v.Name, kwoktest.PodNode(&v))
		}
	}
	if got := e.deletedByUs(plan.NodeNotFoundReason) - deleted; got != 0 {
		t.Errorf("controller deleted %v pods for %s, want 0 (bound pods of deleted nodes are the pod GC's)", got, plan.NodeNotFoundReason)
	}
	for _, v := range victims {
		err := e.client.CoreV1().Pods(v.Namespace).Delete(e.ctx, v.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("force-deleting pod %s as the pod GC would: %v", v.Name, err)
		}
	}
}

// waitDesired waits until ds's status counts want nodes where it should run:
// the controller has seen nodes go.
func (e *env) waitDesired(ds *appsv1.DaemonSet, want int32, timeout time.Duration) {
	e.t.Helper()
	e.waitFor(timeout, fmt.Sprintf("status of %s counts %d desired nodes", ds.Name, want), func(ctx context.Context) (bool, string, error) {
		cur, err := e.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return cur.Status.DesiredNumberScheduled == want, fmt.Sprintf("desiredNumberScheduled %d", cur.Status.DesiredNumberScheduled), nil
	})
}

func (e *env) patchNodes(names []string, patch kwok.NodePatch) {
	e.t.Helper()
	if _, err := kwok.PatchNodes(e.ctx, e.client, names, patch, 0); err != nil {
		e.t.Fatal(err)
	}
}

// applyStages changes how kwok plays pods; cleanup restores the default.
func (e *env) applyStages(o kwok.StageOptions) {
	e.t.Helper()
	e.res.mu.Lock()
	e.res.stagesChanged = true
	e.res.mu.Unlock()
	if err := kwok.ApplyStages(e.ctx, e.cfg, o); err != nil {
		e.t.Fatal(err)
	}
}

// waitFor polls cond until it is done or timeout passes; then the test
// fails with what and the last state cond described. Errors are retried.
func (e *env) waitFor(timeout time.Duration, what string, cond func(ctx context.Context) (done bool, state string, err error)) {
	e.t.Helper()
	var state string
	var lastErr error
	start := time.Now()
	defer func() {
		// Slow waits are worth knowing about even when they succeed.
		if d := time.Since(start); d > 3*time.Second {
			e.t.Logf("waited %v for %s", d.Round(time.Millisecond), what)
		}
	}()
	err := wait.PollUntilContextTimeout(e.ctx, pollEvery, timeout, true, func(ctx context.Context) (bool, error) {
		// One hung request must not use up the whole wait.
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		done, s, err := cond(ctx)
		if err == nil {
			state = s // the last state the API told, kept through errors
		}
		lastErr = err
		return err == nil && done, nil
	})
	if err != nil {
		diagnosis := ""
		if lastErr != nil {
			// The API did not answer: say whether the cluster or the machine
			// was to blame, so that a failure in CI can be told apart.
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			diagnosis = "\ncluster and machine:\n" + e.cluster.Diagnose(ctx)
		}
		e.t.Fatalf("waiting %v for %s: %v\nlast state: %s\nlast error: %v%s", timeout, what, err, state, lastErr, diagnosis)
	}
}

// holdsFor checks cond for the whole window, to prove that something does
// not happen; the first failure fails the test.
func (e *env) holdsFor(window time.Duration, what string, cond func(ctx context.Context) (ok bool, state string, err error)) {
	e.t.Helper()
	deadline := time.Now().Add(window)
	for {
		ok, state, err := cond(e.ctx)
		if err != nil {
			e.t.Fatalf("checking that %s: %v", what, err)
		}
		if !ok {
			e.t.Fatalf("%s: violated: %s", what, state)
		}
		if time.Now().After(deadline) {
			return
		}
		select {
		case <-e.ctx.Done():
			e.t.Fatal(e.ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ---------------------------------------------------------------------------
// DaemonSets, pods and the independent checks.

const agentImage = "example.com/agent:v1"

// newDS is a DaemonSet whose pods run only on the nodes of pool (by the pool
// label every fake node carries), so that tests never see each other's nodes.
func newDS(ns, name, pool string, mutate ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	lbls := map[string]string{"app": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: lbls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(lbls)},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{kwok.PoolLabel: pool},
					Containers:   []corev1.Container{{Name: "agent", Image: agentImage}},
				},
			},
		},
	}
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

func rollingUpdate(maxUnavailable, maxSurge int) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{
			Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{
				MaxUnavailable: ptr.To(intstr.FromInt32(int32(maxUnavailable))),
				MaxSurge:       ptr.To(intstr.FromInt32(int32(maxSurge))),
			},
		}
	}
}

func (e *env) createDS(ds *appsv1.DaemonSet) *appsv1.DaemonSet {
	e.t.Helper()
	out, err := e.client.AppsV1().DaemonSets(ds.Namespace).Create(e.ctx, ds, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating DaemonSet %s/%s: %v", ds.Namespace, ds.Name, err)
	}
	return out
}

func (e *env) getDS(ns, name string) *appsv1.DaemonSet {
	e.t.Helper()
	ds, err := e.client.AppsV1().DaemonSets(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return ds
}

// updateDS changes the DaemonSet's spec with retries on conflict.
func (e *env) updateDS(ns, name string, mutate func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	e.t.Helper()
	var out *appsv1.DaemonSet
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := e.client.AppsV1().DaemonSets(ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ds = ds.DeepCopy()
		mutate(ds)
		out, err = e.client.AppsV1().DaemonSets(ns).Update(e.ctx, ds, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("updating DaemonSet %s/%s: %v", ns, name, err)
	}
	return out
}

func setImage(image string) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = image }
}

// podsOf lists the pods in ns that ds controls (by ControllerRef UID).
func (e *env) podsOf(ctx context.Context, ds *appsv1.DaemonSet) ([]corev1.Pod, error) {
	list, err := e.client.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == ds.UID {
			out = append(out, p)
		}
	}
	return out, nil
}

// live leaves out pods being deleted.
func live(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func uidsByNode(pods []corev1.Pod) map[string]types.UID {
	out := map[string]types.UID{}
	for _, p := range pods {
		out[kwoktest.PodNode(&p)] = p.UID
	}
	return out
}

// wantStatus is what upstream writes for a DaemonSet whose want nodes each
// run one ready, available, updated pod and no pod runs elsewhere.
func wantStatus(ds *appsv1.DaemonSet, n int) appsv1.DaemonSetStatus {
	return appsv1.DaemonSetStatus{
		CurrentNumberScheduled: int32(n),
		NumberMisscheduled:     0,
		DesiredNumberScheduled: int32(n),
		NumberReady:            int32(n),
		ObservedGeneration:     ds.Generation,
		UpdatedNumberScheduled: int32(n),
		NumberAvailable:        int32(n),
		NumberUnavailable:      0,
		CollisionCount:         ds.Status.CollisionCount,
		Conditions:             ds.Status.Conditions,
	}
}

// defaultTolerations are the tolerations upstream adds to every daemon pod,
// written out here rather than taken from the planner.
func defaultTolerations(hostNetwork bool) []corev1.Toleration {
	ts := []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: "node.kubernetes.io/disk-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/memory-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/pid-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/unschedulable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		ts = append(ts, corev1.Toleration{Key: "node.kubernetes.io/network-unavailable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return ts
}

// converged describes how a DaemonSet should look once settled.
type converged struct {
	nodes []string // exactly one live, ready pod on each, none elsewhere
	// oldGenerations allows pods that kept an older pod-template-generation
	// label because their hash matches (after a rollback).
	oldGenerations bool
	mode           plan.BindMode // "" is scheduler
}

// checkConverged compares the DaemonSet and its pods with want and returns
// "" or what differs. The hash is recomputed from the stored template.
func (e *env) checkConverged(ctx context.Context, ns, name string, want converged) (string, error) {
	ds, err := e.client.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	pods, err := e.podsOf(ctx, ds)
	if err != nil {
		return "", err
	}
	var problems []string
	if d := cmp.Diff(wantStatus(ds, len(want.nodes)), ds.Status); d != "" {
		problems = append(problems, "status (-want +got):\n"+d)
	}
	hash := plan.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	wantNode := map[string]bool{}
	for _, n := range want.nodes {
		wantNode[n] = true
	}
	perNode := map[string]int{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			problems = append(problems, fmt.Sprintf("pod %s is terminating", p.Name))
			continue
		}
		node := kwoktest.PodNode(&p)
		perNode[node]++
		if !wantNode[node] {
			problems = append(problems, fmt.Sprintf("pod %s on node %q, which must run none", p.Name, node))
		}
		if !kwoktest.PodReady(&p) || p.Status.Phase != corev1.PodRunning {
			// Bound or not, and the scheduler's word, tell a scheduler
			// delay from kwok never playing the pod.
			scheduled := "no PodScheduled condition"
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					scheduled = fmt.Sprintf("PodScheduled=%s %s %s", c.Status, c.Reason, c.Message)
				}
			}
			problems = append(problems, fmt.Sprintf("pod %s on %s is %s, ready=%v, spec.nodeName %q, %s",
				p.Name, node, p.Status.Phase, kwoktest.PodReady(&p), p.Spec.NodeName, scheduled))
		}
		problems = append(problems, checkDaemonPod(ds, &p, hash, want)...)
	}
	for _, n := range want.nodes {
		if perNode[n] != 1 {
			problems = append(problems, fmt.Sprintf("node %s has %d live pods, want 1", n, perNode[n]))
		}
	}
	return strings.Join(problems, "\n"), nil
}

// checkDaemonPod checks what the controller must write into a daemon pod.
func checkDaemonPod(ds *appsv1.DaemonSet, p *corev1.Pod, hash string, want converged) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("pod %s: ", p.Name)+fmt.Sprintf(format, args...))
	}
	wantRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	if d := cmp.Diff([]metav1.OwnerReference{wantRef}, p.OwnerReferences); d != "" {
		bad("ownerReferences (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(p.Name, ds.Name+"-") {
		bad("name does not start with %q", ds.Name+"-")
	}
	for k, v := range ds.Spec.Template.Labels {
		if p.Labels[k] != v {
			bad("label %s=%q, want %q from the template", k, p.Labels[k], v)
		}
	}
	if got := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; got != hash {
		bad("controller-revision-hash %q, want %q", got, hash)
	}
	// The label comes from the annotation the API server keeps, not from
	// metadata.generation.
	gen, err := strconv.ParseInt(ds.Annotations[appsv1.DeprecatedTemplateGeneration], 10, 64)
	if err != nil {
		bad("DaemonSet annotation %s: %v", appsv1.DeprecatedTemplateGeneration, err)
	}
	got, err := strconv.ParseInt(p.Labels[plan.TemplateGenerationLabelKey], 10, 64)
	switch {
	case err != nil:
		bad("pod-template-generation label %q: %v", p.Labels[plan.TemplateGenerationLabelKey], err)
	case got == gen:
	case want.oldGenerations && got < gen:
	default:
		bad("pod-template-generation %d, want %d", got, gen)
	}
	for _, tol := range defaultTolerations(ds.Spec.Template.Spec.HostNetwork) {
		if !slices.ContainsFunc(p.Spec.Tolerations, func(t corev1.Toleration) bool {
			return t.Key == tol.Key && t.Operator == tol.Operator && t.Effect == tol.Effect && t.TolerationSeconds == nil
		}) {
			bad("missing default toleration %s:%s", tol.Key, tol.Effect)
		}
	}
	for _, tol := range ds.Spec.Template.Spec.Tolerations {
		if !slices.ContainsFunc(p.Spec.Tolerations, func(t corev1.Toleration) bool { return t.MatchToleration(&tol) }) {
			bad("missing template toleration %+v", tol)
		}
	}
	switch want.mode {
	case plan.BindDirect:
		if p.Spec.NodeName == "" {
			bad("spec.nodeName not set in direct bind mode")
		}
	default:
		if pinned := pinnedNode(p); pinned == "" || pinned != p.Spec.NodeName {
			bad("pinned by matchFields to %q, bound to %q", pinned, p.Spec.NodeName)
		}
	}
	return problems
}

// pinnedNode is the value of the one required matchFields metadata.name
// term the controller writes in scheduler bind mode, "" if the affinity is
// not exactly that.
func pinnedNode(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 0 || len(terms[0].MatchFields) != 1 {
		return ""
	}
	f := terms[0].MatchFields[0]
	if f.Key != "metadata.name" || f.Operator != corev1.NodeSelectorOpIn || len(f.Values) != 1 {
		return ""
	}
	return f.Values[0]
}

// waitConverged waits until checkConverged finds nothing to complain about.
func (e *env) waitConverged(ns, name string, want converged) {
	e.t.Helper()
	e.waitFor(convergeTimeout, fmt.Sprintf("DaemonSet %s/%s converged on %d nodes", ns, name, len(want.nodes)), func(ctx context.Context) (bool, string, error) {
		problems, err := e.checkConverged(ctx, ns, name, want)
		return problems == "", problems, err
	})
}

// waitStatus waits until the DaemonSet's status counters equal want's
// (ObservedGeneration, CollisionCount and Conditions are taken as they are).
func (e *env) waitStatus(ns, name string, want appsv1.DaemonSetStatus) *appsv1.DaemonSet {
	e.t.Helper()
	var ds *appsv1.DaemonSet
	e.waitFor(convergeTimeout, fmt.Sprintf("status of %s/%s", ns, name), func(ctx context.Context) (bool, string, error) {
		var err error
		ds, err = e.client.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		w := want
		w.ObservedGeneration = ds.Generation
		w.CollisionCount = ds.Status.CollisionCount
		w.Conditions = ds.Status.Conditions
		d := cmp.Diff(w, ds.Status)
		return d == "", "(-want +got):\n" + d, nil
	})
	return ds
}

// events lists the events with reason on the DaemonSet.
func (e *env) events(ctx context.Context, ds *appsv1.DaemonSet, reason string) ([]corev1.Event, error) {
	list, err := e.client.CoreV1().Events(ds.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=DaemonSet,involvedObject.name=" + ds.Name + ",reason=" + reason,
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// deletedByUs is how many pods the controller deleted for reason.
func (e *env) deletedByUs(reason string) float64 {
	e.t.Helper()
	mfs, err := e.ctrl.Metrics().Registry.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != controller.MetricsNamespace+"_pods_deleted_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// waitDeletedByUs waits until the controller has counted at least want
// deletions for reason since before, then requires exactly want. The counter
// moves when the DELETE call returns to the controller, which on a loaded
// machine can be after the test already sees the pod terminating.
func (e *env) waitDeletedByUs(reason string, before, want float64) {
	e.t.Helper()
	var got float64
	e.waitFor(15*time.Second, fmt.Sprintf("%v pod deletions for %s counted", want, reason), func(context.Context) (bool, string, error) {
		got = e.deletedByUs(reason) - before
		return got >= want, fmt.Sprintf("%v counted", got), nil
	})
	if got != want {
		e.t.Errorf("controller deleted %v pods for %s, want %v", got, reason, want)
	}
}

// kubectl runs the cluster's kubectl with its kubeconfig.
func (e *env) kubectl(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	bin := filepath.Join(kwok.CacheDir(), "bin", kwok.BinKubectl)
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", e.cluster.Kubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ---------------------------------------------------------------------------
// Watching every intermediate state of a DaemonSet's pods.

// podWatch checks an invariant after each watch event of the pods in one
// namespace (kwoktest.WatchPods), so that no intermediate state is missed
// (polling could skip a short dip).
type podWatch struct {
	*kwoktest.PodWatch
	// Read after Stop.
	violations []string
}

func (e *env) watchPods(ns string, check func(pods []*corev1.Pod) string) *podWatch {
	e.t.Helper()
	w := &podWatch{}
	pw, err := kwoktest.WatchPods(e.ctx, e.client, ns, func(pods []*corev1.Pod, _ string) {
		if v := check(pods); v != "" && len(w.violations) < 20 {
			w.violations = append(w.violations, v)
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	w.PodWatch = pw
	return w
}

// ---------------------------------------------------------------------------
// 1. Every seed example manifest runs.

// seedPools are the node shapes the seed manifests are told apart by.
var seedPools = []kwok.NodePool{
	{Prefix: "seed-cp", Count: 1, Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""},
		Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}},
	{Prefix: "seed-ssd", Count: 2, Labels: map[string]string{"node-role.kubernetes.io/worker": "", "disk": "ssd", "disktype": "ssd"}},
	{Prefix: "seed-hdd", Count: 1, Labels: map[string]string{"node-role.kubernetes.io/worker": "", "disk": "hdd", "disktype": "hdd"}},
	{Prefix: "seed-win", Count: 1, Labels: map[string]string{"kubernetes.io/os": "windows"}},
	{Prefix: "seed-ded", Count: 1, Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
		Taints: []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoExecute}}},
}

// seedEligible says, for each seed manifest, which pools must run its pod,
// worked out by hand from the manifest (nodeSelector, affinity, tolerations)
// and the default daemon tolerations.
var seedEligible = map[string][]string{
	// nodeSelector kubernetes.io/os=linux (placeholder), no tolerations.
	"seed000-coredns-legacy.yaml": {"seed-ssd", "seed-hdd"},
	// tolerates control-plane and master NoSchedule.
	"seed001-fluentd-elasticsearch.yaml": {"seed-cp", "seed-ssd", "seed-hdd", "seed-win"},
	"seed002-fluentd-elasticsearch.yaml": {"seed-cp", "seed-ssd", "seed-hdd", "seed-win"},
	// nodeSelector disktype=ssd.
	"seed002-monitoring-agent-nodeselector.yaml": {"seed-ssd"},
	// required affinity: os In [linux] and node-role worker Exists; the
	// dedicated node is a linux worker but has an untolerated NoExecute taint.
	"seed002-network-plugin.yaml": {"seed-ssd", "seed-hdd"},
	// tolerates every taint.
	"seed002-system-daemon.yaml": {"seed-cp", "seed-ssd", "seed-hdd", "seed-win", "seed-ded"},
	// no constraints, no tolerations.
	"seed002-monitoring-agent-rollingupdate.yaml": {"seed-ssd", "seed-hdd", "seed-win"},
	"seed002-storage-plugin-ondelete.yaml":        {"seed-ssd", "seed-hdd", "seed-win"},
	// tolerates every NoSchedule taint.
	"seed002-node-exporter.yaml": {"seed-cp", "seed-ssd", "seed-hdd", "seed-win"},
	// tolerates control-plane NoSchedule.
	"seed002-fluentd-rbac.yaml": {"seed-cp", "seed-ssd", "seed-hdd", "seed-win"},
	// tolerates every NoSchedule and every NoExecute taint.
	"seed002-calico-node.yaml": {"seed-cp", "seed-ssd", "seed-hdd", "seed-win", "seed-ded"},
	// tolerates master only.
	"seed003-fluentd-elasticsearch.yaml": {"seed-ssd", "seed-hdd", "seed-win"},
	// nodeSelector disk=ssd.
	"seed004-ssd-monitor.yaml": {"seed-ssd"},
}

func TestIntegrationSeedManifests(t *testing.T) {
	e := newEnv(t)
	sc, warnings, err := scenarios.LoadLibrary("seed-manifests")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		t.Logf("scenario warning: %s", w)
	}
	var all []string
	nodesOf := map[string][]string{}
	for _, p := range seedPools {
		nodesOf[p.Prefix] = e.addNodes(p)
		all = append(all, nodesOf[p.Prefix]...)
	}
	e.requireOnlyNodes(all)
	e.waitSchedulable(all...)

	type seedDS struct {
		file  string
		ds    *appsv1.DaemonSet
		nodes []string
	}
	var created []seedDS
	seen := map[string]bool{}
	for i, w := range sc.Workloads {
		file := path.Base(w.File)
		pools, ok := seedEligible[file]
		if !ok {
			t.Errorf("seed manifest %s has no expectation in seedEligible: add one", file)
			continue
		}
		seen[file] = true
		// Each manifest gets a namespace of its own: several share a name.
		ns := e.namespace(fmt.Sprintf("it-seed-%02d", i))
		e.createSeedDependencies(ns, w)
		for _, src := range w.DaemonSets {
			ds := src.DeepCopy()
			ds.Namespace = ns
			ds = e.createDS(ds)
			var want []string
			for _, p := range pools {
				want = append(want, nodesOf[p]...)
			}
			sort.Strings(want)
			created = append(created, seedDS{file: file, ds: ds, nodes: want})
		}
	}
	for file := range seedEligible {
		if !seen[file] {
			t.Errorf("seedEligible names %s, which the seed-manifests scenario does not load", file)
		}
	}
	if len(created) != len(seedEligible) {
		t.Errorf("created %d seed DaemonSets, want one per manifest (%d)", len(created), len(seedEligible))
	}
	for _, s := range created {
		t.Run(strings.TrimSuffix(s.file, ".yaml"), func(t *testing.T) {
			e := e.sub(t)
			e.waitConverged(s.ds.Namespace, s.ds.Name, converged{nodes: s.nodes})
			ds := e.getDS(s.ds.Namespace, s.ds.Name)
			if ds.Status.ObservedGeneration != 1 {
				t.Errorf("observedGeneration %d, want 1 for a DaemonSet never changed", ds.Status.ObservedGeneration)
			}
		})
	}
}

// createSeedDependencies creates what a manifest's pods need in ns: the
// ServiceAccounts and ConfigMaps among its own documents, ServiceAccounts
// the pod template names but nobody defines, and ConfigMaps its volumes
// mount. RBAC documents are left out: fake pods never call the API.
func (e *env) createSeedDependencies(ns string, w scenarios.Workload) {
	t := e.t
	t.Helper()
	sas, cms := map[string]bool{}, map[string]map[string]string{}
	for _, obj := range w.Objects {
		switch obj.GetKind() {
		case "ServiceAccount":
			sas[obj.GetName()] = true
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &cm); err != nil {
				t.Fatal(err)
			}
			cms[cm.Name] = cm.Data
		}
	}
	for _, ds := range w.DaemonSets {
		spec := ds.Spec.Template.Spec
		if sa := spec.ServiceAccountName; sa != "" && sa != "default" {
			sas[sa] = true
		}
		for _, v := range spec.Volumes {
			if v.ConfigMap == nil {
				continue
			}
			data := cms[v.ConfigMap.Name]
			if data == nil {
				data = map[string]string{}
			}
			for _, item := range v.ConfigMap.Items {
				if _, ok := data[item.Key]; !ok {
					data[item.Key] = "# written by the integration test\n"
				}
			}
			cms[v.ConfigMap.Name] = data
		}
	}
	for name := range sas {
		_, err := e.client.CoreV1().ServiceAccounts(ns).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating ServiceAccount %s/%s: %v", ns, name, err)
		}
	}
	for name, data := range cms {
		_, err := e.client.CoreV1().ConfigMaps(ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating ConfigMap %s/%s: %v", ns, name, err)
		}
	}
}

// seedDaemonSet loads one DaemonSet of the seed manifests by file name.
func seedDaemonSet(t *testing.T, file string) *appsv1.DaemonSet {
	t.Helper()
	sc, _, err := scenarios.LoadLibrary("seed-manifests")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range sc.Workloads {
		if path.Base(w.File) == file && len(w.DaemonSets) == 1 {
			return w.DaemonSets[0].DeepCopy()
		}
	}
	t.Fatalf("no single DaemonSet from %s in the seed-manifests scenario", file)
	return nil
}

// ---------------------------------------------------------------------------
// 2. ssd-monitor follows the disk label.

func TestIntegrationSSDMonitorRelabel(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace("it-ssd")
	pool := kwok.NodePool{Prefix: "ssd-relabel", Count: 3}
	nodes := e.addNodes(pool)
	e.requireOnlyNodes(nodes) // the manifest's disk=ssd selector sees every node
	e.waitSchedulable(nodes...)

	ds := seedDaemonSet(t, "seed004-ssd-monitor.yaml")
	if ds.Spec.Template.Spec.NodeSelector["disk"] != "ssd" {
		t.Fatalf("seed004 nodeSelector %v, want disk=ssd", ds.Spec.Template.Spec.NodeSelector)
	}
	ds.Namespace = ns
	ds = e.createDS(ds)
	e.waitConverged(ns, ds.Name, converged{})
	e.holdsFor(time.Second, "no pod while no node has disk=ssd", func(ctx context.Context) (bool, string, error) {
		pods, err := e.podsOf(ctx, ds)
		return len(pods) == 0, fmt.Sprintf("%d pods", len(pods)), err
	})

	ssd, hdd := "ssd", "hdd"
	e.patchNodes(nodes[:1], kwok.NodePatch{Labels: map[string]*string{"disk": &ssd}})
	e.waitConverged(ns, ds.Name, converged{nodes: nodes[:1]})
	first, err := e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}

	e.patchNodes(nodes[:1], kwok.NodePatch{Labels: map[string]*string{"disk": &hdd}})
	e.waitFor(convergeTimeout, "ssd-monitor pod deleted after disk=hdd", func(ctx context.Context) (bool, string, error) {
		pods, err := e.podsOf(ctx, ds)
		return len(pods) == 0, fmt.Sprintf("pods: %d", len(pods)), err
	})
	e.waitConverged(ns, ds.Name, converged{})
	e.waitFor(15*time.Second, fmt.Sprintf("the deletion of pod %s counted as %s", first[0].Name, plan.NodeNotEligibleReason), func(context.Context) (bool, string, error) {
		got := e.deletedByUs(plan.NodeNotEligibleReason)
		return got >= 1, fmt.Sprintf("%v counted", got), nil
	})
}

// ---------------------------------------------------------------------------
// 3. Nodes join, leave, get tainted, cordoned, and evict.

func TestIntegrationNodeLifecycle(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace("it-nodes")
	pool := kwok.NodePool{Prefix: "life", Count: 3}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	ds := e.createDS(newDS(ns, "agent", pool.Prefix))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})

	podOn := func(ctx context.Context, node string) (*corev1.Pod, error) {
		pods, err := e.podsOf(ctx, ds)
		if err != nil {
			return nil, err
		}
		for _, p := range live(pods) {
			if kwoktest.PodNode(&p) == node {
				return &p, nil
			}
		}
		return nil, nil
	}

	t.Run("join", func(t *testing.T) {
		e := e.sub(t)
		joined := e.addNodes(kwok.NodePool{Prefix: pool.Prefix, Start: 3, Count: 1})
		e.waitSchedulable(joined...)
		e.waitConverged(ns, ds.Name, converged{nodes: append(slices.Clone(nodes), joined...)})
	})

	t.Run("leave", func(t *testing.T) {
		e := e.sub(t)
		e.removeNodes(ds, pool.NodeName(3))
		e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	})

	// A kubelet that re-registers under its name (or a node deleted by
	// mistake and re-created) keeps its daemon pod, as with upstream.
	t.Run("delete and re-create a node within 10 s", func(t *testing.T) {
		e := e.sub(t)
		node := nodes[0]
		before, err := podOn(e.ctx, node)
		if err != nil || before == nil {
			t.Fatalf("pod on %s before: %v, %v", node, before, err)
		}
		desired := e.getDS(ns, ds.Name).Status.DesiredNumberScheduled
		start := time.Now()
		if err := kwok.DeleteNodes(e.ctx, e.client, []string{node}, 0); err != nil {
			t.Fatal(err)
		}
		e.waitDesired(ds, desired-1, 10*time.Second)
		e.addNodes(kwok.NodePool{Prefix: pool.Prefix, Count: 1})
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("node re-created after %v, want within 10 s", d)
		}
		e.waitSchedulable(node)
		e.waitConverged(ns, ds.Name, converged{nodes: nodes})
		after, err := podOn(e.ctx, node)
		if err != nil || after == nil {
			t.Fatalf("pod on %s after: %v, %v", node, after, err)
		}
		if after.UID != before.UID {
			t.Errorf("pod on re-created node %s: UID %s, want %s kept (upstream keeps it)", node, after.UID, before.UID)
		}
	})

	noSchedule := corev1.Taint{Key: "it.dsbench.dev/no-schedule", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	t.Run("taint NoSchedule keeps the running pod", func(t *testing.T) {
		e := e.sub(t)
		before, err := podOn(e.ctx, nodes[0])
		if err != nil || before == nil {
			t.Fatalf("no pod on %s (err %v)", nodes[0], err)
		}
		e.patchNodes(nodes[:1], kwok.NodePatch{SetTaints: []corev1.Taint{noSchedule}})
		// Upstream: the node no longer should run a pod, but its pod may
		// continue, so it counts as misscheduled and not as desired.
		e.waitStatus(ns, ds.Name, appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, CurrentNumberScheduled: 2, NumberReady: 2,
			NumberAvailable: 2, UpdatedNumberScheduled: 2, NumberMisscheduled: 1})
		e.holdsFor(quietWindow, "the pod on the NoSchedule-tainted node stays", func(ctx context.Context) (bool, string, error) {
			p, err := podOn(ctx, nodes[0])
			if err != nil {
				return false, "", err
			}
			return p != nil && p.UID == before.UID, fmt.Sprintf("pod now %v", p), nil
		})
	})

	tainted := pool.NodeName(4)
	t.Run("no pod on a new NoSchedule-tainted node", func(t *testing.T) {
		e := e.sub(t)
		e.addNodes(kwok.NodePool{Prefix: pool.Prefix, Start: 4, Count: 1, Taints: []corev1.Taint{noSchedule}})
		e.waitSchedulable(tainted)
		e.holdsFor(quietWindow, "no pod on the tainted new node", func(ctx context.Context) (bool, string, error) {
			p, err := podOn(ctx, tainted)
			return p == nil, fmt.Sprintf("pod %v", p), err
		})
	})

	t.Run("untaint", func(t *testing.T) {
		e := e.sub(t)
		e.patchNodes([]string{nodes[0], tainted}, kwok.NodePatch{RemoveTaints: []corev1.Taint{noSchedule}})
		e.waitConverged(ns, ds.Name, converged{nodes: append(slices.Clone(nodes), tainted)})
	})

	cordoned := pool.NodeName(5)
	t.Run("cordoned node still gets a pod", func(t *testing.T) {
		e := e.sub(t)
		e.addNodes(kwok.NodePool{Prefix: pool.Prefix, Start: 5, Count: 1})
		e.patchNodes([]string{cordoned}, kwok.NodePatch{Unschedulable: ptr.To(true)})
		e.waitSchedulable(cordoned)
		e.waitConverged(ns, ds.Name, converged{nodes: append(slices.Clone(nodes), tainted, cordoned)})
		node, err := e.client.CoreV1().Nodes().Get(e.ctx, cordoned, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !node.Spec.Unschedulable {
			t.Errorf("node %s is not cordoned", cordoned)
		}
	})

	t.Run("NoExecute evicts", func(t *testing.T) {
		e := e.sub(t)
		victim, err := podOn(e.ctx, nodes[2])
		if err != nil || victim == nil {
			t.Fatalf("no pod on %s (err %v)", nodes[2], err)
		}
		before := e.deletedByUs(plan.NodeNotEligibleReason)
		e.patchNodes(nodes[2:3], kwok.NodePatch{SetTaints: []corev1.Taint{{Key: "it.dsbench.dev/evict", Value: "x", Effect: corev1.TaintEffectNoExecute}}})
		e.waitFor(15*time.Second, "pod on the NoExecute-tainted node deleted", func(ctx context.Context) (bool, string, error) {
			p, err := e.client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, "", nil
			}
			return err == nil && p.DeletionTimestamp != nil, "pod still live", err
		})
		// kube-controller-manager's taint-eviction controller races us for
		// this pod; whoever wins, it must not come back.
		t.Logf("controller deleted %v pods for %s (0 means the taint-eviction controller was first)",
			e.deletedByUs(plan.NodeNotEligibleReason)-before, plan.NodeNotEligibleReason)
		want := []string{nodes[0], nodes[1], tainted, cordoned}
		e.waitConverged(ns, ds.Name, converged{nodes: want})
		e.holdsFor(quietWindow, "no pod comes back on the NoExecute-tainted node", func(ctx context.Context) (bool, string, error) {
			p, err := podOn(ctx, nodes[2])
			return p == nil, fmt.Sprintf("pod %v", p), err
		})
	})
}

// ---------------------------------------------------------------------------
// 4. Rolling updates and OnDelete.

func TestIntegrationRollingUpdateMaxUnavailable(t *testing.T) {
	e := newEnv(t)
	e.applyStages(kwok.StageOptions{ReadyDelay: time.Second})
	ns := e.namespace("it-roll")
	pool := kwok.NodePool{Prefix: "roll", Count: 6}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	const maxUnavailable = 2
	ds := e.createDS(newDS(ns, "agent", pool.Prefix, rollingUpdate(maxUnavailable, 0)))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})

	peak := 0
	w := e.watchPods(ns, func(pods []*corev1.Pod) string {
		ready, live := map[string]bool{}, map[string]int{}
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				continue
			}
			live[p.Spec.NodeName]++
			if kwoktest.PodReady(p) {
				ready[p.Spec.NodeName] = true
			}
		}
		var down []string
		for _, n := range nodes {
			if !ready[n] {
				down = append(down, n)
			}
			if live[n] > 1 {
				return fmt.Sprintf("node %s has %d live pods without surge", n, live[n])
			}
		}
		peak = max(peak, len(down))
		if len(down) > maxUnavailable {
			return fmt.Sprintf("%d nodes without a ready pod (%v), maxUnavailable %d", len(down), down, maxUnavailable)
		}
		return ""
	})
	e.updateDS(ns, ds.Name, setImage("example.com/agent:v2"))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	w.Stop()
	t.Logf("rollout: %d watch events, at most %d nodes without a ready pod, %d relists", w.Events(), peak, w.Relists())
	if w.Relists() > 0 {
		t.Errorf("the pod watch expired %d times: intermediate states were missed", w.Relists())
	}
	for _, v := range w.violations {
		t.Errorf("invariant violated: %s", v)
	}
	if peak != maxUnavailable {
		t.Errorf("at most %d nodes were without a ready pod; upstream replaces %d at a time", peak, maxUnavailable)
	}
}

func TestIntegrationRollingUpdateMaxSurge(t *testing.T) {
	e := newEnv(t)
	e.applyStages(kwok.StageOptions{ReadyDelay: time.Second})
	ns := e.namespace("it-surge")
	pool := kwok.NodePool{Prefix: "surge", Count: 5}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	ds := e.createDS(newDS(ns, "agent", pool.Prefix, rollingUpdate(0, 1)))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})

	peakPods, peakSurging := 0, 0
	w := e.watchPods(ns, func(pods []*corev1.Pod) string {
		ready, live, surging := map[string]bool{}, map[string]int{}, map[string]bool{}
		total := 0
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				continue
			}
			node := kwoktest.PodNode(p)
			live[node]++
			total++
			if kwoktest.PodReady(p) {
				ready[node] = true
			} else {
				surging[node] = true
			}
		}
		peakPods, peakSurging = max(peakPods, total), max(peakSurging, len(surging))
		var problems []string
		for _, n := range nodes {
			if !ready[n] {
				problems = append(problems, "node "+n+" has no ready pod")
			}
			if live[n] > 2 {
				problems = append(problems, fmt.Sprintf("node %s has %d live pods, at most 2 with surge", n, live[n]))
			}
		}
		if len(surging) > 1 {
			problems = append(problems, fmt.Sprintf("%d nodes wait for a new pod at once, maxSurge 1", len(surging)))
		}
		return strings.Join(problems, "; ")
	})
	e.updateDS(ns, ds.Name, setImage("example.com/agent:v2"))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	w.Stop()
	t.Logf("rollout: %d watch events, at most %d live pods, at most %d nodes surging", w.Events(), peakPods, peakSurging)
	if w.Relists() > 0 {
		t.Errorf("the pod watch expired %d times: intermediate states were missed", w.Relists())
	}
	for _, v := range w.violations {
		t.Errorf("invariant violated: %s", v)
	}
	if peakSurging != 1 {
		t.Errorf("at most %d nodes surged at once, want exactly maxSurge=1", peakSurging)
	}
}

func TestIntegrationOnDelete(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace("it-ondelete")
	pool := kwok.NodePool{Prefix: "ondel", Count: 3}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	ds := e.createDS(newDS(ns, "agent", pool.Prefix, func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	}))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	pods, err := e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	oldUIDs := uidsByNode(pods)
	oldHash := pods[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey]

	// A change outside the template raises metadata.generation but not the
	// template generation annotation, which pod-template-generation follows.
	e.updateDS(ns, ds.Name, func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr.To[int32](5) })
	ds = e.updateDS(ns, ds.Name, setImage("example.com/agent:v2"))
	if ds.Generation != 3 || ds.Annotations[appsv1.DeprecatedTemplateGeneration] != "2" {
		t.Fatalf("generation %d, template generation %q: want 3 and 2", ds.Generation, ds.Annotations[appsv1.DeprecatedTemplateGeneration])
	}
	newHash := plan.ComputeHash(&ds.Spec.Template, nil)
	// Everything is old but in place: nothing is updated, nothing restarts.
	e.waitStatus(ns, ds.Name, appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 3, NumberAvailable: 3})
	e.holdsFor(quietWindow, "OnDelete creates and deletes nothing after a template change", func(ctx context.Context) (bool, string, error) {
		pods, err := e.podsOf(ctx, ds)
		if err != nil {
			return false, "", err
		}
		got := uidsByNode(pods)
		return len(pods) == 3 && maps.Equal(got, oldUIDs), fmt.Sprintf("pods %v, want %v", got, oldUIDs), nil
	})

	if err := e.client.CoreV1().Pods(ns).Delete(e.ctx, podNameOn(pods, nodes[0]), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(ns, ds.Name, appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 3, NumberAvailable: 3, UpdatedNumberScheduled: 1})
	pods, err = e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range live(pods) {
		node, hash, image := kwoktest.PodNode(&p), p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey], p.Spec.Containers[0].Image
		switch {
		case node == nodes[0]:
			if p.UID == oldUIDs[node] || hash != newHash || image != "example.com/agent:v2" {
				t.Errorf("replacement on %s: uid %s (old %s), hash %s, image %s; want a new pod with hash %s and image v2", node, p.UID, oldUIDs[node], hash, image, newHash)
			}
			if p.Labels[plan.TemplateGenerationLabelKey] != "2" {
				t.Errorf("replacement pod-template-generation %q, want 2 (the template generation, not metadata.generation 3)", p.Labels[plan.TemplateGenerationLabelKey])
			}
		case p.UID != oldUIDs[node] || hash != oldHash:
			t.Errorf("pod on %s changed (uid %s, hash %s) without being deleted", node, p.UID, hash)
		}
	}
}

func podNameOn(pods []corev1.Pod, node string) string {
	for _, p := range pods {
		if kwoktest.PodNode(&p) == node && p.DeletionTimestamp == nil {
			return p.Name
		}
	}
	return ""
}

// ---------------------------------------------------------------------------
// 5. kubectl rollout status, history and undo.

func TestIntegrationKubectlRollout(t *testing.T) {
	e := newEnv(t)
	const neverReady = "example.com/agent:never-ready"
	e.applyStages(kwok.StageOptions{NeverReadyImages: `:never-ready$`})
	ns := e.namespace("it-kubectl")
	pool := kwok.NodePool{Prefix: "kctl", Count: 4}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	ds := e.createDS(newDS(ns, "agent", pool.Prefix, rollingUpdate(1, 0)))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	ref := "ds/" + ds.Name

	// Revision 2: a rollout that completes.
	e.updateDS(ns, ds.Name, setImage("example.com/agent:v2"))
	if out, err := e.kubectl(2*time.Minute, "rollout", "status", ref, "-n", ns, "--timeout=90s"); err != nil {
		t.Fatalf("kubectl rollout status after the v2 rollout: %v\n%s", err, out)
	} else if !strings.Contains(out, "successfully rolled out") {
		t.Errorf("kubectl rollout status said %q", out)
	}
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	v2Pods, err := e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	v2UIDs := uidsByNode(v2Pods)
	e.expectHistory(ref, ns, []int64{1, 2})

	// Revision 3: never ready, so the rollout stalls after one node.
	e.updateDS(ns, ds.Name, setImage(neverReady))
	var stuck string
	e.waitFor(convergeTimeout, "one node on the never-ready template", func(ctx context.Context) (bool, string, error) {
		pods, err := e.podsOf(ctx, ds)
		if err != nil {
			return false, "", err
		}
		var onV3, others []string
		for _, p := range live(pods) {
			if p.Spec.Containers[0].Image == neverReady {
				onV3 = append(onV3, kwoktest.PodNode(&p))
			} else {
				others = append(others, kwoktest.PodNode(&p))
			}
		}
		if len(onV3) == 1 && len(others) == 3 {
			stuck = onV3[0]
			return true, "", nil
		}
		return false, fmt.Sprintf("never-ready on %v, others on %v", onV3, others), nil
	})
	e.holdsFor(2*time.Second, "the rollout stays stalled at one node (maxUnavailable 1)", func(ctx context.Context) (bool, string, error) {
		pods, err := e.podsOf(ctx, ds)
		if err != nil {
			return false, "", err
		}
		var notV2 []string
		for _, p := range pods {
			if p.UID != v2UIDs[kwoktest.PodNode(&p)] {
				notV2 = append(notV2, p.Name+"@"+kwoktest.PodNode(&p))
			}
		}
		return len(notV2) <= 1, fmt.Sprintf("replaced: %v", notV2), nil
	})
	if out, err := e.kubectl(30*time.Second, "rollout", "status", ref, "-n", ns, "--timeout=2s"); err == nil {
		t.Errorf("kubectl rollout status succeeded on a stalled rollout:\n%s", out)
	}
	e.expectHistory(ref, ns, []int64{1, 2, 3})

	// Undo goes back to revision 2: the three pods still on it stay.
	if out, err := e.kubectl(30*time.Second, "rollout", "undo", ref, "-n", ns); err != nil {
		t.Fatalf("kubectl rollout undo: %v\n%s", err, out)
	}
	if out, err := e.kubectl(2*time.Minute, "rollout", "status", ref, "-n", ns, "--timeout=90s"); err != nil {
		t.Fatalf("kubectl rollout status after undo: %v\n%s", err, out)
	}
	e.waitConverged(ns, ds.Name, converged{nodes: nodes, oldGenerations: true})
	pods, err := e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range live(pods) {
		node := kwoktest.PodNode(&p)
		if p.Spec.Containers[0].Image != "example.com/agent:v2" {
			t.Errorf("pod on %s runs %s after undo, want v2", node, p.Spec.Containers[0].Image)
		}
		if node == stuck {
			if p.UID == v2UIDs[node] {
				t.Errorf("pod on %s was never replaced", node)
			}
			continue
		}
		if p.UID != v2UIDs[node] {
			t.Errorf("pod on %s already ran revision 2 but was restarted by the undo (uid %s, was %s)", node, p.UID, v2UIDs[node])
		}
	}
	// Revision 2 became revision 4.
	e.expectHistory(ref, ns, []int64{1, 3, 4})
}

// expectHistory checks the revision numbers kubectl rollout history lists.
func (e *env) expectHistory(ref, ns string, want []int64) {
	e.t.Helper()
	var got []int64
	var out string
	e.waitFor(30*time.Second, fmt.Sprintf("kubectl rollout history lists %v", want), func(context.Context) (bool, string, error) {
		var err error
		out, err = e.kubectl(30*time.Second, "rollout", "history", ref, "-n", ns)
		if err != nil {
			return false, out, err
		}
		got = nil
		for _, line := range strings.Split(out, "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			if n, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
				got = append(got, n)
			}
		}
		return slices.Equal(got, want), out, nil
	})
}

// ---------------------------------------------------------------------------
// 6. Orphan, adopt and release.

func TestIntegrationOrphanAdoptRelease(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace("it-adopt")
	pool := kwok.NodePool{Prefix: "adopt", Count: 3}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	spec := newDS(ns, "agent", pool.Prefix)
	ds := e.createDS(spec.DeepCopy())
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	pods, err := e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	uids := uidsByNode(pods)
	sel := labels.SelectorFromSet(spec.Spec.Selector.MatchLabels).String()

	if out, err := e.kubectl(time.Minute, "delete", "ds", ds.Name, "-n", ns, "--cascade=orphan", "--wait=true"); err != nil {
		t.Fatalf("kubectl delete --cascade=orphan: %v\n%s", err, out)
	}
	e.waitFor(convergeTimeout, "orphaned pods without owner", func(ctx context.Context) (bool, string, error) {
		list, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, "", err
		}
		got := map[string]types.UID{}
		owned := 0
		for _, p := range list.Items {
			got[kwoktest.PodNode(&p)] = p.UID
			if len(p.OwnerReferences) > 0 {
				owned++
			}
		}
		return owned == 0 && maps.Equal(got, uids), fmt.Sprintf("pods %v (want %v), %d still owned", got, uids, owned), nil
	})

	ds2 := e.createDS(spec.DeepCopy())
	if ds2.UID == ds.UID {
		t.Fatal("the re-created DaemonSet has the old UID")
	}
	e.waitConverged(ns, ds2.Name, converged{nodes: nodes})
	pods, err = e.podsOf(e.ctx, ds2)
	if err != nil {
		t.Fatal(err)
	}
	if got := uidsByNode(pods); !maps.Equal(got, uids) {
		t.Errorf("after re-creating the DaemonSet the pods are %v, want the orphans %v adopted", got, uids)
	}
	revs, err := e.client.AppsV1().ControllerRevisions(ns).List(e.ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if len(revs.Items) != 1 {
		t.Errorf("%d ControllerRevisions, want the orphaned one adopted and no other", len(revs.Items))
	}
	for _, r := range revs.Items {
		if ref := metav1.GetControllerOf(&r); ref == nil || ref.UID != ds2.UID {
			t.Errorf("ControllerRevision %s controlled by %v, want the new DaemonSet %s", r.Name, ref, ds2.UID)
		}
	}

	// Release: a pod relabelled out of the selector loses its ControllerRef
	// and its node gets a new pod.
	released := podNameOn(pods, nodes[0])
	patch := []byte(`{"metadata":{"labels":{"app":"released"}}}`)
	if _, err := e.client.CoreV1().Pods(ns).Patch(e.ctx, released, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor(convergeTimeout, "relabelled pod released", func(ctx context.Context) (bool, string, error) {
		p, err := e.client.CoreV1().Pods(ns).Get(ctx, released, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return metav1.GetControllerOf(p) == nil, fmt.Sprintf("ownerReferences %v", p.OwnerReferences), nil
	})
	e.waitConverged(ns, ds2.Name, converged{nodes: nodes})
	pods, err = e.podsOf(e.ctx, ds2)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if node := kwoktest.PodNode(&p); node == nodes[0] && p.UID == uids[node] {
			t.Errorf("the released pod is still counted as the DaemonSet's pod on %s", node)
		} else if node != nodes[0] && p.UID != uids[node] {
			t.Errorf("pod on %s was replaced (uid %s, was %s)", node, p.UID, uids[node])
		}
	}
	if p, err := e.client.CoreV1().Pods(ns).Get(e.ctx, released, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the released pod must be left alone: err %v, deleting %v", err, p != nil && p.DeletionTimestamp != nil)
	}
}

// ---------------------------------------------------------------------------
// 7. A failed pod is replaced.

func TestIntegrationFailedPodReplaced(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace("it-failed")
	pool := kwok.NodePool{Prefix: "failed", Count: 2}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	ds := e.createDS(newDS(ns, "agent", pool.Prefix))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	pods, err := e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	uids := uidsByNode(pods)
	victim := podNameOn(pods, nodes[0])

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := e.client.CoreV1().Pods(ns).Get(e.ctx, victim, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p = p.DeepCopy()
		p.Status.Phase = corev1.PodFailed
		for i := range p.Status.Conditions {
			if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				c.Status = corev1.ConditionFalse
			}
		}
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.Ready = false
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: metav1.Now()}}
		}
		_, err = e.client.CoreV1().Pods(ns).UpdateStatus(e.ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("marking pod %s Failed: %v", victim, err)
	}
	e.waitFor(convergeTimeout, "failed pod deleted", func(ctx context.Context) (bool, string, error) {
		p, err := e.client.CoreV1().Pods(ns).Get(ctx, victim, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return err == nil && p.DeletionTimestamp != nil, "still there", err
	})
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	pods, err = e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	got := uidsByNode(pods)
	if got[nodes[0]] == uids[nodes[0]] {
		t.Errorf("node %s still runs the failed pod", nodes[0])
	}
	if got[nodes[1]] != uids[nodes[1]] {
		t.Errorf("the healthy pod on %s was replaced", nodes[1])
	}
	e.waitDeletedByUs(plan.FailedDaemonPodReason, 0, 1)
	e.waitFor(30*time.Second, "Warning FailedDaemonPod event", func(ctx context.Context) (bool, string, error) {
		evs, err := e.events(ctx, ds, plan.FailedDaemonPodReason)
		if err != nil {
			return false, "", err
		}
		for _, ev := range evs {
			if ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, victim) {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d events: %v", len(evs), evs), nil
	})
}

// ---------------------------------------------------------------------------
// 8. A hash collision raises collisionCount.

func TestIntegrationHashCollision(t *testing.T) {
	e := newEnv(t)
	pool := kwok.NodePool{Prefix: "collide", Count: 2}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	for _, tc := range []struct {
		name string
		// adoptable: the squatter carries the selector's labels and no
		// owner, so the DaemonSet adopts it and sees the collision in its
		// own history; otherwise only the create fails with AlreadyExists.
		adoptable bool
	}{
		{name: "foreign revision", adoptable: false},
		{name: "adoptable revision", adoptable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.sub(t)
			ns := e.namespace("it-collide-" + strconv.FormatBool(tc.adoptable))
			spec := newDS(ns, "agent", pool.Prefix)
			// The hash is over the template as stored, defaults included.
			dry, err := e.client.AppsV1().DaemonSets(ns).Create(e.ctx, spec.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatal(err)
			}
			hash := plan.ComputeHash(&dry.Spec.Template, nil)
			squatter := &appsv1.ControllerRevision{
				ObjectMeta: metav1.ObjectMeta{Name: spec.Name + "-" + hash, Namespace: ns},
				Data:       runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"someone-else"}}}}}`)},
				Revision:   7,
			}
			if tc.adoptable {
				squatter.Labels = maps.Clone(spec.Spec.Selector.MatchLabels)
			}
			squatter, err = e.client.AppsV1().ControllerRevisions(ns).Create(e.ctx, squatter, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}

			ds := e.createDS(spec)
			if got := plan.ComputeHash(&ds.Spec.Template, nil); got != hash {
				t.Fatalf("stored template hashes to %s, the dry run to %s", got, hash)
			}
			e.waitFor(convergeTimeout, "collisionCount 1", func(ctx context.Context) (bool, string, error) {
				ds, err := e.client.AppsV1().DaemonSets(ns).Get(ctx, spec.Name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				return ds.Status.CollisionCount != nil && *ds.Status.CollisionCount == 1, fmt.Sprintf("collisionCount %v", ds.Status.CollisionCount), nil
			})
			e.waitConverged(ns, ds.Name, converged{nodes: nodes})
			newHash := plan.ComputeHash(&ds.Spec.Template, ptr.To[int32](1))
			if newHash == hash {
				t.Fatal("collisionCount 1 gives the same hash")
			}
			cr, err := e.client.AppsV1().ControllerRevisions(ns).Get(e.ctx, spec.Name+"-"+newHash, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the revision under the new hash: %v", err)
			}
			if ref := metav1.GetControllerOf(cr); ref == nil || ref.UID != ds.UID {
				t.Errorf("revision %s controlled by %v, want the DaemonSet", cr.Name, ref)
			}
			if cr.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != newHash {
				t.Errorf("revision %s hash label %q, want %q", cr.Name, cr.Labels[appsv1.DefaultDaemonSetUniqueLabelKey], newHash)
			}
			after, err := e.client.AppsV1().ControllerRevisions(ns).Get(e.ctx, squatter.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the colliding revision is gone: %v", err)
			}
			if string(after.Data.Raw) != string(squatter.Data.Raw) {
				t.Errorf("the colliding revision's data changed:\n%s\nwas\n%s", after.Data.Raw, squatter.Data.Raw)
			}
			ref := metav1.GetControllerOf(after)
			if tc.adoptable && (ref == nil || ref.UID != ds.UID) {
				t.Errorf("the adoptable colliding revision is controlled by %v, want the DaemonSet", ref)
			}
			if !tc.adoptable && ref != nil {
				t.Errorf("the foreign colliding revision was adopted: %v", ref)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 9. --bind-mode=direct without kube-scheduler.

func TestIntegrationDirectBindWithoutScheduler(t *testing.T) {
	kwoktest.Cluster(t) // skips under -short and without binaries, as the shared cluster does
	conf := kwoktest.Config("controller-direct-test")
	conf.DisableScheduler = true
	upCtx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cluster, err := kwok.Up(upCtx, conf)
	if err != nil {
		t.Fatalf("bringing up a cluster without kube-scheduler: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := cluster.Down(ctx); err != nil {
			t.Errorf("tearing down %s: %v", cluster.Name(), err)
		}
	})
	for _, p := range cluster.Status(t.Context()).Processes {
		if p.Alive && strings.Contains(p.Component, "scheduler") {
			t.Fatalf("cluster %s runs %s (pid %d)", cluster.Name(), p.Component, p.PID)
		}
	}

	e := newEnvOn(t, cluster)
	pool := kwok.NodePool{Prefix: "direct", Count: 3}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)

	t.Run("direct binds and pods run", func(t *testing.T) {
		e := e.sub(t)
		e.startController(plan.BindDirect)
		defer e.stopController()
		ns := e.namespace("it-direct")
		ds := e.createDS(newDS(ns, "agent", pool.Prefix))
		e.waitConverged(ns, ds.Name, converged{nodes: nodes, mode: plan.BindDirect})
		pods, err := e.podsOf(e.ctx, ds)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			if p.Spec.Affinity != nil {
				t.Errorf("pod %s has affinity %v; direct mode sets spec.nodeName only", p.Name, p.Spec.Affinity)
			}
		}
	})

	t.Run("scheduler mode leaves pods pending", func(t *testing.T) {
		e := e.sub(t)
		e.startController(plan.BindScheduler)
		defer e.stopController()
		ns := e.namespace("it-unbound")
		ds := e.createDS(newDS(ns, "agent", pool.Prefix))
		// Every node gets its pinned pod, which nobody binds.
		e.waitStatus(ns, ds.Name, appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberUnavailable: 3})
		e.holdsFor(quietWindow, "pods stay unbound and Pending without kube-scheduler", func(ctx context.Context) (bool, string, error) {
			pods, err := e.podsOf(ctx, ds)
			if err != nil {
				return false, "", err
			}
			pinned := map[string]bool{}
			for _, p := range pods {
				if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
					return false, fmt.Sprintf("pod %s bound to %q, phase %s", p.Name, p.Spec.NodeName, p.Status.Phase), nil
				}
				pinned[pinnedNode(&p)] = true
			}
			for _, n := range nodes {
				if !pinned[n] {
					return false, fmt.Sprintf("no pod pinned to %s", n), nil
				}
			}
			return len(pods) == len(nodes), fmt.Sprintf("%d pods", len(pods)), nil
		})
	})
}

// ---------------------------------------------------------------------------
// 10. Conditions of others are kept; an empty selector.

func TestIntegrationStatusConditionsKept(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace("it-conditions")
	pool := kwok.NodePool{Prefix: "cond", Count: 2}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	ds := e.createDS(newDS(ns, "agent", pool.Prefix))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})

	cond := appsv1.DaemonSetCondition{Type: "example.com/Audited", Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.Now().Rfc3339Copy(), Reason: "AuditPassed", Message: "written by the integration test"}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := e.client.AppsV1().DaemonSets(ns).Get(e.ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur = cur.DeepCopy()
		cur.Status.Conditions = append(cur.Status.Conditions, cond)
		_, err = e.client.AppsV1().DaemonSets(ns).UpdateStatus(e.ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checkCond := func(what string) {
		t.Helper()
		got := e.getDS(ns, ds.Name).Status.Conditions
		if d := cmp.Diff([]appsv1.DaemonSetCondition{cond}, got); d != "" {
			t.Errorf("%s: conditions (-want +got):\n%s", what, d)
		}
	}

	// Status-changing events make the controller write status again.
	more := e.addNodes(kwok.NodePool{Prefix: pool.Prefix, Start: 2, Count: 2})
	e.waitSchedulable(more...)
	all := append(slices.Clone(nodes), more...)
	e.waitConverged(ns, ds.Name, converged{nodes: all})
	checkCond("after two nodes joined")

	e.removeNodes(ds, more[1])
	e.waitConverged(ns, ds.Name, converged{nodes: all[:3]})
	checkCond("after a node left")

	e.updateDS(ns, ds.Name, setImage("example.com/agent:v2"))
	e.waitConverged(ns, ds.Name, converged{nodes: all[:3]})
	checkCond("after a rollout")
}

func TestIntegrationEmptySelector(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace("it-selector")
	ds := newDS(ns, "all", "nowhere")
	ds.Spec.Selector = &metav1.LabelSelector{}
	created, err := e.client.AppsV1().DaemonSets(ns).Create(e.ctx, ds, metav1.CreateOptions{})
	if apierrors.IsInvalid(err) && strings.Contains(err.Error(), "empty selector is invalid") {
		// apps/v1 validation refuses an empty selector, and the selector is
		// immutable, so no DaemonSet that selects all pods can exist on a
		// real API server: the SelectingAll event path is only reachable
		// in unit tests.
		t.Skipf("the API server rejects empty DaemonSet selectors, so SelectingAll cannot be provoked: %v", err)
	}
	if err != nil {
		t.Fatalf("creating a DaemonSet with an empty selector: got %v, want success or the empty-selector validation error", err)
	}
	e.waitFor(30*time.Second, "SelectingAll warning", func(ctx context.Context) (bool, string, error) {
		evs, err := e.events(ctx, created, plan.SelectingAllReason)
		return len(evs) > 0, "no event", err
	})
}

// TestIntegrationObservedGenerationNeverDecreases: during rollouts that come
// in quick succession, with pods deleted in bursts (many pod events, syncs
// with expectations outstanding), every stored observedGeneration is at least
// the one before it.
func TestIntegrationObservedGenerationNeverDecreases(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace("it-obsgen")
	pool := kwok.NodePool{Prefix: "obsgen", Count: 8}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	ds := e.createDS(newDS(ns, "agent", pool.Prefix, func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(4))}
	}))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})

	w, err := e.client.AppsV1().DaemonSets(ns).Watch(e.ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + ds.Name, ResourceVersion: e.getDS(ns, ds.Name).ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	type seen struct {
		rv       string
		gen, obs int64
	}
	var history []seen
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if d, ok := ev.Object.(*appsv1.DaemonSet); ok {
				history = append(history, seen{d.ResourceVersion, d.Generation, d.Status.ObservedGeneration})
			}
		}
	}()

	for i := 2; i <= 5; i++ {
		e.updateDS(ns, ds.Name, setImage(fmt.Sprintf("example.com/agent:v%d", i)))
		pods, err := e.podsOf(e.ctx, ds)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range live(pods)[:min(3, len(live(pods)))] {
			if err := e.client.CoreV1().Pods(ns).Delete(e.ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	final := e.getDS(ns, ds.Name)
	if final.Status.ObservedGeneration != final.Generation {
		t.Errorf("converged with observedGeneration %d, generation %d", final.Status.ObservedGeneration, final.Generation)
	}
	w.Stop()
	<-done
	if len(history) < 5 {
		t.Fatalf("saw only %d writes of the DaemonSet, want the rollouts' many", len(history))
	}
	for i := 1; i < len(history); i++ {
		if history[i].obs < history[i-1].obs {
			t.Errorf("observedGeneration went from %d (rv %s) to %d (rv %s)", history[i-1].obs, history[i-1].rv, history[i].obs, history[i].rv)
		}
	}
	t.Logf("%d writes seen, observedGeneration %d..%d", len(history), history[0].obs, history[len(history)-1].obs)
}

// ---------------------------------------------------------------------------
// 11. Events reach the API server as client-go's recorder sends them.

// TestIntegrationEventsCombinedAsClientGo: a create of 14 pods is recorded
// as nine "Created pod" events and a tenth, combined, whose count a real API
// server raised to 5 through the count patches eventsink builds.
func TestIntegrationEventsCombinedAsClientGo(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace("it-events")
	pool := kwok.NodePool{Prefix: "events", Count: 14}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	ds := e.createDS(newDS(ns, "agent", pool.Prefix))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})

	const combined = "(combined from similar events): Created pod: "
	e.waitFor(30*time.Second, "nine events and a combined one of count 5", func(ctx context.Context) (bool, string, error) {
		evs, err := e.events(ctx, ds, controller.SuccessfulCreateReason)
		if err != nil {
			return false, "", err
		}
		single, counts := 0, []int32{}
		for _, ev := range evs {
			switch {
			case strings.HasPrefix(ev.Message, combined):
				counts = append(counts, ev.Count)
			case strings.HasPrefix(ev.Message, "Created pod: ") && ev.Count == 1:
				single++
			default:
				return false, "", fmt.Errorf("event %s: message %q, count %d", ev.Name, ev.Message, ev.Count)
			}
		}
		return single == 9 && len(counts) == 1 && counts[0] == 5,
			fmt.Sprintf("%d single events, combined ones with counts %v", single, counts), nil
	})
}
