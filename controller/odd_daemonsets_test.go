package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// TestSyncLeavesPodsOfOtherControllersAlone: a pod that matches the
// DaemonSet's selector but that another controller controls is never
// adopted, patched or deleted, nor counted: the DaemonSet creates its own pod
// beside it. Nor is an orphan that is being deleted adopted (upstream's
// ControllerRefManager ignores it). Their events wake no DaemonSet of ours
// but their owner's, so they cannot drive a loop; but the deletion of a pod
// whose DaemonSet is gone wakes those that select it.
func TestSyncLeavesPodsOfOtherControllersAlone(t *testing.T) {
	ds := newDaemonSet("agent")
	other := newDaemonSet("other")
	controlledBy := func(apiVersion, kind, name, uid string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + uid), Controller: ptr.To(true)}}
		}
	}
	tests := []struct {
		name       string
		pod        func(*corev1.Pod)
		wantQueued []string // by the foreign pod's events
	}{
		{name: "a ReplicaSet's pod", pod: controlledBy("apps/v1", "ReplicaSet", "web-5d4f", "web-5d4f")},
		{name: "a pod controlled by a ConfigMap", pod: controlledBy("v1", "ConfigMap", "holder", "holder")},
		{name: "another DaemonSet's pod", pod: controlledBy("apps/v1", "DaemonSet", "other", "other"), wantQueued: []string{dsKey(other)}},
		// Its deletion, which happens once, wakes the DaemonSets that
		// select it: one may hold its node for it (staleOwnerOn).
		{name: "the pod of a DaemonSet of the same name since replaced", pod: controlledBy("apps/v1", "DaemonSet", "agent", "agent-before"), wantQueued: []string{dsKey(ds)}},
		{name: "an orphan being deleted", pod: func(p *corev1.Pod) {
			p.OwnerReferences = nil
			p.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
			p.Finalizers = []string{"example.com/hold"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Labelled as a current pod of ds on n1: claimed, it would
			// count as up to date there.
			foreign := newPodFor(ds, "foreign", "n1")
			tt.pod(foreign)
			f := newFixture(t, []runtime.Object{ds, other, currentRevision(t, ds), newNode("n1", nil), newNode("n2", nil), foreign})
			if err := f.sync(dsKey(ds)); err != nil {
				t.Fatalf("sync: %v", err)
			}
			actions := f.actions()
			want := []string{"create pods on n1", "create pods on n2", "update daemonsets/status agent"}
			if diff := cmp.Diff(want, summarize(actions)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			for _, a := range filterActions(actions, "update daemonsets/status") {
				got := a.(core.UpdateAction).GetObject().(*appsv1.DaemonSet).Status
				wantStatus := appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberUnavailable: 2, ObservedGeneration: 1}
				if diff := cmp.Diff(wantStatus, got); diff != "" {
					t.Errorf("status (-want +got): the foreign pod must not count:\n%s", diff)
				}
			}

			f.queued()
			changed := foreign.DeepCopy()
			changed.ResourceVersion = "2"
			changed.Labels["extra"] = "label"
			changed.Status.Conditions[0].Status = corev1.ConditionFalse
			f.c.addPod(foreign)
			f.c.updatePod(foreign, changed)
			f.c.deletePod(changed)
			if diff := cmp.Diff(tt.wantQueued, f.queued()); diff != "" {
				t.Errorf("enqueued by the foreign pod's events (-want +got):\n%s", diff)
			}
		})
	}
}
