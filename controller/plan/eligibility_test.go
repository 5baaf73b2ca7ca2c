package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestNodeShouldRunDaemonPod(t *testing.T) {
	type want struct{ ShouldRun, ShouldContinueRunning bool }
	yes, no, stay := want{true, true}, want{false, false}, want{false, true}
	fields := func(op corev1.NodeSelectorOperator, v string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: op, Values: []string{v}}}}
	}
	exprs := func(key string, op corev1.NodeSelectorOperator, vs ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: vs}}}
	}
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		node *corev1.Node
		want want
	}{
		{"plain node", newDaemonSet("ds"), newNode("n"), yes},

		// Every auto-added toleration, and what stays untolerated.
		{"not-ready NoExecute tolerated", newDaemonSet("ds"), newNode("n", taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)), yes},
		{"unreachable NoExecute tolerated", newDaemonSet("ds"), newNode("n", taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)), yes},
		{"disk-pressure NoSchedule tolerated", newDaemonSet("ds"), newNode("n", taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)), yes},
		{"memory-pressure NoSchedule tolerated", newDaemonSet("ds"), newNode("n", taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)), yes},
		{"pid-pressure NoSchedule tolerated", newDaemonSet("ds"), newNode("n", taint(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)), yes},
		{"unschedulable NoSchedule tolerated", newDaemonSet("ds"), newNode("n", taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)), yes},
		{"cordoned node", newDaemonSet("ds"), newNode("n", cordon), yes},
		{"spec.unschedulable alone is not read", newDaemonSet("ds"), newNode("n", func(n *corev1.Node) { n.Spec.Unschedulable = true }), yes},
		{"network-unavailable without hostNetwork", newDaemonSet("ds"), newNode("n", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), stay},
		{"network-unavailable with hostNetwork", newDaemonSet("ds", hostNetwork), newNode("n", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), yes},
		{"not-ready NoSchedule (new node) is not tolerated", newDaemonSet("ds"), newNode("n", taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)), stay},
		{"disk-pressure NoExecute is not tolerated", newDaemonSet("ds"), newNode("n", taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoExecute)), no},

		// Other taints.
		{"custom NoSchedule: no new pod, existing stays", newDaemonSet("ds"), newNode("n", taint("dedicated", corev1.TaintEffectNoSchedule)), stay},
		{"custom NoExecute: evict", newDaemonSet("ds"), newNode("n", taint("dedicated", corev1.TaintEffectNoExecute)), no},
		{"NoSchedule and NoExecute: evict", newDaemonSet("ds"), newNode("n", taint("a", corev1.TaintEffectNoSchedule), taint("b", corev1.TaintEffectNoExecute)), no},
		{"PreferNoSchedule is ignored", newDaemonSet("ds"), newNode("n", taint("dedicated", corev1.TaintEffectPreferNoSchedule)), yes},
		{"template toleration", newDaemonSet("ds", tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})),
			newNode("n", taint("dedicated", corev1.TaintEffectNoExecute)), yes},
		{"toleration of the wrong effect", newDaemonSet("ds", tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})),
			newNode("n", taint("dedicated", corev1.TaintEffectNoExecute)), no},
		{"Gt toleration is off (alpha gate)", newDaemonSet("ds", tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpGt, Value: "0"})),
			newNode("n", func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "5", Effect: corev1.TaintEffectNoSchedule}}
			}), stay},

		// Placement.
		{"nodeSelector matches", newDaemonSet("ds", nodeSelector("role", "edge")), newNode("n", nodeLabels("role", "edge")), yes},
		{"nodeSelector does not match", newDaemonSet("ds", nodeSelector("role", "edge")), newNode("n", nodeLabels("role", "core")), no},
		{"nodeSelector label missing", newDaemonSet("ds", nodeSelector("role", "edge")), newNode("n"), no},
		{"affinity matchExpressions In", newDaemonSet("ds", requiredTerms(exprs("zone", corev1.NodeSelectorOpIn, "a", "b"))), newNode("n", nodeLabels("zone", "b")), yes},
		{"affinity matchExpressions NotIn", newDaemonSet("ds", requiredTerms(exprs("zone", corev1.NodeSelectorOpNotIn, "a"))), newNode("n", nodeLabels("zone", "a")), no},
		{"affinity terms are ORed", newDaemonSet("ds", requiredTerms(exprs("zone", corev1.NodeSelectorOpIn, "x"), exprs("zone", corev1.NodeSelectorOpExists))), newNode("n", nodeLabels("zone", "a")), yes},
		{"affinity matchFields In", newDaemonSet("ds", requiredTerms(fields(corev1.NodeSelectorOpIn, "n"))), newNode("n"), yes},
		{"affinity matchFields other node", newDaemonSet("ds", requiredTerms(fields(corev1.NodeSelectorOpIn, "m"))), newNode("n"), no},
		{"affinity invalid term never matches", newDaemonSet("ds", requiredTerms(exprs("zone", corev1.NodeSelectorOpGt, "x"))), newNode("n", nodeLabels("zone", "5")), no},
		{"nodeSelector and affinity both apply", newDaemonSet("ds", nodeSelector("role", "edge"), requiredTerms(exprs("zone", corev1.NodeSelectorOpExists))), newNode("n", nodeLabels("zone", "a")), no},
		{"affinity mismatch beats toleration", newDaemonSet("ds", nodeSelector("role", "edge")), newNode("n", taint("dedicated", corev1.TaintEffectNoSchedule)), no},
		{"template nodeName matches", newDaemonSet("ds", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "n" }), newNode("n"), yes},
		{"template nodeName other node", newDaemonSet("ds", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "m" }), newNode("n"), no},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.ds.DeepCopy()
			var got want
			got.ShouldRun, got.ShouldContinueRunning = NodeShouldRunDaemonPod(tt.node, tt.ds)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("NodeShouldRunDaemonPod (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.ds); diff != "" {
				t.Errorf("DaemonSet mutated (-before +after):\n%s", diff)
			}
		})
	}
}

