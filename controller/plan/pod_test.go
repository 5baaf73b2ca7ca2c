package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestNewPod(t *testing.T) {
	pin := func(node string) *corev1.NodeSelector {
		return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}
	}
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}}}
	withAffinity := func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "role", Operator: corev1.NodeSelectorOpIn, Values: []string{"edge"}}}}}},
				PreferredDuringSchedulingIgnoredDuringExecution: preferred,
			},
			PodAntiAffinity: &corev1.PodAntiAffinity{},
		}
	}
	meta := func(ds *appsv1.DaemonSet) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			GenerateName: "ds-", Namespace: "default",
			Labels: map[string]string{"app": "ds", appsv1.DefaultDaemonSetUniqueLabelKey: "h1", TemplateGenerationLabelKey: "1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: ds.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		}
	}
	tests := []struct {
		name     string
		ds       *appsv1.DaemonSet
		mode     BindMode
		wantMeta func(*appsv1.DaemonSet) metav1.ObjectMeta
		wantSpec func(*appsv1.DaemonSet) corev1.PodSpec
	}{
		{
			name: "scheduler mode pins with matchFields", ds: newDaemonSet("ds"), mode: BindScheduler, wantMeta: meta,
			wantSpec: func(ds *appsv1.DaemonSet) corev1.PodSpec {
				s := *ds.Spec.Template.Spec.DeepCopy()
				s.Tolerations = DefaultTolerations(&s)
				s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: pin("node-1")}}
				return s
			},
		},
		{
			name: "empty mode means scheduler", ds: newDaemonSet("ds"), mode: "", wantMeta: meta,
			wantSpec: func(ds *appsv1.DaemonSet) corev1.PodSpec {
				s := *ds.Spec.Template.Spec.DeepCopy()
				s.Tolerations = DefaultTolerations(&s)
				s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: pin("node-1")}}
				return s
			},
		},
		{
			name: "scheduler mode replaces required terms, keeps preferred", ds: newDaemonSet("ds", withAffinity), mode: BindScheduler, wantMeta: meta,
			wantSpec: func(ds *appsv1.DaemonSet) corev1.PodSpec {
				s := *ds.Spec.Template.Spec.DeepCopy()
				s.Tolerations = DefaultTolerations(&s)
				s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = pin("node-1")
				return s
			},
		},
		{
			name: "direct mode sets nodeName and keeps the affinity", ds: newDaemonSet("ds", withAffinity), mode: BindDirect, wantMeta: meta,
			wantSpec: func(ds *appsv1.DaemonSet) corev1.PodSpec {
				s := *ds.Spec.Template.Spec.DeepCopy()
				s.Tolerations = DefaultTolerations(&s)
				s.NodeName = "node-1"
				return s
			},
		},
		{
			name: "no template generation annotation, no generation label",
			ds: newDaemonSet("ds", func(ds *appsv1.DaemonSet) {
				ds.Annotations = nil
				ds.Spec.Template.Annotations = map[string]string{"a": "b"}
				ds.Spec.Template.Finalizers = []string{"f"}
			}),
			mode: BindDirect,
			wantMeta: func(ds *appsv1.DaemonSet) metav1.ObjectMeta {
				m := meta(ds)
				delete(m.Labels, TemplateGenerationLabelKey)
				m.Annotations = map[string]string{"a": "b"}
				m.Finalizers = []string{"f"}
				return m
			},
			wantSpec: func(ds *appsv1.DaemonSet) corev1.PodSpec {
				s := *ds.Spec.Template.Spec.DeepCopy()
				s.Tolerations = DefaultTolerations(&s)
				s.NodeName = "node-1"
				return s
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.ds.DeepCopy()
			got := NewPod(tt.ds, "h1", "node-1", tt.mode)
			if diff := cmp.Diff(tt.wantMeta(tt.ds), got.ObjectMeta); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSpec(tt.ds), got.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.ds); diff != "" {
				t.Errorf("DaemonSet mutated (-before +after):\n%s", diff)
			}
			if node, ok := TargetNodeName(got); !ok || node != "node-1" {
				t.Errorf("TargetNodeName(NewPod) = %q, %v; want node-1", node, ok)
			}
		})
	}
	t.Run("long name drops the dash", func(t *testing.T) {
		name := strings.Repeat("a", 253)
		if got := NewPod(newDaemonSet(name), "h", "n", BindDirect).GenerateName; got != name {
			t.Errorf("GenerateName = %q..., want the bare name", got[:10])
		}
	})
}

