package plan

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
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
			elig := NewEligibility(tt.ds)
			var parsed want
			parsed.ShouldRun, parsed.ShouldContinueRunning = elig.Check(tt.node)
			if diff := cmp.Diff(tt.want, parsed); diff != "" {
				t.Errorf("Eligibility.Check (-want +got):\n%s", diff)
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

// TestDefaultTolerationsTolerateTheirKeyAndEffect pins what defaultTolerates
// relies on.
func TestDefaultTolerationsTolerateTheirKeyAndEffect(t *testing.T) {
	for _, ts := range [][]corev1.Toleration{defaultTolerations, defaultTolerationsHostNetwork} {
		for _, tol := range ts {
			if tol.Operator != corev1.TolerationOpExists || tol.Key == "" || tol.Effect == "" {
				t.Errorf("default toleration %+v is not Exists with a key and an effect", tol)
			}
		}
	}
}

// referenceEligibility is NodeShouldRunDaemonPod the direct way, as upstream
// builds it: the template with the default tolerations merged in, matched by
// component-helpers' nodeaffinity. The planner's parsed form must agree.
func referenceEligibility(node *corev1.Node, ds *appsv1.DaemonSet) (shouldRun, shouldContinueRunning bool) {
	if node == nil {
		return false, false
	}
	spec := ds.Spec.Template.Spec
	addDefaultTolerations(&spec)
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return false, false
	}
	if fits, _ := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: spec}).Match(node); !fits {
		return false, false
	}
	shouldRun, shouldContinueRunning = true, true
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(spec.Tolerations, func(t corev1.Toleration) bool { return t.ToleratesTaint(discard, taint, false) }) {
			shouldRun = false
			shouldContinueRunning = shouldContinueRunning && taint.Effect != corev1.TaintEffectNoExecute
		}
	}
	return shouldRun, shouldContinueRunning
}

// randomEligibility builds a DaemonSet and a node that exercise every part of
// eligibility, invalid terms included.
func randomEligibility(c *choices) (*appsv1.DaemonSet, *corev1.Node) {
	keys := []string{"zone", "role", "count", "bad key!", ""}
	values := []string{"a", "b", "", "2", "-1", "bad value!"}
	names := []string{"n1", "n2", ""}
	operators := []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, "Bogus"}
	taintKeys := []string{"dedicated", corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeUnschedulable,
		corev1.TaintNodeDiskPressure, corev1.TaintNodeNetworkUnavailable, ""}
	effects := []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, corev1.TaintEffectPreferNoSchedule, ""}
	pick := func(xs []string) string { return xs[c.intn(len(xs))] }
	requirement := func(fields bool) corev1.NodeSelectorRequirement {
		r := corev1.NodeSelectorRequirement{Key: pick(keys), Operator: operators[c.intn(len(operators))]}
		if fields {
			r.Key = []string{metav1.ObjectNameField, metav1.ObjectNameField, "metadata.namespace", ""}[c.intn(4)]
		}
		for range c.intn(3) {
			if fields {
				r.Values = append(r.Values, pick(names))
			} else {
				r.Values = append(r.Values, pick(values))
			}
		}
		return r
	}

	ds := newDaemonSet("ds")
	spec := &ds.Spec.Template.Spec
	if c.intn(3) == 0 {
		spec.NodeSelector = map[string]string{}
		for range 1 + c.intn(2) {
			spec.NodeSelector[pick(keys)] = pick(values)
		}
	}
	if c.bool() {
		sel := &corev1.NodeSelector{}
		for range c.intn(4) {
			var term corev1.NodeSelectorTerm
			for range c.intn(3) {
				term.MatchExpressions = append(term.MatchExpressions, requirement(false))
			}
			for range c.intn(3) {
				term.MatchFields = append(term.MatchFields, requirement(true))
			}
			sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, term)
		}
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
	}
	for range c.intn(4) {
		t := corev1.Toleration{Key: pick(taintKeys), Value: pick(values), Effect: effects[c.intn(len(effects))],
			Operator: []corev1.TolerationOperator{"", corev1.TolerationOpEqual, corev1.TolerationOpExists, corev1.TolerationOpGt, "Bogus"}[c.intn(5)]}
		if c.bool() {
			t.TolerationSeconds = ptr.To(int64(c.intn(3)))
		}
		spec.Tolerations = append(spec.Tolerations, t)
	}
	spec.HostNetwork = c.bool()
	if c.intn(6) == 0 {
		spec.NodeName = pick(names)
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pick(names)}}
	if c.intn(8) > 0 {
		node.Labels = map[string]string{}
		for range c.intn(4) {
			node.Labels[pick(keys)] = pick(values)
		}
	}
	for range c.intn(4) {
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: pick(taintKeys), Value: pick(values), Effect: effects[c.intn(len(effects))]})
	}
	return ds, node
}

