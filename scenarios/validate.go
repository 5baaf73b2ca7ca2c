package scenarios

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Limits that keep a scenario runnable on one machine.
const (
	MaxNodes       = 100_000
	MaxRepetitions = 1000
)

var placeholderNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// Validate checks a scenario (after SetDefaults) and returns its warnings and,
// when something is wrong, a *ValidationError listing every problem. It
// checks references (pools, DaemonSets), counts against the pool sizes the
// steps before have left, and the order of DaemonSet and controller steps.
func Validate(s *Scenario) ([]Warning, error) {
	v := &validator{s: s, dsPath: map[string]string{}, byKey: map[string]*appsv1.DaemonSet{}}
	v.scenario()
	if len(v.is.errs) > 0 {
		return sortWarnings(v.is.warns), &ValidationError{Errors: sortErrors(v.is.errs)}
	}
	return sortWarnings(v.is.warns), nil
}

type validator struct {
	s      *Scenario
	is     issues
	byKey  map[string]*appsv1.DaemonSet // "namespace/name" -> DaemonSet
	dsPath map[string]string            // "namespace/name" -> field path
	// createdEver holds DaemonSets some step creates.
	createdEver map[string]bool
}

// at finds where path (or the closest field around it) was written.
func (v *validator) at(path string) Position {
	for p := path; ; {
		if pos, ok := v.s.pos[p]; ok {
			return pos
		}
		i := strings.LastIndexAny(p, ".[")
		if i <= 0 {
			break
		}
		p = p[:i]
	}
	return Position{File: v.s.Source}
}

func (v *validator) errorf(path, format string, args ...any) {
	v.is.errorf(v.at(path), path, format, args...)
}

func (v *validator) warnf(path, format string, args ...any) {
	v.is.warnf(v.at(path), path, format, args...)
}

func (v *validator) scenario() {
	s := v.s
	switch {
	case s.APIVersion == "":
		v.errorf("apiVersion", "apiVersion is required: %s", APIVersion)
	case s.APIVersion != APIVersion:
		v.errorf("apiVersion", "unsupported apiVersion %q: want %s", s.APIVersion, APIVersion)
	}
	switch {
	case s.Kind == "":
		v.errorf("kind", "kind is required: %s", Kind)
	case s.Kind != Kind:
		v.errorf("kind", "kind %q: want %s", s.Kind, Kind)
	}
	if s.Metadata.Name == "" {
		v.errorf("metadata.name", "name is required")
	} else if errs := validation.IsDNS1123Subdomain(s.Metadata.Name); len(errs) > 0 {
		v.errorf("metadata.name", "invalid name %q: %s", s.Metadata.Name, strings.Join(errs, "; "))
	}
	if s.Repetitions < 0 || s.Repetitions > MaxRepetitions {
		v.errorf("repetitions", "repetitions %d: must be between 1 and %d", s.Repetitions, MaxRepetitions)
	}
	if s.Hold.Duration < 0 || s.Hold.Duration > MaxHold {
		v.errorf("hold", "hold %s: must be between 0 and %s", s.Hold, MaxHold)
	}
	v.cluster()
	for _, k := range slices.Sorted(maps.Keys(s.Placeholders)) {
		if !placeholderNameRE.MatchString(k) {
			v.errorf(keyPath("placeholders", k), "placeholder name %q must match %s", k, placeholderNameRE)
		}
	}
	v.workloads()
	v.steps()
}

