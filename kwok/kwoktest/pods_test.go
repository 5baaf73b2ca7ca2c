package kwoktest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func pinned(terms ...[]corev1.NodeSelectorRequirement) *corev1.Affinity {
	sel := &corev1.NodeSelector{}
	for _, fields := range terms {
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchFields: fields})
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
}

func nameIn(values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: values}
}

func TestPodNode(t *testing.T) {
	for _, tt := range []struct {
		name string
		spec corev1.PodSpec
		want string
	}{
		{name: "bound", spec: corev1.PodSpec{NodeName: "n1", Affinity: pinned([]corev1.NodeSelectorRequirement{nameIn("n2")})}, want: "n1"},
		{name: "pinned", spec: corev1.PodSpec{Affinity: pinned([]corev1.NodeSelectorRequirement{nameIn("n2")})}, want: "n2"},
		{name: "neither", spec: corev1.PodSpec{}},
		{name: "node affinity without required terms", spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}}},
		{name: "two values", spec: corev1.PodSpec{Affinity: pinned([]corev1.NodeSelectorRequirement{nameIn("n1", "n2")})}},
		{name: "a later term of one value", spec: corev1.PodSpec{Affinity: pinned(
			[]corev1.NodeSelectorRequirement{nameIn("n1", "n2")},
			[]corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"n3"}}, nameIn("n4")},
		)}, want: "n4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodNode(&corev1.Pod{Spec: tt.spec}); got != tt.want {
				t.Errorf("PodNode = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPodReady(t *testing.T) {
	for _, tt := range []struct {
		name  string
		conds []corev1.PodCondition
		want  bool
	}{
		{name: "no conditions"},
		{name: "ready", conds: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}, want: true},
		{name: "not ready", conds: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}},
		{name: "unknown", conds: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionUnknown}}},
		{name: "scheduled only", conds: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodReady(&corev1.Pod{Status: corev1.PodStatus{Conditions: tt.conds}}); got != tt.want {
				t.Errorf("PodReady = %v, want %v", got, tt.want)
			}
		})
	}
}
