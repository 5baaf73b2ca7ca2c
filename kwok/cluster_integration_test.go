package kwok_test

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/kwok/kwoktest"
)

func TestMain(m *testing.M) { kwoktest.Main(m, "kwok-pkg-test", nil) }

func TestClusterServesPods(t *testing.T) {
	_, _, client := kwoktest.Cluster(t)
	ctx := t.Context()
	if _, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("default ServiceAccount: %v", err)
	}
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != kwok.KubernetesVersion {
		t.Errorf("server version %s, want %s", v.GitVersion, kwok.KubernetesVersion)
	}
}

func TestNodePoolsAreReadyWithExactLabelsAndTaints(t *testing.T) {
	_, _, client := kwoktest.Cluster(t)
	ctx := t.Context()
	pools := []kwok.NodePool{
		{Prefix: "ssd", Count: 600, Labels: map[string]string{"disk": "ssd"}},
		{Prefix: "gpu", Count: 400, Labels: map[string]string{"accel": "gpu", "zone": "b"},
			Taints: []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}, {Key: "dedicated", Effect: corev1.TaintEffectNoExecute}}},
	}
	for _, p := range pools {
		if err := kwok.CreateNodes(ctx, client, p, 0); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, p := range pools {
			_ = kwok.DeleteNodes(context.Background(), client, p.NodeNames(), 0)
		}
	})
	waitFor(t, 2*time.Minute, "1000 nodes Ready and without the not-ready taint", func() (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range list.Items {
			if kwok.NodeSchedulable(&list.Items[i]) {
				ready++
			}
		}
		return ready >= 1000, nil
	})
	for _, p := range pools {
		for _, name := range []string{p.NodeName(0), p.NodeName(p.Count - 1)} {
			node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range p.Labels {
				if node.Labels[k] != v {
					t.Errorf("node %s label %s=%q, want %q", name, k, node.Labels[k], v)
				}
			}
			if node.Labels[kwok.PoolLabel] != p.Prefix {
				t.Errorf("node %s pool label %q, want %q", name, node.Labels[kwok.PoolLabel], p.Prefix)
			}
			var got []corev1.Taint
			for _, taint := range node.Spec.Taints {
				taint.TimeAdded = nil
				got = append(got, taint)
			}
			if diff := cmp.Diff(p.Taints, got); diff != "" {
				t.Errorf("node %s taints (-want +got):\n%s", name, diff)
			}
		}
	}
	// Bulk patch: label change and cordon on the whole ssd pool.
	hdd := "hdd"
	cordon := true
	if _, err := kwok.PatchNodes(ctx, client, pools[0].NodeNames(), kwok.NodePatch{Labels: map[string]*string{"disk": &hdd}, Unschedulable: &cordon}, 0); err != nil {
		t.Fatal(err)
	}
	node, err := client.CoreV1().Nodes().Get(ctx, pools[0].NodeName(7), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels["disk"] != "hdd" || !node.Spec.Unschedulable {
		t.Errorf("after patch: disk=%q unschedulable=%v, want hdd and true", node.Labels["disk"], node.Spec.Unschedulable)
	}

	// ResetNodes brings changed nodes back to their pool's spec: the ssd
	// pool relabeled and cordoned above, a gpu node with a taint less, a
	// taint more and a label more.
	gpu := pools[1].NodeName(3)
	if _, err := kwok.PatchNodes(ctx, client, []string{gpu}, kwok.NodePatch{
		Labels:       map[string]*string{"extra": &hdd},
		SetTaints:    []corev1.Taint{{Key: "evict", Effect: corev1.TaintEffectNoExecute}},
		RemoveTaints: []corev1.Taint{{Key: "gpu"}},
	}, 0); err != nil {
		t.Fatal(err)
	}
	wants := []*corev1.Node{pools[1].Node(3)}
	for i := range pools[0].Count {
		wants = append(wants, pools[0].Node(i))
	}
	if err := kwok.ResetNodes(ctx, client, wants, 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []*corev1.Node{wants[0], wants[1], wants[len(wants)-1]} {
		// The node lifecycle controller lifts its unschedulable taint
		// (which ResetNodes leaves to it) soon after the uncordon.
		var node *corev1.Node
		waitFor(t, time.Minute, "node "+want.Name+" without lifecycle taints", func() (bool, error) {
			var err error
			node, err = client.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return kwok.IsLifecycleTaint(t.Key) }), nil
		})
		labels := map[string]string{}
		for k, v := range node.Labels {
			if !kwok.IsAPIServerLabel(k) {
				labels[k] = v
			}
		}
		if diff := cmp.Diff(want.Labels, labels); diff != "" {
			t.Errorf("node %s labels after reset (-want +got):\n%s", want.Name, diff)
		}
		var taints []corev1.Taint
		for _, taint := range node.Spec.Taints {
			taint.TimeAdded = nil
			taints = append(taints, taint)
		}
		if diff := cmp.Diff(want.Spec.Taints, taints); diff != "" {
			t.Errorf("node %s taints after reset (-want +got):\n%s", want.Name, diff)
		}
		if node.Spec.Unschedulable {
			t.Errorf("node %s still cordoned after reset", want.Name)
		}
	}
}