func (v *validator) cluster() {
	c := &v.s.Cluster
	if len(c.Pools) == 0 {
		v.errorf("cluster.pools", "at least one node pool is required")
	}
	names, prefixes := map[string]bool{}, map[string]bool{}
	total := 0
	for i, p := range c.Pools {
		path := indexPath("cluster.pools", i)
		if p.Name == "" {
			v.errorf(joinPath(path, "name"), "name is required")
		} else if errs := validation.IsDNS1123Label(p.Name); len(errs) > 0 {
			v.errorf(joinPath(path, "name"), "invalid pool name %q: %s", p.Name, strings.Join(errs, "; "))
		} else if names[p.Name] {
			v.errorf(joinPath(path, "name"), "duplicate pool name %q", p.Name)
		}
		names[p.Name] = true
		if prefix := p.Prefix(); prefix != "" {
			if errs := validation.IsDNS1123Subdomain(prefix + "-99999"); len(errs) > 0 {
				v.errorf(joinPath(path, "namePrefix"), "invalid node name prefix %q: %s", prefix, strings.Join(errs, "; "))
			} else if prefixes[prefix] {
				v.errorf(joinPath(path, "namePrefix"), "node name prefix %q is used by another pool", prefix)
			}
			prefixes[prefix] = true
		}
		if p.Count < 0 || p.Count > MaxNodes {
			v.errorf(joinPath(path, "count"), "count %d: must be between 0 and %d", p.Count, MaxNodes)
		} else {
			total += p.Count
		}
		v.labels(joinPath(path, "labels"), p.Labels)
		for j, t := range p.Taints {
			v.taint(indexPath(joinPath(path, "taints"), j), t, true)
		}
		for _, name := range slices.Sorted(maps.Keys(p.Capacity)) {
			if q := p.Capacity[name]; q.Sign() < 0 {
				v.errorf(keyPath(joinPath(path, "capacity"), string(name)), "capacity must not be negative")
			}
		}
	}
	if v.s.sizesUnknown {
		// Some count did not decode: the sum would only mislead.
	} else if len(c.Pools) > 0 && total == 0 {
		v.errorf("cluster.pools", "the pools have no nodes: at least one pool needs a count above 0")
	}
	if c.Nodes != 0 && c.Nodes != total && !v.s.sizesUnknown {
		v.errorf("cluster.nodes", "nodes %d does not match the pools, which add up to %d", c.Nodes, total)
	}
	pods := c.Pods
	for field, d := range map[string]Duration{"readyDelay": pods.ReadyDelay, "readyJitter": pods.ReadyJitter, "deleteDelay": pods.DeleteDelay} {
		if d.Duration < 0 {
			v.errorf(joinPath("cluster.pods", field), "%s must not be negative", d)
		}
	}
	for field, res := range map[string][]string{"failImages": pods.FailImages, "neverReadyImages": pods.NeverReadyImages} {
		for i, re := range res {
			if _, err := regexp.Compile(re); err != nil {
				v.errorf(indexPath(joinPath("cluster.pods", field), i), "invalid regular expression: %v", err)
			}
		}
	}
}

func (v *validator) labels(path string, m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			v.errorf(keyPath(path, k), "invalid label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(m[k]); len(errs) > 0 {
			v.errorf(keyPath(path, k), "invalid label value %q: %s", m[k], strings.Join(errs, "; "))
		}
	}
}

// taint checks a taint; needEffect is false for removals, which may match
// any effect.
func (v *validator) taint(path string, t corev1.Taint, needEffect bool) {
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		v.errorf(joinPath(path, "key"), "invalid taint key %q: %s", t.Key, strings.Join(errs, "; "))
	}
	if t.Value != "" {
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			v.errorf(joinPath(path, "value"), "invalid taint value %q: %s", t.Value, strings.Join(errs, "; "))
		}
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	case "":
		if needEffect {
			v.errorf(joinPath(path, "effect"), "effect is required: NoSchedule, PreferNoSchedule or NoExecute")
		}
	default:
		v.errorf(joinPath(path, "effect"), "effect %q: must be NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
	}
}

