package floor

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsbench/dsbench/bench/oracle"
)

// templateGenerationLabel is upstream's pod-template-generation label
// (extensions/v1beta1.DaemonSetTemplateGenerationKey).
const templateGenerationLabel = "pod-template-generation"

// NewPod builds the DaemonSet's pod for node as a DaemonSet controller
// would, but bound: the template's metadata and spec, spec.nodeName set (no
// scheduler), the tolerations every daemon pod gets, the revision labels
// the oracle compares, and a controller reference to the DaemonSet.
func NewPod(ds *appsv1.DaemonSet, node string) *corev1.Pod {
	t := ds.Spec.Template.DeepCopy()
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[appsv1.DefaultDaemonSetUniqueLabelKey] = oracle.CurrentHash(ds)
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
	pod.Spec.NodeName = node
	for _, tol := range daemonTolerations(pod.Spec.HostNetwork) {
		if !hasToleration(pod.Spec.Tolerations, tol) {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, tol)
		}
	}
	return pod
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
