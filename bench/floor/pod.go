package floor

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// templateGenerationLabel is upstream's pod-template-generation label
// (extensions/v1beta1.DaemonSetTemplateGenerationKey).
const templateGenerationLabel = "pod-template-generation"

// Binding is how the floor's pods reach their nodes.
type Binding string

const (
	// BindNodeName sets spec.nodeName at creation: no scheduler, as ours
	// with --bind-mode=direct.
	BindNodeName Binding = "direct"
	// BindScheduler pins the pod to its node by required node affinity and
	// leaves the binding to kube-scheduler, as upstream and ours do: a floor
	// for controllers that pay the scheduler.
	BindScheduler Binding = "scheduler"
)

// ParseBinding accepts "direct" and "scheduler".
func ParseBinding(s string) (Binding, error) {
	switch b := Binding(s); b {
	case BindNodeName, BindScheduler:
		return b, nil
	}
	return "", fmt.Errorf("binding %q is neither %q nor %q", s, BindNodeName, BindScheduler)
}

// NewPod builds the DaemonSet's pod for node as a DaemonSet controller
// would: the template's metadata and spec, the tolerations every daemon pod
// gets, the revision labels the oracle compares, a controller reference to
// the DaemonSet, and spec.nodeName or the node-affinity pin as bind says.
// hash is the DaemonSet's oracle.CurrentHash, computed once for all its pods
// (it hashes the whole template).
func NewPod(ds *appsv1.DaemonSet, hash, node string, bind Binding) *corev1.Pod {
	t := ds.Spec.Template.DeepCopy()
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	if g, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]; ok {
		labels[templateGenerationLabel] = g
	}
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    ds.Namespace,
			GenerateName: ds.Name + "-",
			Labels:       labels,
			Annotations:  t.Annotations,
			Finalizers:   t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: t.Spec,
	}
	if bind == BindScheduler {
		pod.Spec.Affinity = pinToNode(pod.Spec.Affinity, node)
	} else {
		pod.Spec.NodeName = node
	}
	for _, tol := range daemonTolerations(pod.Spec.HostNetwork) {
		if !hasToleration(pod.Spec.Tolerations, tol) {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, tol)
		}
	}
	return pod
}

// pinToNode makes the required node affinity a single term matching the
// node's name, as upstream pins a daemon pod for kube-scheduler
// (util.ReplaceDaemonSetPodNodeNameNodeAffinity): the template's own
// required terms were the eligibility the oracle already decided, and its
// preferred terms stay.
func pinToNode(a *corev1.Affinity, node string) *corev1.Affinity {
	pin := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
		{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = pin
	return a
}

// daemonTolerations are the tolerations upstream's DaemonSet controller adds
// to every pod (util.AddOrUpdateDaemonPodTolerations), so that node problems
// neither evict nor block a daemon.
func daemonTolerations(hostNetwork bool) []corev1.Toleration {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	ts := []corev1.Toleration{
		exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	}
	if hostNetwork {
		ts = append(ts, exists(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))
	}
	return ts
}

func hasToleration(ts []corev1.Toleration, want corev1.Toleration) bool {
	for _, t := range ts {
		if t.Key == want.Key && t.Operator == want.Operator && t.Effect == want.Effect && t.Value == want.Value {
			return true
		}
	}
	return false
}