func (v *validator) workloads() {
	if len(v.s.Workloads) == 0 {
		v.errorf("workloads", "at least one workload is required")
	}
	for i := range v.s.Workloads {
		w := &v.s.Workloads[i]
		path := indexPath("workloads", i)
		switch {
		case w.File == "" && w.Inline == nil && len(w.DaemonSets) == 0:
			v.errorf(path, "set file or inline")
		case w.File != "" && w.Inline != nil:
			v.errorf(path, "set file or inline, not both")
		case w.Inline != nil && len(w.Placeholders) > 0:
			v.errorf(joinPath(path, "placeholders"), "placeholders apply to manifest files only")
		}
		if w.Namespace != "" {
			if errs := validation.IsDNS1123Label(w.Namespace); len(errs) > 0 {
				v.errorf(joinPath(path, "namespace"), "invalid namespace %q: %s", w.Namespace, strings.Join(errs, "; "))
			}
		}
		for k := range w.Placeholders {
			if !placeholderNameRE.MatchString(k) {
				v.errorf(keyPath(joinPath(path, "placeholders"), k), "placeholder name %q must match %s", k, placeholderNameRE)
			}
		}
		for j, ds := range w.DaemonSets {
			dpath := indexPath(joinPath(path, "daemonSets"), j)
			if j < len(w.docPaths) {
				dpath = w.docPaths[j]
			}
			v.daemonSet(ds, dpath)
			key := Ref(ds)
			if prev, dup := v.dsPath[key]; dup {
				v.errorf(joinPath(dpath, "metadata.name"), "DaemonSet %s is defined twice (also at %s); set a workload namespace to run both", key, prev)
				continue
			}
			v.byKey[key] = ds
			v.dsPath[key] = dpath
		}
	}
	// Overlapping selectors in one namespace make DaemonSets fight over pods.
	all := v.s.DaemonSets()
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.Namespace != b.Namespace || a.Name == b.Name || a.Spec.Selector == nil || b.Spec.Selector == nil {
				continue
			}
			sa, errA := metav1.LabelSelectorAsSelector(a.Spec.Selector)
			sb, errB := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if errA == nil && errB == nil && (sa.Matches(labels.Set(b.Spec.Template.Labels)) || sb.Matches(labels.Set(a.Spec.Template.Labels))) {
				v.warnf(joinPath(v.dsPath[Ref(b)], "spec.selector"), "selector overlaps with DaemonSet %s in the same namespace: they will compete for pods", Ref(a))
			}
		}
	}
}

// daemonSet checks what the API server would reject, and what would make a
// scenario meaningless, in a DaemonSet.
func (v *validator) daemonSet(ds *appsv1.DaemonSet, path string) {
	if ds.Name == "" {
		v.errorf(joinPath(path, "metadata.name"), "name is required")
	} else if errs := validation.IsDNS1123Subdomain(ds.Name); len(errs) > 0 {
		v.errorf(joinPath(path, "metadata.name"), "invalid name %q: %s", ds.Name, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(ds.Namespace); ds.Namespace != "" && len(errs) > 0 {
		v.errorf(joinPath(path, "metadata.namespace"), "invalid namespace %q: %s", ds.Namespace, strings.Join(errs, "; "))
	}
	spec := &ds.Spec
	sel := spec.Selector
	switch {
	case sel == nil:
		v.errorf(joinPath(path, "spec.selector"), "selector is required in apps/v1")
	case len(sel.MatchLabels)+len(sel.MatchExpressions) == 0:
		v.errorf(joinPath(path, "spec.selector"), "empty selector is invalid for a DaemonSet")
	default:
		selector, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			v.errorf(joinPath(path, "spec.selector"), "invalid selector: %v", err)
		} else if !selector.Matches(labels.Set(spec.Template.Labels)) {
			v.errorf(joinPath(path, "spec.template.metadata.labels"), "selector %s does not match the template labels", selector)
		}
	}
	v.labels(joinPath(path, "spec.template.metadata.labels"), spec.Template.Labels)
	v.podSpec(&spec.Template.Spec, joinPath(path, "spec.template.spec"))
	if spec.MinReadySeconds < 0 {
		v.errorf(joinPath(path, "spec.minReadySeconds"), "must not be negative")
	}
	if l := spec.RevisionHistoryLimit; l != nil && *l < 0 {
		v.errorf(joinPath(path, "spec.revisionHistoryLimit"), "must not be negative")
	}
	v.strategy(joinPath(path, "spec.updateStrategy"), spec.UpdateStrategy)
}

func (v *validator) podSpec(spec *corev1.PodSpec, path string) {
	if len(spec.Containers) == 0 {
		v.errorf(joinPath(path, "containers"), "at least one container is required")
	}
	names := map[string]bool{}
	for i, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		cpath := indexPath(joinPath(path, "initContainers"), i)
		if i >= len(spec.InitContainers) {
			cpath = indexPath(joinPath(path, "containers"), i-len(spec.InitContainers))
		}
		if c.Name == "" {
			v.errorf(joinPath(cpath, "name"), "name is required")
		} else if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
			v.errorf(joinPath(cpath, "name"), "invalid container name %q: %s", c.Name, strings.Join(errs, "; "))
		} else if names[c.Name] {
			v.errorf(joinPath(cpath, "name"), "duplicate container name %q", c.Name)
		}
		names[c.Name] = true
		if strings.TrimSpace(c.Image) == "" {
			v.errorf(joinPath(cpath, "image"), "image is required")
		}
	}
	if spec.RestartPolicy != "" && spec.RestartPolicy != corev1.RestartPolicyAlways {
		v.errorf(joinPath(path, "restartPolicy"), "restartPolicy %q: a DaemonSet needs Always", spec.RestartPolicy)
	}
	if spec.ActiveDeadlineSeconds != nil {
		v.errorf(joinPath(path, "activeDeadlineSeconds"), "activeDeadlineSeconds is not supported in a DaemonSet")
	}
	v.labels(joinPath(path, "nodeSelector"), spec.NodeSelector)
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		if _, err := nodeaffinity.NewNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			v.errorf(joinPath(path, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"), "invalid node selector: %v", err)
		}
	}
	for i, t := range spec.Tolerations {
		tpath := indexPath(joinPath(path, "tolerations"), i)
		switch t.Operator {
		case corev1.TolerationOpExists:
			if t.Value != "" {
				v.errorf(joinPath(tpath, "value"), "value must be empty when operator is Exists")
			}
		case corev1.TolerationOpEqual, "":
			if t.Key == "" {
				v.errorf(joinPath(tpath, "operator"), "an empty key needs operator Exists")
			}
		default:
			v.errorf(joinPath(tpath, "operator"), "operator %q: must be Exists or Equal", t.Operator)
		}
		if t.Key != "" {
			if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
				v.errorf(joinPath(tpath, "key"), "invalid toleration key %q: %s", t.Key, strings.Join(errs, "; "))
			}
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			v.errorf(joinPath(tpath, "effect"), "effect %q: must be NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
		}
	}
}

