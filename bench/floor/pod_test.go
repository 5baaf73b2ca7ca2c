package floor_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

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
	p := floor.NewPod(ds, oracle.CurrentHash(ds), "n1", floor.BindNodeName)
	if p.Spec.NodeName != "n1" || p.Spec.Affinity != nil || p.GenerateName != "agent-" || p.Namespace != "ns" {
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

// With kube-scheduler binding, the pod is unbound and pinned as upstream
// pins it: the oracle must place it on its node before the binding, and the
// template's required terms give way to the pin while its preferred ones
// stay.
func TestNewPodPinnedForTheScheduler(t *testing.T) {
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}
	required := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}}
	for _, tc := range []struct {
		name          string
		affinity      *corev1.Affinity
		wantPreferred int
	}{
		{"no affinity", nil, 0},
		{"pod affinity only", &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}}, 0},
		{"required node affinity", &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}}, 0},
		{"preferred node affinity", &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := &appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "uid-1"},
				Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
					Spec:       corev1.PodSpec{Affinity: tc.affinity, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
				}},
			}
			before := ds.DeepCopy()
			p := floor.NewPod(ds, oracle.CurrentHash(ds), "n7", floor.BindScheduler)
			if p.Spec.NodeName != "" {
				t.Fatalf("nodeName %q: the scheduler binds this pod", p.Spec.NodeName)
			}
			w := oracle.NewWorld()
			p.Name, p.UID = "agent-x", "pod-uid"
			for _, o := range []runtime.Object{ds, p} {
				if err := w.Apply(oracle.Event{Time: time.Unix(1, 0), Kind: oracle.Added, Object: o}); err != nil {
					t.Fatal(err)
				}
			}
			if got := w.PodsOn("ns/agent", "n7"); len(got) != 1 {
				t.Errorf("the oracle places %d pods on n7, want the pinned one: affinity %+v", len(got), p.Spec.Affinity)
			}
			na := p.Spec.Affinity.NodeAffinity
			if terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; len(terms) != 1 || len(terms[0].MatchExpressions) != 0 {
				t.Errorf("required terms %+v, want the pin alone", terms)
			}
			if len(na.PreferredDuringSchedulingIgnoredDuringExecution) != tc.wantPreferred {
				t.Errorf("preferred terms %+v, want %d", na.PreferredDuringSchedulingIgnoredDuringExecution, tc.wantPreferred)
			}
			if tc.affinity != nil && tc.affinity.PodAffinity != nil && p.Spec.Affinity.PodAffinity == nil {
				t.Error("the pod affinity was dropped")
			}
			if diff := cmp.Diff(before, ds); diff != "" {
				t.Errorf("NewPod changed the DaemonSet (-before +after):\n%s", diff)
			}
		})
	}
}