func checkEligibilityMatchesReference(t *testing.T, data []byte) {
	ds, node := randomEligibility(&choices{data: data})
	run, cont := NodeShouldRunDaemonPod(node, ds)
	wantRun, wantCont := referenceEligibility(node, ds)
	if run != wantRun || cont != wantCont {
		t.Fatalf("NodeShouldRunDaemonPod = (%v, %v), reference (%v, %v)\nnode %+v\ntemplate %+v",
			run, cont, wantRun, wantCont, node, ds.Spec.Template.Spec)
	}
}

// FuzzEligibilityMatchesReference compares the parsed eligibility with
// upstream's way of computing it.
func FuzzEligibilityMatchesReference(f *testing.F) {
	r := rand.New(rand.NewSource(3))
	for range 40 {
		b := make([]byte, 80)
		r.Read(b)
		f.Add(b)
	}
	f.Fuzz(checkEligibilityMatchesReference)
}

func TestEligibilityMatchesReference(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for range 20000 {
		b := make([]byte, 80)
		r.Read(b)
		checkEligibilityMatchesReference(t, b)
	}
}

// BenchmarkNodeShouldRunDaemonPod measures the eligibility check a node event
// costs per DaemonSet (the controller's affectedDaemonSets calls
// NodeShouldRunDaemonPod for the old and the new node of every DaemonSet), and
// per node within Compute, where the DaemonSet is parsed once.
func BenchmarkNodeShouldRunDaemonPod(b *testing.B) {
	plain := newDaemonSet("plain", tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}))
	placed := newDaemonSet("placed", nodeSelector("ds", "yes"),
		requiredTerms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"0", "1", "2"}}}}))
	node := newNode("node-00042", nodeLabels("ds", "yes", "zone", "1"), cordon, taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule))
	for _, tc := range []struct {
		name string
		ds   *appsv1.DaemonSet
	}{{"plain", plain}, {"selector+affinity", placed}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if run, _ := NodeShouldRunDaemonPod(node, tc.ds); !run {
					b.Fatal("node not eligible")
				}
			}
		})
		b.Run(tc.name+"/parsed", func(b *testing.B) {
			e := newEligibility(tc.ds)
			b.ReportAllocs()
			for b.Loop() {
				if run, _ := e.check(node); !run {
					b.Fatal("node not eligible")
				}
			}
		})
	}
	// One node event: the old and the new node against every DaemonSet,
	// whatever the number of nodes in the cluster.
	sets := make([]*appsv1.DaemonSet, 50)
	for i := range sets {
		sets[i] = plain
		if i%2 == 0 {
			sets[i] = placed
		}
	}
	updated := node.DeepCopy()
	updated.Spec.Taints = updated.Spec.Taints[:1]
	b.Run("node-event/daemonsets=50", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, ds := range sets {
				NodeShouldRunDaemonPod(node, ds)
				NodeShouldRunDaemonPod(updated, ds)
			}
		}
	})
	// The same, as affectedDaemonSets does it: each DaemonSet parsed once.
	b.Run("node-event-parsed-once/daemonsets=50", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, ds := range sets {
				e := NewEligibility(ds)
				e.Check(node)
				e.Check(updated)
			}
		}
	})
}
