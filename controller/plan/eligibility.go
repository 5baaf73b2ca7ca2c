package plan

import (
	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// DefaultTolerations returns the tolerations every DaemonSet pod gets, in the
// order upstream adds them: daemons must survive node problems and cordons.
// network-unavailable is only tolerated by hostNetwork pods, which do not need
// the pod network.
func DefaultTolerations(podSpec *corev1.PodSpec) []corev1.Toleration {
	ts := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if podSpec != nil && podSpec.HostNetwork {
		ts = append(ts, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return ts
}

// addDefaultTolerations adds DefaultTolerations to spec with upstream's
// AddOrUpdateTolerationInPodSpec semantics: every toleration with the same key,
// effect, operator and value is replaced (dropping e.g. its tolerationSeconds),
// and the toleration is appended if none matched. (Upstream's early return for
// an identical toleration compares a pointer with a value, so it never fires.)
// spec.Tolerations is always a fresh slice, so a shallow copy of a template
// spec never writes into the template.
func addDefaultTolerations(spec *corev1.PodSpec) {
	for _, t := range DefaultTolerations(spec) {
		out := make([]corev1.Toleration, 0, len(spec.Tolerations)+1)
		matched := false
		for i := range spec.Tolerations {
			if t.MatchToleration(&spec.Tolerations[i]) {
				out = append(out, t)
				matched = true
				continue
			}
			out = append(out, spec.Tolerations[i])
		}
		if !matched {
			out = append(out, t)
		}
		spec.Tolerations = out
	}
}

// NodeShouldRunDaemonPod reports whether a pod of ds should be created on node
// (shouldRun) and whether an existing one may stay (shouldContinueRunning).
// Only nodeName, required node affinity (nodeSelector included) and
// NoSchedule/NoExecute taints are checked, against the template plus
// DefaultTolerations; an untolerated NoSchedule taint stops new pods but lets
// running ones stay, an untolerated NoExecute taint evicts them.
func NodeShouldRunDaemonPod(node *corev1.Node, ds *appsv1.DaemonSet) (shouldRun, shouldContinueRunning bool) {
	e := newEligibility(ds)
	return e.check(node)
}

// Eligibility is NodeShouldRunDaemonPod for one DaemonSet, its template
// parsed once: a caller that checks several nodes (or one node's old and
// new states) against the same DaemonSet pays the parsing once.
type Eligibility struct{ e eligibility }

// NewEligibility parses ds's placement rules.
func NewEligibility(ds *appsv1.DaemonSet) Eligibility { return Eligibility{newEligibility(ds)} }

// Check is NodeShouldRunDaemonPod(node, ds) for the ds it was made from.
func (e *Eligibility) Check(node *corev1.Node) (shouldRun, shouldContinueRunning bool) {
	return e.e.check(node)
}

// eligibility holds what NodeShouldRunDaemonPod needs, parsed once per
// DaemonSet so that Compute evaluates each node without allocating.
type eligibility struct {
	nodeName    string
	affinity    requiredAffinity
	tolerations []corev1.Toleration // the template's
	defaults    []corev1.Toleration // DefaultTolerations of the template
}

// Default tolerations, built once: they differ only by hostNetwork.
var (
	defaultTolerations            = DefaultTolerations(&corev1.PodSpec{})
	defaultTolerationsHostNetwork = DefaultTolerations(&corev1.PodSpec{HostNetwork: true})
)

func newEligibility(ds *appsv1.DaemonSet) eligibility {
	spec := &ds.Spec.Template.Spec
	e := eligibility{
		nodeName:    spec.NodeName,
		affinity:    newRequiredAffinity(spec),
		tolerations: spec.Tolerations,
		defaults:    defaultTolerations,
	}
	if spec.HostNetwork {
		e.defaults = defaultTolerationsHostNetwork
	}
	return e
}

// discard is the logger handed to ToleratesTaint; it only logs for the
// comparison operators, which are disabled here.
var discard = logr.Discard()

func (e *eligibility) check(node *corev1.Node) (shouldRun, shouldContinueRunning bool) {
	if node == nil {
		return false, false
	}
	if e.nodeName != "" && e.nodeName != node.Name {
		return false, false
	}
	if !e.affinity.matches(node) {
		return false, false
	}
	untolerated, untoleratedNoExecute := false, false
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if e.tolerates(taint) {
			continue
		}
		untolerated = true
		if taint.Effect == corev1.TaintEffectNoExecute {
			untoleratedNoExecute = true
			break
		}
	}
	if !untolerated {
		return true, true
	}
	return false, !untoleratedNoExecute
}

// tolerates checks the pod's tolerations as addDefaultTolerations makes them
// without building them: merging only replaces a template toleration by an
// equal default (minus tolerationSeconds, which ToleratesTaint ignores), so
// the merged list tolerates exactly what either list tolerates.
func (e *eligibility) tolerates(taint *corev1.Taint) bool {
	return toleratesAny(e.tolerations, taint) || defaultTolerates(e.defaults, taint)
}

// defaultTolerates is toleratesAny for DefaultTolerations, which are all
// Exists with a key and an effect: each tolerates just its key and effect.
// Comparing those in place saves a call per default toleration and node.
func defaultTolerates(defaults []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range defaults {
		if defaults[i].Key == taint.Key && defaults[i].Effect == taint.Effect {
			return true
		}
	}
	return false
}

func toleratesAny(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		// Lt/Gt operators are behind the alpha TaintTolerationComparisonOperators
		// gate, off by default in v1.36: they tolerate nothing.
		if tolerations[i].ToleratesTaint(discard, taint, false) {
			return true
		}
	}
	return false
}
