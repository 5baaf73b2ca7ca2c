package kwok_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/kwok/kwoktest"
)

// kwok v0.8.0 leaves pods bound to a node re-created under the name of a
// node deleted moments before Pending: its pod controller skips the pod's
// events while it does not manage the node (PodController.need and the
// read-only check of the node's lease), and nothing looks at the pod again.
// That is what a reset followed by joins of the same names did to
// bench-churn-rollout (finding 10 of issue 11). The same pods on nodes of
// fresh names all start. The harness therefore never re-creates a name
// (planNodeReset, freshNodeIndex). If kwok is fixed, the second assertion
// fails: the workaround can then go.
func TestKwokStallsPodsOfReusedNodeNames(t *testing.T) {
	_, _, client := kwoktest.Cluster(t)
	ctx := t.Context()
	const n = 40
	fresh := kwok.NodePool{Prefix: "fresh", Count: n}
	reused := kwok.NodePool{Prefix: "reused", Count: n}
	t.Cleanup(func() {
		_ = client.CoreV1().Pods("default").DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "stall-test"})
		_ = kwok.DeleteNodes(context.Background(), client, append(fresh.NodeNames(), reused.NodeNames()...), 0)
	})
	createSchedulable(t, client, reused)
	// As a reset followed by joins of the same names does.
	if err := kwok.DeleteNodes(ctx, client, reused.NodeNames(), 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the reused pool's nodes gone", func() (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwok.PoolLabel + "=reused"})
		return err == nil && len(list.Items) == 0, nil
	})
	createSchedulable(t, client, reused)
	createSchedulable(t, client, fresh)
	podName := func(node string) string { return "stall-" + node }
	for _, p := range []kwok.NodePool{fresh, reused} {
		for _, node := range p.NodeNames() {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: podName(node), Namespace: "default", Labels: map[string]string{"stall-test": "true"}},
				Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
			}
			if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	running := func(p kwok.NodePool) (int, []string) {
		var pending []string
		for _, node := range p.NodeNames() {
			if podState(ctx, client, podName(node)) != "Running/True" {
				pending = append(pending, podName(node))
			}
		}
		return p.Count - len(pending), pending
	}
	waitFor(t, 20*time.Second, "every pod on a node of a fresh name running", func() (bool, error) {
		ok, _ := running(fresh)
		return ok == n, nil
	})
	// The fresh pods had time to start; the reused ones had the same.
	time.Sleep(5 * time.Second)
	ok, pending := running(reused)
	t.Logf("on re-created names: %d of %d pods running, %d left Pending by kwok", ok, n, len(pending))
	if len(pending) == 0 {
		t.Fatal("every pod on a re-created node name started: kwok no longer drops these events, so the harness's fresh names and nudges may be dropped")
	}
	for _, name := range pending {
		if err := kwok.NudgePod(ctx, client, "default", name, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// A nudge is no repair for this cause: measured here, none of 13
	// nudged pods started within two minutes. Fresh names are the fix.
	time.Sleep(10 * time.Second)
	ok, _ = running(reused)
	t.Logf("10 s after nudging them: %d of %d running", ok, n)
}

func createSchedulable(t *testing.T, client kubernetes.Interface, p kwok.NodePool) {
	t.Helper()
	ctx := t.Context()
	if err := kwok.CreateNodes(ctx, client, p, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, fmt.Sprintf("%d %s nodes schedulable", p.Count, p.Prefix), func() (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwok.PoolLabel + "=" + p.Prefix})
		if err != nil {
			return false, err
		}
		ok := 0
		for i := range list.Items {
			if kwok.NodeSchedulable(&list.Items[i]) {
				ok++
			}
		}
		return ok == p.Count, nil
	})
}
