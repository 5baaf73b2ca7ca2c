package oracle_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dsbench/dsbench/bench/oracle"
)

func TestEligibility(t *testing.T) {
	const (
		NoSchedule       = corev1.TaintEffectNoSchedule
		NoExecute        = corev1.TaintEffectNoExecute
		PreferNoSchedule = corev1.TaintEffectPreferNoSchedule
	)
	type want struct{ MustRun, MayRun bool }
	yes, noSchedule, no := want{true, true}, want{false, true}, want{false, false}
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		node *corev1.Node
		want want
	}{
		{"plain node", daemonSet("d"), node("n"), yes},

		// Template nodeName.
		{"template nodeName is this node", daemonSet("d", templateNodeName("n")), node("n"), yes},
		{"template nodeName is another node", daemonSet("d", templateNodeName("m")), node("n"), no},

		// nodeSelector.
		{"nodeSelector matches", daemonSet("d", nodeSelector("role", "edge")), node("n", withLabels("role", "edge")), yes},
		{"nodeSelector value differs", daemonSet("d", nodeSelector("role", "edge")), node("n", withLabels("role", "core")), no},
		{"nodeSelector label absent", daemonSet("d", nodeSelector("role", "edge")), node("n"), no},
		{"nodeSelector needs every pair", daemonSet("d", nodeSelector("role", "edge", "zone", "a")), node("n", withLabels("role", "edge")), no},

		// Required node affinity: matchExpressions.
		{"In matches", daemonSet("d", required(expr("zone", corev1.NodeSelectorOpIn, "a", "b"))), node("n", withLabels("zone", "b")), yes},
		{"In other value", daemonSet("d", required(expr("zone", corev1.NodeSelectorOpIn, "a"))), node("n", withLabels("zone", "c")), no},
		{"In label absent", daemonSet("d", required(expr("zone", corev1.NodeSelectorOpIn, "a"))), node("n"), no},
		{"In without values is malformed", daemonSet("d", required(expr("zone", corev1.NodeSelectorOpIn))), node("n", withLabels("zone", "")), no},
		{"NotIn label absent", daemonSet("d", required(expr("zone", corev1.NodeSelectorOpNotIn, "a"))), node("n"), yes},
		{"NotIn other value", daemonSet("d", required(expr("zone", corev1.NodeSelectorOpNotIn, "a"))), node("n", withLabels("zone", "b")), yes},
		{"NotIn listed value", daemonSet("d", required(expr("zone", corev1.NodeSelectorOpNotIn, "a", "b"))), node("n", withLabels("zone", "b")), no},
		{"Exists", daemonSet("d", required(expr("gpu", corev1.NodeSelectorOpExists))), node("n", withLabels("gpu", "")), yes},
		{"Exists absent", daemonSet("d", required(expr("gpu", corev1.NodeSelectorOpExists))), node("n"), no},
		{"Exists with values is malformed", daemonSet("d", required(expr("gpu", corev1.NodeSelectorOpExists, "x"))), node("n", withLabels("gpu", "x")), no},
		{"DoesNotExist absent", daemonSet("d", required(expr("gpu", corev1.NodeSelectorOpDoesNotExist))), node("n"), yes},
		{"DoesNotExist present", daemonSet("d", required(expr("gpu", corev1.NodeSelectorOpDoesNotExist))), node("n", withLabels("gpu", "1")), no},
		{"Gt greater", daemonSet("d", required(expr("cores", corev1.NodeSelectorOpGt, "4"))), node("n", withLabels("cores", "8")), yes},
		{"Gt equal", daemonSet("d", required(expr("cores", corev1.NodeSelectorOpGt, "4"))), node("n", withLabels("cores", "4")), no},
		{"Gt negative numbers", daemonSet("d", required(expr("t", corev1.NodeSelectorOpGt, "-5"))), node("n", withLabels("t", "-3")), yes},
		{"Gt label not a number", daemonSet("d", required(expr("cores", corev1.NodeSelectorOpGt, "4"))), node("n", withLabels("cores", "many")), no},
		{"Gt label absent", daemonSet("d", required(expr("cores", corev1.NodeSelectorOpGt, "4"))), node("n"), no},
		{"Gt value not a number", daemonSet("d", required(expr("cores", corev1.NodeSelectorOpGt, "four"))), node("n", withLabels("cores", "8")), no},
		{"Gt two values is malformed", daemonSet("d", required(expr("cores", corev1.NodeSelectorOpGt, "1", "2"))), node("n", withLabels("cores", "8")), no},
		{"Lt less", daemonSet("d", required(expr("cores", corev1.NodeSelectorOpLt, "4"))), node("n", withLabels("cores", "2")), yes},
		{"Lt greater", daemonSet("d", required(expr("cores", corev1.NodeSelectorOpLt, "4"))), node("n", withLabels("cores", "8")), no},
		{"unknown operator", daemonSet("d", required(expr("zone", "Like", "a"))), node("n", withLabels("zone", "a")), no},
		{"terms are ORed", daemonSet("d", required(expr("zone", corev1.NodeSelectorOpIn, "a"), expr("role", corev1.NodeSelectorOpIn, "edge"))),
			node("n", withLabels("role", "edge")), yes},
		{"requirements in a term are ANDed", daemonSet("d", required(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}},
			{Key: "role", Operator: corev1.NodeSelectorOpIn, Values: []string{"edge"}},
		}})), node("n", withLabels("role", "edge", "zone", "b")), no},
		{"empty term matches nothing", daemonSet("d", required(corev1.NodeSelectorTerm{})), node("n"), no},
		{"empty term does not spoil the others", daemonSet("d", required(corev1.NodeSelectorTerm{}, expr("zone", corev1.NodeSelectorOpIn, "a"))),
			node("n", withLabels("zone", "a")), yes},
		{"no terms matches nothing", daemonSet("d", required()), node("n"), no},
		{"a malformed term does not spoil the others", daemonSet("d", required(expr("zone", corev1.NodeSelectorOpGt, "x"), expr("zone", corev1.NodeSelectorOpIn, "a"))),
			node("n", withLabels("zone", "a")), yes},
		{"nodeSelector and affinity both needed", daemonSet("d", nodeSelector("role", "edge"), required(expr("zone", corev1.NodeSelectorOpIn, "a"))),
			node("n", withLabels("zone", "a")), no},

		// Required node affinity: matchFields metadata.name.
		{"matchFields In this node", daemonSet("d", required(field(corev1.NodeSelectorOpIn, "n"))), node("n"), yes},
		{"matchFields In another node", daemonSet("d", required(field(corev1.NodeSelectorOpIn, "m"))), node("n"), no},
		{"matchFields NotIn another node", daemonSet("d", required(field(corev1.NodeSelectorOpNotIn, "m"))), node("n"), yes},
		{"matchFields NotIn this node", daemonSet("d", required(field(corev1.NodeSelectorOpNotIn, "n"))), node("n"), no},
		{"matchFields two values is malformed", daemonSet("d", required(field(corev1.NodeSelectorOpIn, "n", "m"))), node("n"), no},
		{"matchFields Exists is not allowed", daemonSet("d", required(field(corev1.NodeSelectorOpExists))), node("n"), no},
		{"matchFields and matchExpressions ANDed", daemonSet("d", required(corev1.NodeSelectorTerm{
			MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n"}}},
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
		})), node("n", withLabels("zone", "b")), no},

		// Taints and the template's tolerations.
		{"untolerated NoSchedule: may stay, must not be created", daemonSet("d"), node("n", withTaint("dedicated", "x", NoSchedule)), noSchedule},
		{"untolerated NoExecute: must go", daemonSet("d"), node("n", withTaint("dedicated", "x", NoExecute)), no},
		{"PreferNoSchedule is ignored", daemonSet("d"), node("n", withTaint("dedicated", "x", PreferNoSchedule)), yes},
		{"NoExecute wins over NoSchedule in any order", daemonSet("d"),
			node("n", withTaint("a", "", NoSchedule), withTaint("b", "", NoExecute)), no},
		{"NoExecute first", daemonSet("d"), node("n", withTaint("b", "", NoExecute), withTaint("a", "", NoSchedule)), no},
		{"Exists by key", daemonSet("d", tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})),
			node("n", withTaint("dedicated", "x", NoExecute)), yes},
		{"Equal same value", daemonSet("d", tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "x"})),
			node("n", withTaint("dedicated", "x", NoSchedule)), yes},
		{"empty operator means Equal", daemonSet("d", tolerate(corev1.Toleration{Key: "dedicated", Value: "x"})),
			node("n", withTaint("dedicated", "x", NoSchedule)), yes},
		{"Equal other value", daemonSet("d", tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "y"})),
			node("n", withTaint("dedicated", "x", NoSchedule)), noSchedule},
		{"empty key with Exists tolerates everything", daemonSet("d", tolerate(corev1.Toleration{Operator: corev1.TolerationOpExists})),
			node("n", withTaint("a", "1", NoSchedule), withTaint("b", "2", NoExecute)), yes},
		{"empty key with Exists and an effect", daemonSet("d", tolerate(corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: NoSchedule})),
			node("n", withTaint("a", "1", NoSchedule), withTaint("b", "2", NoExecute)), no},
		{"toleration effect must match", daemonSet("d", tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: NoSchedule})),
			node("n", withTaint("dedicated", "x", NoExecute)), no},
		{"empty toleration effect matches all", daemonSet("d", tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})),
			node("n", withTaint("dedicated", "", NoSchedule), withTaint("dedicated", "", NoExecute)), yes},
		{"tolerationSeconds does not matter", daemonSet("d", tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: NoExecute, TolerationSeconds: new(int64)})),
			node("n", withTaint("dedicated", "", NoExecute)), yes},
		{"Gt toleration is behind an alpha gate", daemonSet("d", tolerate(corev1.Toleration{Key: "level", Operator: "Gt", Value: "1"})),
			node("n", withTaint("level", "5", NoSchedule)), noSchedule},

		// The tolerations the controller adds.
		{"auto: not-ready NoExecute", daemonSet("d"), node("n", withTaint(corev1.TaintNodeNotReady, "", NoExecute)), yes},
		{"auto: unreachable NoExecute", daemonSet("d"), node("n", withTaint(corev1.TaintNodeUnreachable, "", NoExecute)), yes},
		{"auto: disk-pressure NoSchedule", daemonSet("d"), node("n", withTaint(corev1.TaintNodeDiskPressure, "", NoSchedule)), yes},
		{"auto: memory-pressure NoSchedule", daemonSet("d"), node("n", withTaint(corev1.TaintNodeMemoryPressure, "", NoSchedule)), yes},
		{"auto: pid-pressure NoSchedule", daemonSet("d"), node("n", withTaint(corev1.TaintNodePIDPressure, "", NoSchedule)), yes},
		{"auto: unschedulable NoSchedule", daemonSet("d"), node("n", withTaint(corev1.TaintNodeUnschedulable, "", NoSchedule)), yes},
		{"auto: network-unavailable only with hostNetwork", daemonSet("d"), node("n", withTaint(corev1.TaintNodeNetworkUnavailable, "", NoSchedule)), noSchedule},
		{"auto: network-unavailable with hostNetwork", daemonSet("d", hostNetwork), node("n", withTaint(corev1.TaintNodeNetworkUnavailable, "", NoSchedule)), yes},
		{"not auto: not-ready NoSchedule of new nodes", daemonSet("d"), node("n", withTaint(corev1.TaintNodeNotReady, "", NoSchedule)), noSchedule},
		{"not auto: unreachable NoSchedule", daemonSet("d"), node("n", withTaint(corev1.TaintNodeUnreachable, "", NoSchedule)), noSchedule},
		{"not auto: disk-pressure NoExecute", daemonSet("d"), node("n", withTaint(corev1.TaintNodeDiskPressure, "", NoExecute)), no},
		{"not auto: out-of-service NoExecute", daemonSet("d"), node("n", withTaint(corev1.TaintNodeOutOfService, "nodeshutdown", NoExecute)), no},

		// Cordon.
		{"cordoned without taint", daemonSet("d"), node("n", cordoned), yes},
		{"cordoned with the unschedulable taint", daemonSet("d"), node("n", cordoned, withTaint(corev1.TaintNodeUnschedulable, "", NoSchedule)), yes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got want
			got.MustRun, got.MayRun = oracle.Eligibility(tc.ds, tc.node)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Eligibility (-want +got):\n%s", diff)
			}
		})
	}
}
