package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
)

// TestRunWiring is the one test that runs the informers and workers for
// real (against the fake client): a DaemonSet on three nodes, one of them
// ineligible, gets exactly two pods, and Run returns on cancel.
func TestRunWiring(t *testing.T) {
	ds := newDaemonSet("agent", withNodeSelector(map[string]string{"role": "worker"}))
	client := newFakeClient(ds,
		newNode("n1", map[string]string{"role": "worker"}),
		newNode("n2", map[string]string{"role": "worker"}),
		newNode("n3", map[string]string{"role": "infra"}),
	)
	c, err := NewController(Config{Client: client, Recorder: record.NewFakeRecorder(100), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	pods := func(ctx context.Context) []corev1.Pod {
		l, err := client.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		return l.Items
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return len(pods(ctx)) >= 2 && c.expectations.Satisfied(dsKey(ds)), nil
	})
	if err != nil {
		t.Fatalf("pods never created: %v (have %d)", err, len(pods(ctx)))
	}
	// A few more syncs may run (status writes wake the DaemonSet); none
	// may add a pod.
	time.Sleep(200 * time.Millisecond)
	got := map[string]int{}
	for _, p := range pods(ctx) {
		got[targetNodeName(&p)]++
	}
	if len(got) != 2 || got["n1"] != 1 || got["n2"] != 1 {
		t.Errorf("pods per node = %v, want one on n1 and one on n2", got)
	}
	if !c.HasSynced() {
		t.Error("HasSynced is false while running")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
