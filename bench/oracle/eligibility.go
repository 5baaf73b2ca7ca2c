package oracle

import (
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Eligibility says whether the DaemonSet's pod must run on the node (the
// controller should create one if missing) and whether it may run there (a pod
// already on the node may stay). mustRun implies mayRun.
//
// The rules, written from the upstream semantics and nothing else:
//   - a template spec.nodeName other than the node's name rules the node out;
//   - spec.nodeSelector and required node affinity must match (else neither);
//   - taints with effect NoSchedule or NoExecute must be tolerated by the
//     template's tolerations plus the ones the controller always adds:
//     not-ready and unreachable NoExecute; disk-pressure, memory-pressure,
//     pid-pressure and unschedulable NoSchedule; network-unavailable
//     NoSchedule with hostNetwork. An untolerated NoSchedule taint clears
//     mustRun only; an untolerated NoExecute taint clears both;
//   - nothing else: spec.unschedulable (cordon), resources, ports and
//     PreferNoSchedule taints are ignored, as upstream does.
func Eligibility(ds *appsv1.DaemonSet, node *corev1.Node) (mustRun, mayRun bool) {
	d := newPlacement(&ds.Spec.Template.Spec).decide(node)
	return d.mustRun, d.mayRun
}

// placement is the part of a pod template that decides eligibility,
// prepared once per DaemonSet version.
type placement struct {
	nodeName     string
	nodeSelector map[string]string
	required     *corev1.NodeSelector
	tolerations  []corev1.Toleration
}

type decision struct {
	mustRun, mayRun bool
	reason          string // why not mustRun; empty when mustRun
}

func newPlacement(spec *corev1.PodSpec) *placement {
	p := &placement{
		nodeName:     spec.NodeName,
		nodeSelector: spec.NodeSelector,
		tolerations:  append(slices.Clone(spec.Tolerations), autoTolerations(spec.HostNetwork)...),
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		p.required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return p
}

// autoTolerations are the tolerations the DaemonSet controller adds to every
// pod it creates, so that node problems do not evict or block daemons. Note
// what is missing: node.kubernetes.io/not-ready with effect NoSchedule (put on
// new nodes by TaintNodesByCondition) is not tolerated.
func autoTolerations(hostNetwork bool) []corev1.Toleration {
	ts := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		ts = append(ts, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return ts
}

func (p *placement) decide(node *corev1.Node) decision {
	if p.nodeName != "" && p.nodeName != node.Name {
		return decision{reason: "template nodeName is " + p.nodeName}
	}
	for k, v := range p.nodeSelector {
		if got, ok := node.Labels[k]; !ok || got != v {
			return decision{reason: fmt.Sprintf("nodeSelector %s=%s does not match", k, v)}
		}
	}
	if p.required != nil && !matchNodeSelector(p.required, node) {
		return decision{reason: "required node affinity does not match"}
	}
	d := decision{mustRun: true, mayRun: true}
	for _, taint := range node.Spec.Taints {
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if slices.ContainsFunc(p.tolerations, func(t corev1.Toleration) bool { return tolerates(t, taint) }) {
			continue
		}
		d.mustRun = false
		d.reason = "untolerated taint " + taintString(taint)
		if taint.Effect == corev1.TaintEffectNoExecute {
			d.mayRun = false
			break
		}
	}
	return d
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// tolerates: an empty effect matches every effect, an empty key every key
// (meant for Exists), Exists every value, Equal (or empty) the same value.
// Lt and Gt never match: they sit behind the alpha gate
// TaintTolerationComparisonOperators, off by default.
func tolerates(t corev1.Toleration, taint corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", corev1.TolerationOpEqual:
		return t.Value == taint.Value
	case corev1.TolerationOpExists:
		return true
	default:
		return false
	}
}

// matchNodeSelector ORs the terms. A term without requirements, or with a
// malformed one, matches nothing.
func matchNodeSelector(ns *corev1.NodeSelector, node *corev1.Node) bool {
	for i := range ns.NodeSelectorTerms {
		if matchTerm(&ns.NodeSelectorTerms[i], node) {
			return true
		}
	}
	return false
}

func matchTerm(term *corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, r := range term.MatchExpressions {
		if !matchLabelRequirement(r, node.Labels) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		if !matchFieldRequirement(r, node) {
			return false
		}
	}
	return true
}

func matchLabelRequirement(r corev1.NodeSelectorRequirement, labels map[string]string) bool {
	val, has := labels[r.Key]
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return len(r.Values) > 0 && has && slices.Contains(r.Values, val)
	case corev1.NodeSelectorOpNotIn:
		return len(r.Values) > 0 && (!has || !slices.Contains(r.Values, val))
	case corev1.NodeSelectorOpExists:
		return len(r.Values) == 0 && has
	case corev1.NodeSelectorOpDoesNotExist:
		return len(r.Values) == 0 && !has
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 || !has {
			return false
		}
		want, err := strconv.ParseInt(r.Values[0], 10, 64)
		if err != nil {
			return false
		}
		got, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return got > want
		}
		return got < want
	default:
		return false
	}
}

// matchFieldRequirement supports what the API allows: In and NotIn with one
// value. The only node field is metadata.name; other keys read as empty.
func matchFieldRequirement(r corev1.NodeSelectorRequirement, node *corev1.Node) bool {
	if len(r.Values) != 1 || (r.Operator != corev1.NodeSelectorOpIn && r.Operator != corev1.NodeSelectorOpNotIn) {
		return false
	}
	if node.Name == "" {
		return true // upstream skips field checks for nameless nodes
	}
	var val string
	if r.Key == "metadata.name" {
		val = node.Name
	}
	return (val == r.Values[0]) == (r.Operator == corev1.NodeSelectorOpIn)
}
