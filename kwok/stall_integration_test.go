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
// fresh names all start, which this test asserts on every round; the
// harness therefore never re-creates a name (planNodeReset, freshNodeIndex).
func TestKwokStallsPodsOfReusedNodeNames(t *testing.T) {
	_, _, client := kwoktest.Cluster(t)
	ctx := t.Context()
	const n, rounds = 40, 3
	reused := kwok.NodePool{Prefix: "reused", Count: n}
	var fresh []kwok.NodePool
	t.Cleanup(func() {
		_ = client.CoreV1().Pods("default").DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "stall-test"})
		names := reused.NodeNames()
		for _, p := range fresh {
			names = append(names, p.NodeNames()...)
		}
		_ = kwok.DeleteNodes(context.Background(), client, names, 0)
	})
	createSchedulable(t, client, reused)
	podName := func(round int, node string) string { return fmt.Sprintf("stall-%d-%s", round, node) }
	running := func(round int, p kwok.NodePool) (pending []string) {
		for _, node := range p.NodeNames() {
			if podState(ctx, client, podName(round, node)) != "Running/True" {
				pending = append(pending, podName(round, node))
			}
		}
		return pending
	}
	stalled := 0
	for round := range rounds {
		// As a reset followed by joins of the same names does.
		if err := kwok.DeleteNodes(ctx, client, reused.NodeNames(), 0); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, "the reused pool's nodes gone", func() (bool, error) {
			list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwok.PoolLabel + "=reused"})
			return err == nil && len(list.Items) == 0, nil
		})
		createSchedulable(t, client, reused)
		f := kwok.NodePool{Prefix: fmt.Sprintf("fresh%d", round), Count: n}
		fresh = append(fresh, f)
		createSchedulable(t, client, f)
		for _, p := range []kwok.NodePool{f, reused} {
			for _, node := range p.NodeNames() {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: podName(round, node), Namespace: "default", Labels: map[string]string{"stall-test": "true"}},
					Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
				}
				if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The fix: every pod on a node of a fresh name starts.
		waitFor(t, 20*time.Second, "every pod on a node of a fresh name running", func() (bool, error) {
			return len(running(round, f)) == 0, nil
		})
		time.Sleep(5 * time.Second) // the reused ones had the same time, and more
		pending := running(round, reused)
		t.Logf("round %d: on re-created names %d of %d pods running, %d left Pending by kwok", round, n-len(pending), n, len(pending))
		if len(pending) > 0 {
			stalled++
			// A nudge is no repair for this cause: measured here, none of
			// 13 nudged pods started within two minutes.
			for _, name := range pending {
				if err := kwok.NudgePod(ctx, client, "default", name, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(5 * time.Second)
			t.Logf("round %d: 5 s after nudging them, %d left Pending", round, len(running(round, reused)))
			break
		}
	}
	// Whether kwok drops them is a race (re-creating the node against the
	// garbage collector removing its old lease, we think): this test alone
	// stalled 11 to 29 of 40 pods in each of 6 rounds in one hour, and none
	// in 7 rounds in the next, alone, on a cluster of its own or after the
	// package's other tests. So the reproduction is logged, the fix asserted.
	if stalled == 0 {
		t.Logf("no stall in %d rounds: the garbage collector won the race every time (or kwok no longer drops these events)", rounds)
	}
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
