package controller

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
)

// TestEventTextsAsUpstream: people grep for upstream's event reasons and
// messages and alert on them, so each event this controller shares with
// upstream v1.36.4 has its exact text: pkg/controller/controller_utils.go
// (RealPodControl: "Error creating: %v", "Created pod: %v", "Error deleting:
// %v", "Deleted pod: %v") and pkg/controller/daemon/daemon_controller.go
// (podsShouldBeOnNode, syncDaemonSet).
func TestEventTextsAsUpstream(t *testing.T) {
	ds := newDaemonSet("agent")
	failed := newPodFor(ds, "agent-failed", "n1")
	failed.Status.Phase = corev1.PodFailed
	done := newPodFor(ds, "agent-done", "n2")
	done.Status.Phase = corev1.PodSucceeded
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil), newNode("n2", nil), newNode("n3", nil), failed, done})
	f.client.PrependReactor("create", "pods", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is sad")
	})
	f.client.PrependReactor("delete", "pods", func(a core.Action) (bool, runtime.Object, error) {
		if a.(core.DeleteAction).GetName() == "agent-done" {
			return true, nil, apierrors.NewServiceUnavailable("etcd is sad")
		}
		return false, nil, nil
	})
	_ = f.sync(dsKey(ds)) // the failures make it return an error
	want := []string{
		"Warning FailedDaemonPod Found failed daemon pod default/agent-failed on node n1, will try to kill it",
		"Normal SucceededDaemonPod Found succeeded daemon pod default/agent-done on node n2, will try to delete it",
		"Warning FailedCreate Error creating: etcd is sad",
		"Normal SuccessfulDelete Deleted pod: agent-failed",
		"Warning FailedDelete Error deleting: etcd is sad",
	}
	got := f.events()
	if diff := cmp.Diff(slices.Sorted(slices.Values(want)), slices.Sorted(slices.Values(got))); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
