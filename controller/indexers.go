package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

const (
	// podByOwnerIndex maps a pod to its controller's UID, or an orphan to
	// orphanIndexKey(namespace): a sync reads only its own pods and the
	// orphans of its namespace instead of every pod.
	podByOwnerIndex = "dsbench/owner"
	// podByNodeIndex maps a pod to the node it runs on or is pinned to, so
	// that node events find the DaemonSets with a pod there in O(pods on node).
	podByNodeIndex = "dsbench/node"
)

func orphanIndexKey(namespace string) string { return "orphan/" + namespace }

func podIndexers() cache.Indexers {
	return cache.Indexers{
		podByOwnerIndex: func(obj any) ([]string, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, nil
			}
			if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
				return []string{string(ref.UID)}, nil
			}
			return []string{orphanIndexKey(pod.Namespace)}, nil
		},
		podByNodeIndex: func(obj any) ([]string, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, nil
			}
			if n := targetNodeName(pod); n != "" {
				return []string{n}, nil
			}
			return nil, nil
		},
	}
}

// targetNodeName is spec.nodeName, or for a pod not yet bound the node it is
// pinned to by a required matchFields metadata.name In [node] term (how
// daemon pods are created in scheduler bind mode).
func targetNodeName(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