// With kube-controller-manager's DaemonSet controller off, nothing creates
// pods for a DaemonSet.
func TestBuiltinDaemonSetControllerIsOff(t *testing.T) {
	_, _, client := kwoktest.Cluster(t)
	ctx := t.Context()
	if err := kwok.CreateNodes(ctx, client, kwok.NodePool{Prefix: "dsoff", Count: 3}, 0); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "nobody-runs-me"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nobody-runs-me", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	if _, err := client.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.AppsV1().DaemonSets("default").Delete(context.Background(), ds.Name, metav1.DeleteOptions{})
		_ = kwok.DeleteNodes(context.Background(), client, kwok.NodePool{Prefix: "dsoff", Count: 3}.NodeNames(), 0)
	})
	// The built-in controller reacts within a second; 10 s is generous.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=nobody-runs-me"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 {
			t.Fatalf("%d pods appeared for a DaemonSet with no controller running: the built-in DaemonSet controller is on", len(pods.Items))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func TestStagesFailAndNeverReady(t *testing.T) {
	_, cfg, client := kwoktest.Cluster(t)
	ctx := t.Context()
	if err := kwok.ApplyStages(ctx, cfg, kwok.StageOptions{FailImages: `^broken:`, NeverReadyImages: `:hang$`}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kwok.ApplyStages(context.Background(), cfg, kwok.StageOptions{}) })
	pool := kwok.NodePool{Prefix: "stage", Count: 1}
	if err := kwok.CreateNodes(ctx, client, pool, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kwok.DeleteNodes(context.Background(), client, pool.NodeNames(), 0) })
	waitFor(t, time.Minute, "node Ready", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, pool.NodeName(0), metav1.GetOptions{})
		return err == nil && kwok.NodeReady(n), nil
	})
	images := map[string]string{"ok": "busybox:1", "fail": "broken:1", "hang": "busybox:hang"}
	for name, image := range images {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "stage-" + name, Namespace: "default"},
			Spec:       corev1.PodSpec{NodeName: pool.NodeName(0), Containers: []corev1.Container{{Name: "c", Image: image}}},
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"ok": "Running/True", "fail": "Failed/", "hang": "Running/False"}
	for name, w := range want {
		waitFor(t, 30*time.Second, "pod "+name+" "+w, func() (bool, error) {
			return podState(ctx, client, "stage-"+name) == w, nil
		})
	}
	// A pod the node-lifecycle controller marked not ready becomes ready
	// again, as a kubelet would make it.
	notReady := []byte(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"NodeNotReady"}]}}`)
	if _, err := client.CoreV1().Pods("default").Patch(ctx, "stage-ok", types.StrategicMergePatchType, notReady, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "stage-ok ready again", func() (bool, error) {
		return podState(ctx, client, "stage-ok") == "Running/True", nil
	})
	// The hang pod must stay not ready.
	time.Sleep(2 * time.Second)
	if got := podState(ctx, client, "stage-hang"); got != "Running/False" {
		t.Errorf("stage-hang became %s", got)
	}
	// Deleted pods are finalized.
	for name := range images {
		if err := client.CoreV1().Pods("default").Delete(ctx, "stage-"+name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "pods finalized", func() (bool, error) {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + pool.NodeName(0)})
		return err == nil && len(list.Items) == 0, nil
	})
}

func podState(ctx context.Context, client kubernetes.Interface, name string) string {
	pod, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "error: " + err.Error()
	}
	ready := ""
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = string(c.Status)
		}
	}
	return string(pod.Status.Phase) + "/" + ready
}

func TestUpRejectsNameInUseAndTakenPort(t *testing.T) {
	cluster, _, _ := kwoktest.Cluster(t)
	ctx := t.Context()
	conf := kwoktest.Config(cluster.Name())
	if _, err := kwok.Up(ctx, conf); !errors.Is(err, kwok.ErrClusterInUse) {
		t.Fatalf("second up of %q: got %v, want ErrClusterInUse", cluster.Name(), err)
	}
	if len(cluster.LivePIDs()) == 0 {
		t.Fatal("the rejected up hurt the running cluster")
	}

	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	conf = kwoktest.Config("kwok-port-taken")
	conf.APIServerPort = port
	_, err = kwok.Up(ctx, conf)
	if err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(port)) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("up on taken port %d: got %v, want an error naming the port", port, err)
	}
}

// A second cluster comes up, and after Down no process of it is left and
// its files are gone. A dead cluster's remains are cleaned by the next Up.
func TestDownLeavesNothingAndUpCleansDeadRemains(t *testing.T) {
	kwoktest.Cluster(t)
	ctx := t.Context()
	conf := kwoktest.Config("kwok-lifecycle")
	c, err := kwok.Up(ctx, conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Down(context.Background()) })
	pids := c.LivePIDs()
	if len(pids) < 5 {
		t.Fatalf("want at least 5 live processes (etcd, apiserver, kcm, scheduler, kwok), got %v", pids)
	}
	// Simulate a crash: kill everything without kwokctl, leave the files.
	for _, pid := range pids {
		p, _ := os.FindProcess(pid)
		_ = p.Kill()
	}
	waitFor(t, 10*time.Second, "killed processes gone", func() (bool, error) { return len(c.LivePIDs()) == 0, nil })
	c2, err := kwok.Up(ctx, conf)
	if err != nil {
		t.Fatalf("up after a crash: %v", err)
	}
	pids = c2.LivePIDs()
	if err := c2.Down(ctx); err != nil {
		t.Fatal(err)
	}
	checkDownLeftNothing(t, c2, pids)
}

// checkDownLeftNothing fails the test for each of pids that still runs (a
// zombie does not count) and if the cluster's folder is still there.
func checkDownLeftNothing(t *testing.T, c *kwok.Cluster, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			if state, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(state), ") Z") {
				t.Errorf("process %d is still running after Down", pid)
			}
		}
	}
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Errorf("cluster dir %s still exists after Down (err %v)", c.Dir(), err)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond()
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
