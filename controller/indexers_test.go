package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsbench/dsbench/controller/plan"
)

// TestPodByNodeIndexAgreesWithPlanner: the node index and the planner must
// give every pod the same node, or a node event would wake DaemonSets the
// planner does not place there (they were two copies that had drifted on a
// matchFields term with several values).
func TestPodByNodeIndexAgreesWithPlanner(t *testing.T) {
	in := func(values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	pinnedBy := func(reqs ...corev1.NodeSelectorRequirement) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: reqs}}},
		}}}}
	}
	pinned := func(values ...string) *corev1.Pod { return pinnedBy(in(values...)) }
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"bound", &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}}, []string{"n1"}},
		{"pinned to one node", pinned("n2"), []string{"n2"}},
		{"matchFields with two values: no target", pinned("n2", "n3"), nil},
		// The old index skipped the two-value requirement and took the next.
		{"a two-value requirement before a one-value one: no target", pinnedBy(in("n2", "n3"), in("n4")), nil},
		{"no node at all", &corev1.Pod{}, nil},
	}
	index := podIndexers()[podByNodeIndex]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := index(tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			node, ok := plan.TargetNodeName(tt.pod)
			var planned []string
			if ok {
				planned = []string{node}
			}
			if len(got) != len(tt.want) || (len(got) == 1 && got[0] != tt.want[0]) {
				t.Errorf("index = %v, want %v", got, tt.want)
			}
			if len(got) != len(planned) || (len(got) == 1 && got[0] != planned[0]) {
				t.Errorf("index = %v, planner = %v: they must agree", got, planned)
			}
		})
	}
}
