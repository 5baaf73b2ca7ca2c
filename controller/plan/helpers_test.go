package plan

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// t0 is the fake "now" of most tests.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	curHash = "new"
	oldHash = "old"
)

// newDaemonSet builds a DaemonSet as the apiserver stores it: defaults
// applied, generation 1, template generation annotation 1.
func newDaemonSet(name string, opts ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Generation: 1,
			Annotations: map[string]string{appsv1.DeprecatedTemplateGeneration: "1"},
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "agent", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
					MaxSurge:       ptr.To(intstr.FromInt32(0)),
				},
			},
			RevisionHistoryLimit: ptr.To(int32(10)),
		},
	}
	for _, o := range opts {
		o(ds)
	}
	return ds
}

func maxUnavailable(v intstr.IntOrString) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &v }
}

func maxSurge(v intstr.IntOrString) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = &v
		ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	}
}

func onDelete(ds *appsv1.DaemonSet) {
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
}

func minReady(s int32) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) { ds.Spec.MinReadySeconds = s }
}

func nodeSelector(kv ...string) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = labelMap(kv...) }
}

func hostNetwork(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = true }

func tolerate(t corev1.Toleration) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Tolerations = append(ds.Spec.Template.Spec.Tolerations, t)
	}
}

func requiredTerms(terms ...corev1.NodeSelectorTerm) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
		}}
	}
}

func labelMap(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func newNode(name string, opts ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func nodeLabels(kv ...string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		for k, v := range labelMap(kv...) {
			n.Labels[k] = v
		}
	}
}

func taint(key string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
	}
}

// cordon is what kubectl cordon does: spec.unschedulable plus, via the
// node-lifecycle controller, the unschedulable NoSchedule taint.
func cordon(n *corev1.Node) {
	n.Spec.Unschedulable = true
	taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)(n)
}

func addNodes(n int, opts ...func(*corev1.Node)) []*corev1.Node {
	nodes := make([]*corev1.Node, n)
	for i := range nodes {
		nodes[i] = newNode(fmt.Sprintf("node-%d", i), opts...)
	}
	return nodes
}

// newPod builds a pod of ds "ds" bound to node, created at t0-1h, running,
// ready since t0-1h, carrying curHash.
func newPod(name, node string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID(name + "-uid"),
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
			Labels:            map[string]string{"app": "ds", appsv1.DefaultDaemonSetUniqueLabelKey: curHash},
		},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	ready(t0.Add(-time.Hour))(p)
	for _, o := range opts {
		o(p)
	}
	return p
}

func hash(h string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = h }
}

func old(p *corev1.Pod) { hash(oldHash)(p) }

func ready(since time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}
	}
}

func notReady(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
}

func phase(ph corev1.PodPhase) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = ph
		if ph != corev1.PodRunning {
			notReady(p)
		}
	}
}

func terminating(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(-time.Second))) }

func created(t time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}

// pinned turns a bound pod into one the scheduler has not bound yet, pinned
// to the same node with matchFields.
func pinned(p *corev1.Pod) {
	p.Spec.Affinity = pinToNode(nil, p.Spec.NodeName)
	p.Spec.NodeName = ""
}

// summary is the part of a Plan most tests compare, in a readable form.
type summary struct {
	Creates      []string
	Deletes      []string // "node/pod reason"
	Events       []string // "Type Reason"
	RequeueAfter time.Duration
}

func summarize(p Plan) summary {
	s := summary{Creates: p.Creates, RequeueAfter: p.RequeueAfter}
	for _, d := range p.Deletes {
		s.Deletes = append(s.Deletes, d.Node+"/"+d.Name+" "+d.Reason)
	}
	for _, e := range p.Events {
		s.Events = append(s.Events, e.Type+" "+e.Reason)
	}
	return s
}

func input(ds *appsv1.DaemonSet, nodes []*corev1.Node, pods ...*corev1.Pod) Input {
	return Input{DaemonSet: ds, Nodes: nodes, Pods: pods, Hash: curHash, Now: t0}
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// availableIn is PodFacts.availableIn of pod.
func availableIn(pod *corev1.Pod, minReadySeconds int32, now time.Time) (available bool, wait time.Duration) {
	f := ReadPodFacts(pod)
	return f.availableIn(minReadySeconds, now)
}
