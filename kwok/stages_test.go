package kwok

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
)

// podLifecycle is what kwok makes of the pod stages: its own matcher, fed
// the objects the harness applies.
func podLifecycle(t *testing.T, o StageOptions) lifecycle.Lifecycle {
	t.Helper()
	objs, err := Stages(o)
	if err != nil {
		t.Fatal(err)
	}
	var stages []*internalversion.Stage
	for _, obj := range objs {
		var s v1alpha1.Stage
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &s); err != nil {
			t.Fatalf("stage %s: %v", obj.GetName(), err)
		}
		if s.Spec.ResourceRef.Kind != "Pod" {
			continue
		}
		is, err := internalversion.ConvertToInternalStage(&s)
		if err != nil {
			t.Fatalf("stage %s: %v", obj.GetName(), err)
		}
		stages = append(stages, is)
	}
	lc, err := lifecycle.NewLifecycle(stages)
	if err != nil {
		t.Fatal(err)
	}
	return lc
}

// Each pod state meets exactly the stage meant for it, after the delay
// meant for it, as kwok v0.8.0 matches them.
func TestPodStagesAsKwokPlaysThem(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	lc := podLifecycle(t, StageOptions{ReadyDelay: time.Second, DeleteDelay: 500 * time.Millisecond})
	pod := func(phase corev1.PodPhase, ready corev1.ConditionStatus, grace *int64) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "example.com/agent:v1"}}},
			Status:     corev1.PodStatus{Phase: phase},
		}
		if ready != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
		}
		if grace != nil {
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(time.Duration(*grace) * time.Second)}
			p.DeletionGracePeriodSeconds = grace
		}
		return p
	}
	unready := func(p *corev1.Pod) *corev1.Pod {
		p.Status.Conditions[0].Reason = UnreadyReason
		return p
	}
	for _, tc := range []struct {
		name               string
		pod                *corev1.Pod
		stage              string // "" for none
		minDelay, maxDelay time.Duration
	}{
		{"bound and Pending", pod(corev1.PodPending, "", nil), "dsbench-pod-ready", time.Second, 2 * time.Second},
		{"Running, not Ready", pod(corev1.PodRunning, corev1.ConditionFalse, nil), "dsbench-pod-reready", time.Second, 3 * time.Second},
		{"Running and Ready", pod(corev1.PodRunning, corev1.ConditionTrue, nil), "", 0, 0},
		{"made unready by the harness", unready(pod(corev1.PodRunning, corev1.ConditionFalse, nil)), "", 0, 0},
		{"deleted with a grace period", pod(corev1.PodRunning, corev1.ConditionTrue, ptr.To[int64](30)), "dsbench-pod-delete", 500 * time.Millisecond, time.Second},
		{"deleted Pending", pod(corev1.PodPending, "", ptr.To[int64](30)), "dsbench-pod-delete", 500 * time.Millisecond, time.Second},
		// kwok's own delete (grace 0) is first written as a grace period of
		// 0; the pod's removal follows at once and cancels this.
		{"left half-deleted, grace 0", pod(corev1.PodRunning, corev1.ConditionTrue, ptr.To[int64](0)), "dsbench-pod-delete-leftover", 10 * time.Second, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &lifecycle.Event{Labels: tc.pod.Labels, Annotations: tc.pod.Annotations, Data: tc.pod}
			st, err := lc.Match(ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if st != nil {
				got = st.Name()
			}
			if got != tc.stage {
				t.Fatalf("stage %q, want %q", got, tc.stage)
			}
			if st == nil {
				return
			}
			d, _, err := st.Delay(ctx, ev, now)
			if err != nil {
				t.Fatal(err)
			}
			if d < tc.minDelay || d > tc.maxDelay {
				t.Errorf("delay %s, want %s to %s", d, tc.minDelay, tc.maxDelay)
			}
		})
	}
}