func TestTargetNodeName(t *testing.T) {
	req := func(key string, op corev1.NodeSelectorOperator, vs ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: vs}
	}
	withTerms := func(terms ...corev1.NodeSelectorTerm) *corev1.Pod {
		p := newPod("p", "")
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		return p
	}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		want   string
		wantOK bool
	}{
		{"bound", newPod("p", "n1"), "n1", true},
		{"bound wins over pin", func() *corev1.Pod { p := newPod("p", "n1", pinned); p.Spec.NodeName = "n2"; return p }(), "n2", true},
		{"pinned", newPod("p", "n1", pinned), "n1", true},
		{"no affinity", newPod("p", ""), "", false},
		{"pin in a later term", withTerms(corev1.NodeSelectorTerm{}, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "n3")}}), "n3", true},
		{"two values", withTerms(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "a", "b")}}), "", false},
		{"NotIn is no pin", withTerms(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpNotIn, "a")}}), "", false},
		{"matchExpressions are no pin", withTerms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "a")}}), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := TargetNodeName(tt.pod)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("targetNodeName = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestPodOrder(t *testing.T) {
	pods := []*corev1.Pod{
		newPod("c-unbound-oldest", "n", pinned, created(t0.Add(-3*time.Hour))),
		newPod("b-new", "n", created(t0.Add(-time.Minute))),
		newPod("b-old", "n", created(t0.Add(-2*time.Hour))),
		newPod("a-old", "n", created(t0.Add(-2*time.Hour))),
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		if podLess(a, b) {
			return -1
		}
		if podLess(b, a) {
			return 1
		}
		return 0
	})
	var got []string
	for _, p := range pods {
		got = append(got, p.Name)
	}
	want := []string{"a-old", "b-old", "b-new", "c-unbound-oldest"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestAvailableIn(t *testing.T) {
	tests := []struct {
		name     string
		pod      *corev1.Pod
		minReady int32
		want     bool
		wantWait time.Duration
	}{
		{"not ready", newPod("p", "n", notReady), 0, false, 0},
		{"no ready condition", newPod("p", "n", func(p *corev1.Pod) { p.Status.Conditions = nil }), 10, false, 0},
		{"ready, no minReadySeconds", newPod("p", "n", ready(t0)), 0, true, 0},
		{"ready long enough", newPod("p", "n", ready(t0.Add(-10*time.Second))), 10, true, 0},
		{"ready, 3s to go", newPod("p", "n", ready(t0.Add(-7*time.Second))), 10, false, 3 * time.Second},
		{"ready without transition time", newPod("p", "n", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}), 10, false, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := availableIn(tt.pod, tt.minReady, t0)
			if got != tt.want || wait != tt.wantWait {
				t.Errorf("availableIn = %v, %v; want %v, %v", got, wait, tt.want, tt.wantWait)
			}
		})
	}
}

func TestReadPodFacts(t *testing.T) {
	since := t0.Add(-time.Minute)
	noTarget := newPod("p", "")
	noTarget.Labels = nil
	tests := []struct {
		name string
		pod  *corev1.Pod
		want PodFacts
	}{
		{"bound, ready", newPod("p", "n1", ready(since)),
			PodFacts{Node: "n1", HasNode: true, Bound: true, Ready: true, ReadySince: since, Hash: curHash}},
		{"pinned, not ready, old, by generation", newPod("p", "n1", pinned, notReady, old, func(p *corev1.Pod) { p.Labels[TemplateGenerationLabelKey] = "3" }),
			PodFacts{Node: "n1", HasNode: true, Hash: oldHash, Generation: "3"}},
		{"no target, no labels", noTarget, PodFacts{Ready: true, ReadySince: t0.Add(-time.Hour)}},
		{"failed and terminating", newPod("p", "n1", phase(corev1.PodFailed), terminating),
			PodFacts{Node: "n1", HasNode: true, Bound: true, Failed: true, Terminating: true, Hash: curHash}},
		{"succeeded", newPod("p", "n1", phase(corev1.PodSucceeded)),
			PodFacts{Node: "n1", HasNode: true, Bound: true, Succeeded: true, Hash: curHash}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ReadPodFacts(tt.pod)); diff != "" {
				t.Errorf("ReadPodFacts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeIndexOfKeepsTheFirstOfAName(t *testing.T) {
	nodes := []*corev1.Node{newNode("a"), nil, newNode("b"), newNode("a")}
	want := map[string]int{"a": 0, "b": 2}
	if diff := cmp.Diff(want, NodeIndexOf(nodes)); diff != "" {
		t.Errorf("NodeIndexOf (-want +got):\n%s", diff)
	}
}

// An index that does not fit the nodes (duplicate names) is not used: the
// first node of a name counts, as without one.
func TestComputeWithNodeIndexOfDuplicateNames(t *testing.T) {
	ds := newDaemonSet("ds")
	nodes := []*corev1.Node{newNode("n1"), newNode("n1", cordon), newNode("n2")}
	in := input(ds, nodes, newPod("p1", "n1"))
	want := Compute(in)
	in.NodeIndex = NodeIndexOf(nodes)
	if diff := cmp.Diff(want, Compute(in)); diff != "" {
		t.Errorf("with index (-without +with):\n%s", diff)
	}
	in.Facts = []PodFacts{{}, {}} // not one per pod: read again
	if diff := cmp.Diff(want, Compute(in)); diff != "" {
		t.Errorf("with facts of the wrong length (-without +with):\n%s", diff)
	}
}
