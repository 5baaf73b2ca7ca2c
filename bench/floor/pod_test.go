package floor_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsbench/dsbench/bench/floor"
	"github.com/dsbench/dsbench/bench/oracle"
)

// The floor's pod must be what the oracle counts as the DaemonSet's current
// pod on the node, without a scheduler.
func TestNewPod(t *testing.T) {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "uid-1",
			Annotations: map[string]string{appsv1.DeprecatedTemplateGeneration: "3"}},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}, Annotations: map[string]string{"a": "b"}},
			Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c", Image: "i"}},
				Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}},
		}},
	}
	p := floor.NewPod(ds, "n1")
	if p.Spec.NodeName != "n1" || p.GenerateName != "agent-" || p.Namespace != "ns" {
		t.Errorf("nodeName %q, generateName %q, namespace %q", p.Spec.NodeName, p.GenerateName, p.Namespace)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != ds.UID || ref.Kind != "DaemonSet" {
		t.Errorf("controller reference %+v", ref)
	}
	if !oracle.IsCurrent(ds, p) || p.Labels["pod-template-generation"] != "3" || p.Labels["app"] != "agent" || p.Annotations["a"] != "b" {
		t.Errorf("labels %v, annotations %v: not the current revision", p.Labels, p.Annotations)
	}
	// The template's own not-ready toleration is not repeated; hostNetwork
	// adds network-unavailable.
	if n := len(p.Spec.Tolerations); n != 7 {
		t.Errorf("%d tolerations, want 7: %v", n, p.Spec.Tolerations)
	}
	if ds.Spec.Template.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != "" || len(ds.Spec.Template.Spec.Tolerations) != 1 {
		t.Error("NewPod changed the DaemonSet's template")
	}
}
