package oracle

import (
	"encoding/binary"
	"hash/fnv"
	"io"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// Label and annotation keys that mark a pod's revision.
const (
	hashLabel = appsv1.DefaultDaemonSetUniqueLabelKey // "controller-revision-hash"
	// templateGenerationLabel is extensions/v1beta1.DaemonSetTemplateGenerationKey,
	// spelled out to keep the deprecated API group out of the imports.
	templateGenerationLabel = "pod-template-generation"
)

// TemplateHash is the revision hash the DaemonSet controller puts in the
// controller-revision-hash label, computed independently with upstream's
// algorithm: FNV-32a over dump.ForHash of the template value, then, when a
// collision count is set, 8 bytes holding it as a little-endian uint32 (the
// upper 4 bytes stay zero, as upstream writes them), and the decimal sum
// rendered with rand.SafeEncodeString.
//
// The collision count is the one status field the oracle reads. It is not a
// claim about the pods: it is an input that picks the revision's name when two
// templates hash alike. If it were wrong, the oracle's hash would disagree with
// the pods' labels and the oracle would see them as outdated, so trusting it
// can only make the oracle stricter, never make it agree by mistake.
func TemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	_, _ = io.WriteString(h, dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		_, _ = h.Write(b)
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// CurrentHash is the hash of the DaemonSet's current template.
func CurrentHash(ds *appsv1.DaemonSet) string {
	return TemplateHash(&ds.Spec.Template, ds.Status.CollisionCount)
}

// IsCurrent says whether the pod belongs to the DaemonSet's current revision:
// its hash label equals CurrentHash, or its pod-template-generation label
// equals the template generation the apiserver keeps in the
// deprecated.daemonset.template.generation annotation (upstream's
// util.IsPodUpdated; that annotation, not metadata.generation, is what
// upstream compares).
func IsCurrent(ds *appsv1.DaemonSet, pod *corev1.Pod) bool {
	return revisionOf(ds).matches(pod)
}

type revision struct {
	hash       string
	generation string // "" when the annotation is absent or malformed
}

func revisionOf(ds *appsv1.DaemonSet) revision {
	r := revision{hash: CurrentHash(ds)}
	if v, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]; ok {
		if g, err := strconv.ParseInt(v, 10, 64); err == nil {
			r.generation = strconv.FormatInt(g, 10)
		}
	}
	return r
}

func (r revision) matches(pod *corev1.Pod) bool {
	if r.hash != "" && pod.Labels[hashLabel] == r.hash {
		return true
	}
	return r.generation != "" && pod.Labels[templateGenerationLabel] == r.generation
}
