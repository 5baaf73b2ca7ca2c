package plan

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// requiredAffinity is a pod template's nodeSelector and required node
// affinity, parsed once. It matches exactly as component-helpers'
// nodeaffinity.RequiredNodeAffinity (what upstream's DaemonSet controller and
// the scheduler use), but without allocating per node: nodeaffinity builds a
// fields.Set for every node it matches, though only metadata.name exists.
type requiredAffinity struct {
	// nodeSelector as a slice: ranging over a map costs more than the
	// lookups in the node's labels.
	nodeSelector []label
	required     bool           // there is a required node affinity: one of terms must match
	terms        []selectorTerm // the valid, non-empty terms, ORed
}

// label is a key and value that a node's labels must contain.
type label struct{ key, value string }

// selectorTerm is one node selector term: its requirements are ANDed.
type selectorTerm struct {
	labels []labels.Requirement
	fields []fieldRequirement
}

// fieldRequirement is a matchFields requirement: In or NotIn one value.
type fieldRequirement struct {
	key, value string
	equal      bool // In; false: NotIn
}

func newRequiredAffinity(spec *corev1.PodSpec) requiredAffinity {
	var a requiredAffinity
	for k, v := range spec.NodeSelector {
		a.nodeSelector = append(a.nodeSelector, label{k, v})
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return a
	}
	a.required = true
	for i := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		term := &spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue // an empty term matches nothing
		}
		// A term that does not parse never matches; nodeaffinity reports
		// its error only when no other term matches, and upstream ignores it.
		if t, ok := newSelectorTerm(term); ok {
			a.terms = append(a.terms, t)
		}
	}
	return a
}

// newSelectorTerm parses a term as nodeaffinity does; ok is false on any
// error it would report.
func newSelectorTerm(term *corev1.NodeSelectorTerm) (t selectorTerm, ok bool) {
	for _, expr := range term.MatchExpressions {
		op, known := labelOperators[expr.Operator]
		if !known {
			return selectorTerm{}, false
		}
		r, err := labels.NewRequirement(expr.Key, op, expr.Values)
		if err != nil {
			return selectorTerm{}, false
		}
		t.labels = append(t.labels, *r)
	}
	for _, expr := range term.MatchFields {
		if len(expr.Values) != 1 || (expr.Operator != corev1.NodeSelectorOpIn && expr.Operator != corev1.NodeSelectorOpNotIn) {
			return selectorTerm{}, false
		}
		t.fields = append(t.fields, fieldRequirement{key: expr.Key, value: expr.Values[0], equal: expr.Operator == corev1.NodeSelectorOpIn})
	}
	return t, true
}

var labelOperators = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

func (a *requiredAffinity) matches(node *corev1.Node) bool {
	for _, l := range a.nodeSelector {
		if got, ok := node.Labels[l.key]; !ok || got != l.value {
			return false
		}
	}
	if !a.required {
		return true
	}
	for i := range a.terms {
		if a.terms[i].matches(node) {
			return true
		}
	}
	return false
}

func (t *selectorTerm) matches(node *corev1.Node) bool {
	set := labels.Set(node.Labels)
	for i := range t.labels {
		if !t.labels[i].Matches(set) {
			return false
		}
	}
	// nodeaffinity skips matchFields for a node without a name: its field
	// set is empty then.
	if node.Name == "" {
		return true
	}
	for _, f := range t.fields {
		if (nodeField(node, f.key) == f.value) != f.equal {
			return false
		}
	}
	return true
}

// nodeField is a node's field as nodeaffinity sees it: metadata.name is the
// only one, any other key reads as empty.
func nodeField(node *corev1.Node, key string) string {
	if key == metav1.ObjectNameField {
		return node.Name
	}
	return ""
}
