package plan

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// BindMode says how a new pod is tied to its node.
type BindMode string

const (
	// BindScheduler pins the pod with a required matchFields metadata.name
	// term and lets kube-scheduler bind it (upstream behaviour, the default).
	BindScheduler BindMode = "scheduler"
	// BindDirect sets spec.nodeName, bypassing the scheduler.
	BindDirect BindMode = "direct"
)

// TemplateGenerationLabelKey is the pod label carrying the template generation
// (extensions/v1beta1 DaemonSetTemplateGenerationKey; apps/v1 has no constant).
const TemplateGenerationLabelKey = "pod-template-generation"

// controllerKind is the GroupVersionKind of the owner references we write.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// maxNameLength is the limit of a DNS subdomain, which pod names are.
const maxNameLength = 253

// NewPod builds the pod to create on nodeName: template labels plus
// controller-revision-hash and pod-template-generation, template annotations
// and finalizers, a ControllerRef, DefaultTolerations and the binding for mode.
// pod-template-generation comes from the deprecated.daemonset.template.generation
// annotation the apiserver keeps on every apps/v1 DaemonSet, as upstream; it is
// left out when that annotation is missing or malformed.
func NewPod(ds *appsv1.DaemonSet, hash string, nodeName string, mode BindMode) *corev1.Pod {
	tmpl := ds.Spec.Template.DeepCopy()
	addDefaultTolerations(&tmpl.Spec)

	labels := make(map[string]string, len(tmpl.Labels)+2)
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	if gen, ok := templateGeneration(ds); ok {
		labels[TemplateGenerationLabelKey] = strconv.FormatInt(gen, 10)
	}
	if hash != "" {
		labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    podsPrefix(ds.Name),
			Namespace:       ds.Namespace,
			Labels:          labels,
			Annotations:     tmpl.Annotations,
			Finalizers:      tmpl.Finalizers,
			OwnerReferences: []metav1.OwnerReference{controllerRef(ds)},
		},
		Spec: tmpl.Spec,
	}
	switch mode {
	case BindDirect:
		pod.Spec.NodeName = nodeName
	default:
		pod.Spec.Affinity = pinToNode(pod.Spec.Affinity, nodeName)
	}
	return pod
}

// podsPrefix is "<ds>-" unless that would be too long to be a name prefix.
func podsPrefix(name string) string {
	if len(name)+1 > maxNameLength {
		return name
	}
	return name + "-"
}

func controllerRef(ds *appsv1.DaemonSet) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         controllerKind.GroupVersion().String(),
		Kind:               controllerKind.Kind,
		Name:               ds.Name,
		UID:                ds.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// pinToNode replaces all required node-affinity terms with one matchFields
// metadata.name In [nodeName] term and keeps everything else (preferred terms,
// pod affinity). The template's own terms already matched the node when it was
// found eligible, so dropping them loses nothing. affinity is modified in place.
func pinToNode(affinity *corev1.Affinity, nodeName string) *corev1.Affinity {
	required := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{
			Key:      metav1.ObjectNameField,
			Operator: corev1.NodeSelectorOpIn,
			Values:   []string{nodeName},
		}},
	}}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	if affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = required
		return affinity
	}
	// Keep the existing NodeSelector object, as upstream, only its terms change.
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = required.NodeSelectorTerms
	return affinity
}

// TargetNodeName is the node a pod belongs to: spec.nodeName, or for a pod the
// scheduler has not bound yet the value of its matchFields metadata.name In
// requirement (the first one found; more than one value means no target).
func TargetNodeName(pod *corev1.Pod) (string, bool) {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName, true
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return "", false
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, req := range term.MatchFields {
			if req.Key == metav1.ObjectNameField && req.Operator == corev1.NodeSelectorOpIn {
				if len(req.Values) != 1 {
					return "", false
				}
				return req.Values[0], true
			}
		}
	}
	return "", false
}