// strategy checks an update strategy as the API server would after
// defaulting (maxUnavailable 1, maxSurge 0).
func (v *validator) strategy(path string, st appsv1.DaemonSetUpdateStrategy) {
	switch st.Type {
	case "", appsv1.RollingUpdateDaemonSetStrategyType:
	case appsv1.OnDeleteDaemonSetStrategyType:
		return
	default:
		v.errorf(joinPath(path, "type"), "type %q: must be RollingUpdate or OnDelete", st.Type)
		return
	}
	unavailable, surge := intstr.FromInt32(1), intstr.FromInt32(0)
	if ru := st.RollingUpdate; ru != nil {
		if ru.MaxUnavailable != nil {
			unavailable = *ru.MaxUnavailable
		}
		if ru.MaxSurge != nil {
			surge = *ru.MaxSurge
		}
	}
	uOK := v.intOrPercent(joinPath(path, "rollingUpdate.maxUnavailable"), unavailable)
	sOK := v.intOrPercent(joinPath(path, "rollingUpdate.maxSurge"), surge)
	if !uOK || !sOK {
		return
	}
	hasU, hasS := !isZero(unavailable), !isZero(surge)
	switch {
	case hasU && hasS:
		v.errorf(joinPath(path, "rollingUpdate.maxSurge"), "maxSurge may not be set when maxUnavailable is non-zero (maxUnavailable defaults to 1: set it to 0)")
	case !hasU && !hasS:
		v.errorf(joinPath(path, "rollingUpdate.maxUnavailable"), "maxUnavailable cannot be 0 when maxSurge is 0")
	}
}

func (v *validator) intOrPercent(path string, x intstr.IntOrString) bool {
	if x.Type == intstr.Int {
		if x.IntVal < 0 {
			v.errorf(path, "must not be negative")
			return false
		}
		return true
	}
	var pct int
	if _, err := fmt.Sscanf(x.StrVal, "%d%%", &pct); err != nil || fmt.Sprintf("%d%%", pct) != x.StrVal {
		v.errorf(path, "%q: want an integer or a percentage such as \"10%%\"", x.StrVal)
		return false
	}
	if pct < 0 || pct > 100 {
		v.errorf(path, "%q: must be between 0%% and 100%%", x.StrVal)
		return false
	}
	return true
}

func isZero(x intstr.IntOrString) bool {
	return x.Type == intstr.Int && x.IntVal == 0 || x.Type == intstr.String && x.StrVal == "0%"
}
