package crosscheck_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/controller/plan"
)

// bytes hands out choices from fuzz input; exhausted input chooses 0.
type bytes struct{ b []byte }

func (c *bytes) pick(n int) int {
	if len(c.b) == 0 || n <= 1 {
		return 0
	}
	v := int(c.b[0]) % n
	c.b = c.b[1:]
	return v
}

var (
	labelKeys   = []string{"role", "zone", "disk"}
	labelValues = []string{"a", "b", ""}
	taintKeys   = []string{
		"dedicated", corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeUnschedulable,
		corev1.TaintNodeDiskPressure, corev1.TaintNodeMemoryPressure, corev1.TaintNodePIDPressure,
		corev1.TaintNodeNetworkUnavailable,
	}
	effects   = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, corev1.TaintEffectPreferNoSchedule}
	operators = []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt}
	nodeNames = []string{"n1", "n2"}
)

func randomNode(c *bytes) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeNames[c.pick(len(nodeNames))], Labels: map[string]string{}}}
	for _, k := range labelKeys {
		if v := c.pick(len(labelValues) + 1); v < len(labelValues) {
			n.Labels[k] = labelValues[v]
		}
	}
	if c.pick(3) == 0 {
		n.Labels["count"] = fmt.Sprint(c.pick(5))
	}
	for range c.pick(4) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{
			Key: taintKeys[c.pick(len(taintKeys))], Value: labelValues[c.pick(len(labelValues))], Effect: effects[c.pick(len(effects))]})
	}
	n.Spec.Unschedulable = c.pick(4) == 0
	return n
}

func randomRequirement(c *bytes, fields bool) corev1.NodeSelectorRequirement {
	r := corev1.NodeSelectorRequirement{Key: labelKeys[c.pick(len(labelKeys))], Operator: operators[c.pick(len(operators))]}
	if fields {
		r.Key = metav1.ObjectNameField
		r.Operator = []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn}[c.pick(2)]
	}
	if c.pick(4) == 0 {
		r.Key = "count"
	}
	switch r.Operator {
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		r.Values = []string{fmt.Sprint(c.pick(5))}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
	default:
		for range 1 + c.pick(2) {
			if fields {
				r.Values = append(r.Values, nodeNames[c.pick(len(nodeNames))])
			} else {
				r.Values = append(r.Values, labelValues[c.pick(len(labelValues))])
			}
		}
	}
	return r
}

func randomDaemonSet(c *bytes) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}}
	spec := &ds.Spec.Template.Spec
	if c.pick(3) == 0 {
		spec.NodeSelector = map[string]string{labelKeys[c.pick(len(labelKeys))]: labelValues[c.pick(len(labelValues))]}
	}
	if c.pick(2) == 0 {
		sel := &corev1.NodeSelector{}
		for range c.pick(3) {
			var term corev1.NodeSelectorTerm
			for range c.pick(3) {
				term.MatchExpressions = append(term.MatchExpressions, randomRequirement(c, false))
			}
			for range c.pick(2) {
				term.MatchFields = append(term.MatchFields, randomRequirement(c, true))
			}
			sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, term)
		}
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
	}
	for range c.pick(3) {
		tol := corev1.Toleration{Key: taintKeys[c.pick(len(taintKeys))], Effect: append(effects, "")[c.pick(len(effects)+1)]}
		switch c.pick(3) {
		case 0:
			tol.Operator = corev1.TolerationOpExists
		case 1:
			tol.Operator, tol.Value = corev1.TolerationOpEqual, labelValues[c.pick(len(labelValues))]
		default:
			tol.Operator, tol.Key = corev1.TolerationOpExists, "" // tolerates everything of its effect
		}
		spec.Tolerations = append(spec.Tolerations, tol)
	}
	spec.HostNetwork = c.pick(2) == 0
	if c.pick(8) == 0 {
		spec.NodeName = nodeNames[c.pick(len(nodeNames))]
	}
	return ds
}

func agree(t *testing.T, data []byte) {
	c := &bytes{b: data}
	ds, node := randomDaemonSet(c), randomNode(c)
	run, cont := plan.NodeShouldRunDaemonPod(node, ds)
	mustRun, mayRun := oracle.Eligibility(ds, node)
	if run != mustRun || cont != mayRun {
		t.Fatalf("planner (shouldRun %v, shouldContinueRunning %v) and oracle (mustRun %v, mayRun %v) disagree on\nnode %+v\ntemplate %+v",
			run, cont, mustRun, mayRun, node, ds.Spec.Template.Spec)
	}
}