func TestDefaultTolerations(t *testing.T) {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	base := []corev1.Toleration{
		exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	}
	custom := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name string
		spec corev1.PodSpec
		want []corev1.Toleration // after addDefaultTolerations
	}{
		{"defaults", corev1.PodSpec{}, base},
		{"hostNetwork adds network-unavailable", corev1.PodSpec{HostNetwork: true},
			append(append([]corev1.Toleration{}, base...), exists(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))},
		{"template tolerations come first", corev1.PodSpec{Tolerations: []corev1.Toleration{custom}},
			append([]corev1.Toleration{custom}, base...)},
		{"tolerationSeconds on not-ready is dropped in place", corev1.PodSpec{Tolerations: []corev1.Toleration{
			custom,
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
		}}, append([]corev1.Toleration{custom}, base...)},
		{"an identical toleration is kept once", corev1.PodSpec{Tolerations: []corev1.Toleration{exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)}},
			append([]corev1.Toleration{exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)}, append(append([]corev1.Toleration{}, base[:4]...), base[5])...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := tt.spec.DeepCopy()
			spec := tt.spec // shallow: must not write into tt.spec's slice
			addDefaultTolerations(&spec)
			if diff := cmp.Diff(tt.want, spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(orig.Tolerations, tt.spec.Tolerations); diff != "" {
				t.Errorf("original tolerations changed (-before +after):\n%s", diff)
			}
			wantDefaults := base
			if tt.spec.HostNetwork {
				wantDefaults = tt.want[len(tt.want)-7:]
			}
			if diff := cmp.Diff(wantDefaults, DefaultTolerations(&tt.spec)); diff != "" {
				t.Errorf("DefaultTolerations (-want +got):\n%s", diff)
			}
		})
	}
}
