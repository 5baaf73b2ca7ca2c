package kwok_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
				createPodOn(t, client, podName(round, node), node, "stall-test")
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

// removeAtEnd deletes, when the test ends, the pool's nodes and the pods of
// the default namespace that carry label.
func removeAtEnd(t *testing.T, client kubernetes.Interface, p kwok.NodePool, label string) {
	t.Cleanup(func() {
		_ = client.CoreV1().Pods("default").DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: label})
		_ = kwok.DeleteNodes(context.Background(), client, p.NodeNames(), 0)
	})
}

// createPodOn creates pod default/name bound to node, labelled with label
// (removeAtEnd's selector), as a controller that binds its own pods would.
func createPodOn(t *testing.T, client kubernetes.Interface, name, node, label string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{label: "true"}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createSchedulable(t *testing.T, client kubernetes.Interface, p kwok.NodePool) {
	t.Helper()
	ctx := t.Context()
	if err := kwok.CreateNodes(ctx, client, p, 0); err != nil {
		t.Fatal(err)
	}
	waitPool(t, client, p, time.Minute, "schedulable", kwok.NodeSchedulable)
}

// waitPool waits until every node of p is what holds says (named by what),
// and fails the test after within.
func waitPool(t *testing.T, client kubernetes.Interface, p kwok.NodePool, within time.Duration, what string, holds func(*corev1.Node) bool) {
	t.Helper()
	ctx := t.Context()
	waitFor(t, within, fmt.Sprintf("%d %s nodes %s", p.Count, p.Prefix, what), func() (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwok.PoolLabel + "=" + p.Prefix})
		if err != nil {
			return false, err
		}
		ok := 0
		for i := range list.Items {
			if holds(&list.Items[i]) {
				ok++
			}
		}
		return ok == p.Count, nil
	})
}

// A defect behind the stall: kwok v0.8.0 may never start a pod that was
// bound to a node before kwok took the node up. Its pod controller drops the
// pod's events while its node controller does not know the node
// (PodController.need, no retry), and the pass over the node's pods that
// follows kwok taking the node's Lease races its lease cache: runs here left
// 0 to 6 of 6 such pods Pending, with kwok as released and patched alike (CI
// saw 6 of 6 start on a released kwok whose pod watch never closed). With
// reused names a scheduler can bind pods before kwok sees the node; a node of
// a fresh name stays tainted until kwok has made it Ready, so the harness
// never reuses a name (planNodeReset, freshNodeIndex) and nudges
// (kwok.NudgePod) what it still counts as a stall. As in the test above,
// the reproduction is logged and the repair asserted: every pod kwok left
// Pending starts once nudged.
func TestNudgeStartsPodsBoundBeforeItsNode(t *testing.T) {
	_, _, client := kwoktest.Cluster(t)
	ctx := t.Context()
	const n, attempts = 6, 3
	podName := func(node string) string { return "early-" + node }
	pendingOf := func(nodes []string) (pending []string) {
		for _, node := range nodes {
			if podState(ctx, client, podName(node)) != "Running/True" {
				pending = append(pending, node)
			}
		}
		return pending
	}
	var pending []string
	for attempt := 1; attempt <= attempts && len(pending) == 0; attempt++ {
		early := kwok.NodePool{Prefix: fmt.Sprintf("early%d", attempt), Count: n}
		removeAtEnd(t, client, early, "early-test")
		for _, node := range early.NodeNames() {
			createPodOn(t, client, podName(node), node, "early-test")
		}
		time.Sleep(time.Second)
		createSchedulable(t, client, early) // kwok has taken every node up
		time.Sleep(5 * time.Second)
		pending = pendingOf(early.NodeNames())
		t.Logf("attempt %d: kwok left %d of %d pods bound before their node Pending", attempt, len(pending), n)
	}
	if len(pending) == 0 {
		t.Logf("kwok started every pod in %d attempts: nothing for the nudge to repair (kwok won the race)", attempts)
		return
	}
	// The harness's repair. One pod is left alone when there are two or
	// more, to show the nudge is what started the others.
	nudged, control := pending, []string(nil)
	if len(pending) > 1 {
		nudged, control = pending[1:], pending[:1]
	}
	for _, node := range nudged {
		if err := kwok.NudgePod(ctx, client, "default", podName(node), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, fmt.Sprintf("the %d nudged pods running", len(nudged)), func() (bool, error) {
		return len(pendingOf(nudged)) == 0, nil
	})
	if len(control) > 0 {
		t.Logf("the pod not nudged: %d of 1 still Pending", len(pendingOf(control)))
	}
}

// kwok finalizes a deleted pod with one DELETE. Its own delete (grace 0)
// first updates the pod to a grace period of 0, which used to match the
// delete stage again: kwok v0.8.0 then sent a second DELETE after the pod
// was gone, a 404 ("failed to apply stage") for every pod deleted, about
// 86,000 in one make bench. The stage no longer matches that update.
func TestKwokDeletesEachPodOnce(t *testing.T) {
	cluster, _, client := kwoktest.Cluster(t)
	ctx := t.Context()
	const n = 20
	pool := kwok.NodePool{Prefix: "deleteonce", Count: n}
	removeAtEnd(t, client, pool, "deleteonce-test")
	createSchedulable(t, client, pool)
	name := func(node string) string { return "deleteonce-" + node }
	for _, node := range pool.NodeNames() {
		createPodOn(t, client, name(node), node, "deleteonce-test")
	}
	waitFor(t, 30*time.Second, "every pod running", func() (bool, error) {
		for _, node := range pool.NodeNames() {
			if podState(ctx, client, name(node)) != "Running/True" {
				return false, nil
			}
		}
		return true, nil
	})
	// A graceful delete, as a controller's: kwok finalizes it.
	for _, node := range pool.NodeNames() {
		if err := client.CoreV1().Pods("default").Delete(ctx, name(node), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "every pod gone", func() (bool, error) {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "deleteonce-test"})
		return err == nil && len(list.Items) == 0, err
	})
	time.Sleep(3 * time.Second) // a second play would follow within a second
	log, err := os.ReadFile(filepath.Join(cluster.LogDir(), "kwok-controller.log"))
	if err != nil {
		t.Fatal(err)
	}
	deletes, failed := 0, 0
	for line := range strings.SplitSeq(string(log), "\n") {
		if !strings.Contains(line, `"pod":"default/deleteonce-`) {
			continue
		}
		switch {
		case strings.Contains(line, `"msg":"Delete pod"`):
			deletes++
		case strings.Contains(line, "failed to delete pod"):
			failed++
		}
	}
	if deletes != n || failed != 0 {
		t.Errorf("kwok deleted %d of %d pods and failed %d more deletes of pods already gone; want each deleted once", deletes, n, failed)
	}
}
