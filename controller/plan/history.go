package plan

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// DefaultRevisionHistoryLimit is used when spec.revisionHistoryLimit is unset.
const DefaultRevisionHistoryLimit = 10

// ComputeHash is upstream controller.ComputeHash: fnv32a over the spew dump
// of the template (a value, not a pointer, as upstream dumps it), then the
// collision count as 8 little-endian bytes, rendered with SafeEncodeString.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// RevisionData is upstream's getPatch: {"spec":{"template":{...,"$patch":"replace"}}}
// with map keys sorted and integers kept as integers, so that the bytes equal
// those upstream stores and revisions it wrote still match.
func RevisionData(ds *appsv1.DaemonSet) (runtime.RawExtension, error) {
	raw, err := json.Marshal(ds.Spec.Template)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encoding pod template of %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	var template map[string]any
	if err := json.Unmarshal(raw, &template); err != nil {
		return runtime.RawExtension{}, fmt.Errorf("decoding pod template of %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	template["$patch"] = "replace"
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encoding revision data of %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	return runtime.RawExtension{Raw: patch}, nil
}

// IsHashCollision reports whether existing, found under the name of the
// revision we wanted to create, holds a different template: the caller must
// then raise status.collisionCount and retry. Equal data means we created it
// before and can use it.
func IsHashCollision(existing, wanted *appsv1.ControllerRevision) bool {
	return !bytes.Equal(existing.Data.Raw, wanted.Data.Raw)
}

// NextCollisionCount returns collisionCount plus one, as a new pointer.
func NextCollisionCount(collisionCount *int32) *int32 {
	n := int32(1)
	if collisionCount != nil {
		n = *collisionCount + 1
	}
	return &n
}

// HistoryPlan says how to bring the DaemonSet's ControllerRevisions in line,
// in the order the caller should apply it: Relabel, then Create or
// BumpRevision of Current, then PodsToRelabel and DuplicatesToDelete; Deletes
// after the pods were synced (upstream's cleanupHistory).
type HistoryPlan struct {
	// Hash is the controller-revision-hash of the current revision; it is
	// Input.Hash for Compute once Current exists.
	Hash string
	// Current is the current revision as it must be: new (Create), an existing
	// one with a raised Revision (BumpRevision), or an existing one as is.
	Current *appsv1.ControllerRevision
	// Create: Current does not exist yet. On AlreadyExists check IsHashCollision.
	Create bool
	// Collision: Create would collide with a listed revision of the same name
	// and other data; raise collisionCount instead of creating.
	Collision bool
	// BumpRevision: Current exists with a lower Revision than every old one
	// (a rollback); update it to Current.Revision.
	BumpRevision bool
	// Relabel holds revisions that lacked the hash label, with it set to their
	// name as upstream does (so no hash collision can arise); update them.
	Relabel []*appsv1.ControllerRevision
	// PodsToRelabel are pods labelled with a duplicate of Current, to be
	// patched to Hash before DuplicatesToDelete are deleted.
	PodsToRelabel []PodRelabel
	// DuplicatesToDelete are other revisions with Current's data.
	DuplicatesToDelete []string
	// Deletes are old revisions beyond revisionHistoryLimit, oldest first,
	// never one whose hash a pod still carries.
	Deletes []string
	// Err is set when the revision data cannot be encoded; nothing else is.
	Err error
}

// PodRelabel is a merge patch of a pod's controller-revision-hash label.
type PodRelabel struct {
	Namespace, Name string
	UID             types.UID
	Hash            string
}

// PlanHistory is upstream's constructHistory, dedupCurHistories and
// cleanupHistory as data. revisions are those the DaemonSet controls, pods
// all pods it controls, in any order.
func PlanHistory(ds *appsv1.DaemonSet, revisions []*appsv1.ControllerRevision, pods []*corev1.Pod) HistoryPlan {
	data, err := RevisionData(ds)
	if err != nil {
		return HistoryPlan{Err: err}
	}
	return PlanHistoryOf(ds, data, revisions, pods)
}

// PlanHistoryOf is PlanHistory given RevisionData(ds), which a caller that
// syncs the same DaemonSet often can keep instead of encoding it each time.
func PlanHistoryOf(ds *appsv1.DaemonSet, data runtime.RawExtension, revisions []*appsv1.ControllerRevision, pods []*corev1.Pod) HistoryPlan {
	var hp HistoryPlan

	revs := slices.Clone(revisions)
	slices.SortFunc(revs, func(a, b *appsv1.ControllerRevision) int { return cmp.Compare(a.Name, b.Name) })
	var current, old []*appsv1.ControllerRevision
	for _, rev := range revs {
		if rev == nil {
			continue
		}
		if _, ok := rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; !ok {
			rev = rev.DeepCopy()
			if rev.Labels == nil {
				rev.Labels = map[string]string{}
			}
			rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = rev.Name
			hp.Relabel = append(hp.Relabel, rev)
		}
		if bytes.Equal(rev.Data.Raw, data.Raw) {
			current = append(current, rev)
		} else {
			old = append(old, rev)
		}
	}

	next := int64(1)
	for _, rev := range old {
		next = max(next, rev.Revision+1)
	}

	if len(current) == 0 {
		hp.Hash = ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
		hp.Current = newRevision(ds, hp.Hash, data, next)
		hp.Create = true
		for _, rev := range old {
			if rev.Name == hp.Current.Name {
				hp.Collision = true
			}
		}
	} else {
		// Keep the highest revision; on a tie the first by name (upstream: list order).
		keep := current[0]
		for _, rev := range current[1:] {
			if rev.Revision > keep.Revision {
				keep = rev
			}
		}
		hp.Hash = keep.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
		dupHashes := map[string]bool{}
		for _, rev := range current {
			if rev != keep {
				hp.DuplicatesToDelete = append(hp.DuplicatesToDelete, rev.Name)
				if h := rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != hp.Hash {
					dupHashes[h] = true
				}
			}
		}
		hp.PodsToRelabel = relabelPods(pods, dupHashes, hp.Hash)
		hp.Current = keep
		if keep.Revision < next {
			hp.Current = keep.DeepCopy()
			hp.Current.Revision = next
			hp.BumpRevision = true
		}
	}

	hp.Deletes = revisionsToDelete(ds, old, pods)
	return hp
}

func newRevision(ds *appsv1.DaemonSet, hash string, data runtime.RawExtension, revision int64) *appsv1.ControllerRevision {
	labels := make(map[string]string, len(ds.Spec.Template.Labels)+1)
	for k, v := range ds.Spec.Template.Labels {
		labels[k] = v
	}
	labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	var annotations map[string]string
	if len(ds.Annotations) > 0 {
		annotations = make(map[string]string, len(ds.Annotations))
		for k, v := range ds.Annotations {
			annotations[k] = v
		}
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ds.Name + "-" + hash,
			Namespace:       ds.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{controllerRef(ds)},
		},
		Data:     data,
		Revision: revision,
	}
}

// relabelPods lists pods carrying one of dupHashes. Upstream patches every pod
// whose hash differs from the kept one, which would also mark pods of older
// revisions as updated; only the duplicates' pods are really on the current
// template.
func relabelPods(pods []*corev1.Pod, dupHashes map[string]bool, hash string) []PodRelabel {
	if len(dupHashes) == 0 {
		return nil // the usual case: no need to read every pod's labels
	}
	var out []PodRelabel
	for _, pod := range pods {
		if pod == nil || !dupHashes[pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			continue
		}
		out = append(out, PodRelabel{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Hash: hash})
	}
	slices.SortFunc(out, func(a, b PodRelabel) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
	return out
}

// revisionsToDelete keeps revisionHistoryLimit old revisions, deleting the
// lowest revisions first, and never one whose hash a pod still carries (any
// pod, terminating or terminal included).
func revisionsToDelete(ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision, pods []*corev1.Pod) []string {
	limit := DefaultRevisionHistoryLimit
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	toKill := len(old) - limit
	if toKill <= 0 {
		return nil
	}
	live := make(map[string]bool)
	for _, pod := range pods {
		if pod == nil {
			continue
		}
		if h := pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
			live[h] = true
		}
	}
	sorted := slices.Clone(old)
	slices.SortFunc(sorted, func(a, b *appsv1.ControllerRevision) int {
		return cmp.Or(cmp.Compare(a.Revision, b.Revision), cmp.Compare(a.Name, b.Name))
	})
	var out []string
	for _, rev := range sorted {
		if toKill <= 0 {
			break
		}
		if live[rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			continue
		}
		out = append(out, rev.Name)
		toKill--
	}
	return out
}