// templateGeneration parses the deprecated template-generation annotation
// upstream still uses to recognise pods created before revision hashes.
func templateGeneration(ds *appsv1.DaemonSet) (int64, bool) {
	v, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	if !ok {
		return 0, false
	}
	gen, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return gen, true
}

// updatedMatcher decides whether a pod runs the current template (upstream
// IsPodUpdated): its hash label equals the current hash, or its
// pod-template-generation label equals the DaemonSet's template generation.
type updatedMatcher struct {
	hash   string
	gen    string
	hasGen bool
}

func newUpdatedMatcher(ds *appsv1.DaemonSet, hash string) updatedMatcher {
	gen, ok := templateGeneration(ds)
	return updatedMatcher{hash: hash, gen: strconv.FormatInt(gen, 10), hasGen: ok}
}

func (m updatedMatcher) updated(pod *corev1.Pod) bool {
	return m.updatedLabels(pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey], pod.Labels[TemplateGenerationLabelKey])
}

// updatedLabels is updated for a pod whose hash and template-generation
// labels are hash and gen ("" when absent).
func (m updatedMatcher) updatedLabels(hash, gen string) bool {
	if m.hash != "" && hash == m.hash {
		return true
	}
	return m.hasGen && gen == m.gen
}

func isTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady says whether the pod's Ready condition is True.
func IsPodReady(pod *corev1.Pod) bool {
	c := readyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// PodFacts is what a plan reads of a pod. They depend on the pod object
// alone: a caller that keeps them per object (an informer replaces a pod's
// object when the pod changes and never modifies it) spares each sync the
// cache misses of reading every pod again (Input.Facts).
type PodFacts struct {
	Node        string // TargetNodeName; "" with HasNode false
	HasNode     bool
	Bound       bool // spec.nodeName is set
	Failed      bool // phase Failed
	Succeeded   bool // phase Succeeded
	Terminating bool // deletionTimestamp is set
	Ready       bool // the Ready condition is True
	// ReadySince is the Ready condition's lastTransitionTime (zero when
	// not ready or unset).
	ReadySince time.Time
	Hash       string // the controller-revision-hash label, "" when absent
	Generation string // the pod-template-generation label, "" when absent
}

// ReadPodFacts reads pod's facts.
func ReadPodFacts(pod *corev1.Pod) PodFacts {
	node, hasNode := TargetNodeName(pod)
	f := PodFacts{
		Node:        node,
		HasNode:     hasNode,
		Bound:       pod.Spec.NodeName != "",
		Failed:      pod.Status.Phase == corev1.PodFailed,
		Succeeded:   pod.Status.Phase == corev1.PodSucceeded,
		Terminating: isTerminating(pod),
		Hash:        pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey],
		Generation:  pod.Labels[TemplateGenerationLabelKey],
	}
	if c := readyCondition(pod); c != nil && c.Status == corev1.ConditionTrue {
		f.Ready, f.ReadySince = true, c.LastTransitionTime.Time
	}
	return f
}

// availableIn says whether the pod f was read from is available at now
// (ready for minReadySeconds) and, if it is ready but not yet, how long
// until it will be. A ready pod without a transition time never becomes
// available (as upstream); it is re-checked after minReadySeconds.
func (f *PodFacts) availableIn(minReadySeconds int32, now time.Time) (available bool, wait time.Duration) {
	if !f.Ready {
		return false, 0
	}
	if minReadySeconds <= 0 {
		return true, 0
	}
	d := time.Duration(minReadySeconds) * time.Second
	if f.ReadySince.IsZero() {
		return false, d
	}
	at := f.ReadySince.Add(d)
	if !at.After(now) {
		return true, 0
	}
	return false, at.Sub(now)
}

// podLess orders pods oldest first as upstream's podByCreationTimestampAndPhase
// (bound pods, then creationTimestamp, then name), with namespace and UID as
// final tie-breaks so the order is total.
func podLess(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
		return a.Spec.NodeName != ""
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.UID < b.UID
}
