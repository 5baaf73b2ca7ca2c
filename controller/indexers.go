package controller

import (
	"github.com/dsbench/dsbench/controller/plan"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// The two kinds of keys have prefixes of their own, so that the owner key of
// a DaemonSet in namespace "orphan" never equals the orphan key of a
// namespace named like its UID.
func orphanIndexKey(namespace string) string { return "orphan/" + namespace }

// ownerIndexKey files a pod under its namespace and controller's UID: an
// ownerReference never crosses namespaces, so a pod of another namespace
// that names our UID is not ours (upstream lists only the DaemonSet's
// namespace; the garbage collector treats such an owner as absent).
func ownerIndexKey(namespace string, uid types.UID) string {
	return "owner/" + namespace + "/" + string(uid)
}

func podIndexers() cache.Indexers {
	return cache.Indexers{
		podByOwnerIndex: func(obj any) ([]string, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, nil
			}
			if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
				return []string{ownerIndexKey(pod.Namespace, ref.UID)}, nil
			}
			return []string{orphanIndexKey(pod.Namespace)}, nil
		},
		podByNodeIndex: func(obj any) ([]string, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, nil
			}
			if n, ok := plan.TargetNodeName(pod); ok {
				return []string{n}, nil
			}
			return nil, nil
		},
	}
}