// FuzzEligibilityAgrees runs the planner's and the oracle's eligibility on
// the same random node and DaemonSet: a drift on either side fails here.
func FuzzEligibilityAgrees(f *testing.F) {
	for i := range 64 {
		seed := make([]byte, 64)
		for j := range seed {
			seed[j] = byte((i*131 + j*29 + i*j*7) % 251)
		}
		f.Add(seed)
	}
	f.Fuzz(agree)
}

// TestEligibilityAgreesOnTrickyCases names the cases where the two are most
// likely to drift: each auto-added toleration, hostNetwork's
// network-unavailable, NoSchedule against NoExecute, cordon, nodeName, and
// affinity terms (matchFields with several values, Gt/Lt, OR of terms).
func TestEligibilityAgreesOnTrickyCases(t *testing.T) {
	taint := func(key string, effect corev1.TaintEffect) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: key, Effect: effect}}}}
	}
	labelled := func(kv ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{}}}
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
		return n
	}
	ds := func(mutate ...func(*corev1.PodSpec)) *appsv1.DaemonSet {
		d := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}}
		for _, m := range mutate {
			m(&d.Spec.Template.Spec)
		}
		return d
	}
	hostNet := func(s *corev1.PodSpec) { s.HostNetwork = true }
	affinity := func(terms ...corev1.NodeSelectorTerm) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		}
	}
	fieldIn := func(values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: values}}}
	}
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	cordoned := labelled()
	cordoned.Spec.Unschedulable = true
	cases := []struct {
		name string
		ds   *appsv1.DaemonSet
		node *corev1.Node
		want [2]bool // shouldRun, shouldContinueRunning
	}{
		{"not-ready NoExecute is auto-tolerated", ds(), taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute), [2]bool{true, true}},
		{"not-ready NoSchedule is not", ds(), taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule), [2]bool{false, true}},
		{"unreachable NoExecute", ds(), taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute), [2]bool{true, true}},
		{"disk-pressure", ds(), taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule), [2]bool{true, true}},
		{"memory-pressure", ds(), taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule), [2]bool{true, true}},
		{"pid-pressure", ds(), taint(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule), [2]bool{true, true}},
		{"unschedulable taint", ds(), taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule), [2]bool{true, true}},
		{"cordon alone is ignored", ds(), cordoned, [2]bool{true, true}},
		{"network-unavailable without hostNetwork", ds(), taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule), [2]bool{false, true}},
		{"network-unavailable with hostNetwork", ds(hostNet), taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule), [2]bool{true, true}},
		{"untolerated NoExecute evicts", ds(), taint("dedicated", corev1.TaintEffectNoExecute), [2]bool{false, false}},
		{"PreferNoSchedule is ignored", ds(), taint("dedicated", corev1.TaintEffectPreferNoSchedule), [2]bool{true, true}},
		{"nodeName elsewhere", ds(func(s *corev1.PodSpec) { s.NodeName = "n2" }), labelled(), [2]bool{false, false}},
		// component-helpers' nodeaffinity accepts exactly one value for a
		// field selector: the term is an error and matches nothing.
		{"matchFields In with two values, one ours", ds(affinity(fieldIn("n1", "n2"))), labelled(), [2]bool{false, false}},
		{"matchFields In elsewhere", ds(affinity(fieldIn("n2"))), labelled(), [2]bool{false, false}},
		{"Gt", ds(affinity(expr("count", corev1.NodeSelectorOpGt, "2"))), labelled("count", "3"), [2]bool{true, true}},
		{"Lt with a non-number label", ds(affinity(expr("count", corev1.NodeSelectorOpLt, "2"))), labelled("count", "x"), [2]bool{false, false}},
		{"terms are ORed", ds(affinity(expr("zone", corev1.NodeSelectorOpIn, "b"), expr("role", corev1.NodeSelectorOpExists))), labelled("role", "a"), [2]bool{true, true}},
		{"nodeSelector and affinity are ANDed", ds(func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"zone": "a"} }, affinity(expr("role", corev1.NodeSelectorOpExists))), labelled("role", "a"), [2]bool{false, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run, cont := plan.NodeShouldRunDaemonPod(tc.node, tc.ds)
			mustRun, mayRun := oracle.Eligibility(tc.ds, tc.node)
			if got := [2]bool{run, cont}; got != tc.want {
				t.Errorf("planner (shouldRun, shouldContinueRunning) = %v, want %v", got, tc.want)
			}
			if got := [2]bool{mustRun, mayRun}; got != tc.want {
				t.Errorf("oracle (mustRun, mayRun) = %v, want %v", got, tc.want)
			}
		})
	}
}
