package scenarios

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// simState is what the steps so far have done, as far as it can be known
// before running: pool sizes, live DaemonSets, the controller.
type simState struct {
	pools        poolSizes
	live         map[string]*dsState // "namespace/name"
	controllerUp bool
}

// dsState follows a live DaemonSet through the steps. It is replaced, never
// changed, so that parallel branches can tell what they touched.
type dsState struct {
	ds *appsv1.DaemonSet
	// history holds the templates the DaemonSet has had and the revision
	// number each has now (a rollback renumbers the template it restores).
	history []revision
}

type revision struct {
	template corev1.PodTemplateSpec
	number   int64
}

func newDSState(ds *appsv1.DaemonSet) *dsState {
	return &dsState{ds: ds, history: []revision{{template: ds.Spec.Template, number: 1}}}
}

// with returns the state after the DaemonSet became ds. A template seen
// before gets the next revision number, as the controller renumbers it.
func (d *dsState) with(ds *appsv1.DaemonSet) *dsState {
	out := &dsState{ds: ds, history: slices.Clone(d.history)}
	if apiequality.Semantic.DeepEqual(ds.Spec.Template, d.ds.Spec.Template) {
		return out
	}
	next := out.maxRevision() + 1
	for i := range out.history {
		if apiequality.Semantic.DeepEqual(out.history[i].template, ds.Spec.Template) {
			out.history[i].number = next
			return out
		}
	}
	out.history = append(out.history, revision{template: ds.Spec.Template, number: next})
	return out
}

func (d *dsState) maxRevision() int64 {
	n := int64(0)
	for _, r := range d.history {
		n = max(n, r.number)
	}
	return n
}

func (st *simState) clone() *simState {
	return &simState{pools: maps.Clone(st.pools), live: maps.Clone(st.live), controllerUp: st.controllerUp}
}

func (st *simState) total() int { return st.pools.total() }

func (v *validator) steps() {
	st := &simState{pools: poolSizes{}, live: map[string]*dsState{}, controllerUp: true}
	for _, p := range v.s.Cluster.Pools {
		st.pools[p.Name] = max(0, p.Count)
	}
	v.createdEver = map[string]bool{}
	if len(v.s.Steps) == 0 {
		v.errorf("steps", "at least one step is required")
	}
	st = v.stepList(v.s.Steps, "steps", st)
	if !st.controllerUp {
		v.warnf("steps", "the scenario ends with the controller killed")
	}
	for _, ds := range v.s.DaemonSets() {
		if key := Ref(ds); !v.createdEver[key] && v.dsPath[key] != "" {
			v.warnf(v.dsPath[key], "DaemonSet %s is never created: add it to a create step", key)
		}
	}
}

func (v *validator) stepList(steps []Step, path string, st *simState) *simState {
	for i := range steps {
		st = v.step(&steps[i], indexPath(path, i), st)
	}
	return st
}

var stepKindNames = []string{"nodes", "labels", "taints", "cordon", "uncordon", "evict", "markNotReady", "markReady",
	"create", "delete", "update", "strategy", "rollback", "pods", "controller", "fault", "pause", "waitConverged", "parallel"}

func (v *validator) step(s *Step, path string, st *simState) *simState {
	kinds := s.Kinds()
	switch len(kinds) {
	case 0:
		v.errorf(path, "step has no action: set one of %s", strings.Join(stepKindNames, ", "))
		return st
	case 1:
	default:
		names := make([]string, len(kinds))
		for i, k := range kinds {
			names[i] = string(k)
		}
		v.errorf(path, "step has %d actions (%s): put each in its own step", len(kinds), strings.Join(names, ", "))
		return st
	}
	kind := kinds[0]
	kpath := joinPath(path, string(kind))
	switch {
	case s.Rate < 0:
		v.errorf(joinPath(path, "rate"), "rate must not be negative")
	case s.Duration.Duration < 0:
		v.errorf(joinPath(path, "duration"), "duration must not be negative")
	case s.Rate > 0 && s.Duration.Duration > 0:
		v.errorf(joinPath(path, "rate"), "set rate or duration, not both")
	case (s.Rate > 0 || s.Duration.Duration > 0) && !s.Paced():
		field := "rate"
		if s.Rate == 0 {
			field = "duration"
		}
		v.errorf(joinPath(path, field), "%s applies to node, pod and create steps only, not to %s", field, kind)
	}
	for i, e := range s.Expect {
		epath := indexPath(joinPath(path, "expect"), i)
		if !slices.Contains(ViolationKinds(), e.Violation) {
			if e.Violation == "" {
				v.errorf(joinPath(epath, "violation"), "violation is required")
			} else {
				v.errorf(joinPath(epath, "violation"), "unknown violation %q: want one of %s", e.Violation, violationList())
			}
		}
		if e.DaemonSet != "" {
			v.dsRef(joinPath(epath, "daemonSet"), e.DaemonSet, nil)
		}
	}

	switch kind {
	case KindNodes:
		v.nodes(s.Nodes, kpath, st)
	case KindLabels:
		l := s.Labels
		v.target(&l.NodeTarget, kpath, st, false)
		if len(l.Set) == 0 && len(l.Remove) == 0 {
			v.errorf(kpath, "set or remove at least one label")
		}
		v.labels(joinPath(kpath, "set"), l.Set)
		for i, k := range l.Remove {
			rpath := indexPath(joinPath(kpath, "remove"), i)
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				v.errorf(rpath, "invalid label key %q: %s", k, strings.Join(errs, "; "))
			} else if _, both := l.Set[k]; both {
				v.errorf(rpath, "label %q is both set and removed", k)
			}
		}
	case KindTaints:
		t := s.Taints
		v.target(&t.NodeTarget, kpath, st, false)
		if len(t.Add) == 0 && len(t.Remove) == 0 {
			v.errorf(kpath, "add or remove at least one taint")
		}
		for i, x := range t.Add {
			v.taint(indexPath(joinPath(kpath, "add"), i), x, true)
		}
		for i, x := range t.Remove {
			v.taint(indexPath(joinPath(kpath, "remove"), i), x, false)
		}
	case KindCordon, KindUncordon, KindMarkNotReady, KindMarkReady:
		v.target(s.Target(), kpath, st, false)
	case KindEvict:
		e := s.Evict
		v.target(&e.NodeTarget, kpath, st, false)
		if e.Taint != nil {
			v.taint(joinPath(kpath, "taint"), *e.Taint, true)
			if e.Taint.Effect != "" && e.Taint.Effect != corev1.TaintEffectNoExecute {
				v.errorf(joinPath(kpath, "taint.effect"), "an evict taint has effect NoExecute, not %s (use a taints step for others)", e.Taint.Effect)
			}
		}
	case KindCreate:
		v.create(s.Create, kpath, st)
	case KindDelete:
		d := s.Delete
		if key, ok := v.dsRef(joinPath(kpath, "daemonSet"), d.DaemonSet, st); ok {
			delete(st.live, key)
		}
		switch d.Cascade {
		case "", CascadeBackground, CascadeForeground, CascadeOrphan:
		default:
			v.errorf(joinPath(kpath, "cascade"), "cascade %q: must be background, foreground or orphan", d.Cascade)
		}
	case KindUpdate:
		v.update(s.Update, kpath, st)
	case KindStrategy:
		v.strategyStep(s.Strategy, kpath, st)
	case KindRollback:
		v.rollback(s.Rollback, kpath, st)
	case KindPods:
		v.pods(s.Pods, kpath, st)
	case KindController:
		c := s.Controller
		apath := joinPath(kpath, "action")
		switch c.Action {
		case ControllerKill:
			if !st.controllerUp {
				v.errorf(apath, "the controller is already killed at this point")
			}
			st.controllerUp = false
		case ControllerStart:
			if st.controllerUp {
				v.errorf(apath, "the controller is already running at this point")
			}
			st.controllerUp = true
		case ControllerRestart:
			if !st.controllerUp {
				v.errorf(apath, "the controller is killed at this point: use start")
			}
		case "":
			v.errorf(apath, "action is required: kill, start or restart")
		default:
			v.errorf(apath, "action %q: must be kill, start or restart", c.Action)
		}
		if c.Downtime.Duration < 0 {
			v.errorf(joinPath(kpath, "downtime"), "downtime must not be negative")
		} else if c.Downtime.Duration > 0 && c.Action != ControllerRestart {
			v.errorf(joinPath(kpath, "downtime"), "downtime applies to restart only")
		}
	case KindFault:
		v.fault(s.Fault, s.Index, kpath, st)
	case KindPause:
		if s.Pause.Duration <= 0 {
			v.errorf(kpath, "pause must be a positive duration such as \"30s\"")
		}
	case KindWaitConverged:
		w := s.WaitConverged
		if w.Timeout.Duration <= 0 {
			v.errorf(joinPath(kpath, "timeout"), "timeout must be positive")
		}
		if w.TimeoutPerNode.Duration < 0 {
			v.errorf(joinPath(kpath, "timeoutPerNode"), "timeoutPerNode must not be negative")
		}
		for i, ref := range w.DaemonSets {
			v.dsRef(indexPath(joinPath(kpath, "daemonSets"), i), ref, st)
		}
		expectsStall := slices.ContainsFunc(s.Expect, func(e Expectation) bool { return e.Violation == NotConverged })
		if !st.controllerUp && !expectsStall {
			v.warnf(kpath, "waits while the controller is killed: expect NotConverged or start it first")
		}
	case KindParallel:
		st = v.parallel(s.Parallel, kpath, st)
	}
	return st
}

func violationList() string {
	var names []string
	for _, k := range ViolationKinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// dsRef resolves a DaemonSet reference. With st set, the DaemonSet must be
// live (created and not deleted) at this point.
func (v *validator) dsRef(path, ref string, st *simState) (string, bool) {
	if ref == "" {
		v.errorf(path, "daemonSet is required")
		return "", false
	}
	ds, err := v.s.DaemonSet(ref)
	if err != nil {
		v.errorf(path, "%v", err)
		return "", false
	}
	key := Ref(ds)
	if _, ok := v.byKey[key]; !ok {
		return "", false // defined twice; reported with the workloads
	}
	if st != nil && st.live[key] == nil {
		v.errorf(path, "DaemonSet %s does not exist at this point: create it first", key)
		return key, false
	}
	return key, true
}

// target checks a node selection. join allows counts beyond the pool size.
// Pod steps count pods, perNode of them on each node.
func (v *validator) target(t *NodeTarget, path string, st *simState, join bool, perNode ...int) (size int) {
	size = st.total()
	where := "the cluster"
	if t.Pool != "" {
		n, ok := st.pools[t.Pool]
		if !ok {
			v.errorf(joinPath(path, "pool"), "no node pool %q (have: %s)", t.Pool, strings.Join(slices.Sorted(maps.Keys(st.pools)), ", "))
			return -1
		}
		size, where = n, fmt.Sprintf("pool %s", t.Pool)
	}
	if t.Selector != "" {
		if _, err := labels.Parse(t.Selector); err != nil {
			v.errorf(joinPath(path, "selector"), "invalid label selector %q: %v", t.Selector, err)
		}
	}
	switch {
	case t.Count != 0 && t.Fraction != 0:
		v.errorf(joinPath(path, "count"), "set count or fraction, not both")
	case t.Count < 0:
		v.errorf(joinPath(path, "count"), "count %d must be positive", t.Count)
	case t.Fraction < 0 || t.Fraction > 1:
		v.errorf(joinPath(path, "fraction"), "fraction %g must be in (0, 1]", t.Fraction)
	case t.Count == 0 && t.Fraction == 0:
		v.errorf(path, "set count or fraction")
	case join && t.Count > MaxNodes:
		v.errorf(joinPath(path, "count"), "count %d is more than %d", t.Count, MaxNodes)
	case v.s.sizesUnknown:
	case len(perNode) > 0 && t.Count > size*perNode[0]:
		v.errorf(joinPath(path, "count"), "count %d is more than the %d daemon pods %s can have at this point", t.Count, size*perNode[0], where)
	case len(perNode) == 0 && !join && t.Count > size:
		v.errorf(joinPath(path, "count"), "count %d is more than the %d nodes %s has at this point", t.Count, size, where)
	case size == 0 && join && t.Fraction != 0:
		v.errorf(joinPath(path, "fraction"), "%s has no nodes at this point: a fraction of it is none (set count)", where)
	case size == 0 && !join:
		v.errorf(path, "%s has no nodes at this point", where)
	}
	return size
}

func (v *validator) nodes(n *NodesStep, path string, st *simState) {
	if n.Pool == "" {
		v.errorf(joinPath(path, "pool"), "pool is required")
	}
	if n.Action == NodeJoin && n.Selector != "" {
		v.errorf(joinPath(path, "selector"), "selector does not apply to join: new nodes get the pool's labels")
	}
	size := v.target(&n.NodeTarget, path, st, n.Action == NodeJoin)
	if size >= 0 {
		st.pools.afterNodes(n)
	}
	switch n.Action {
	case NodeJoin, NodeLeave, NodeReplace:
	case "":
		v.errorf(joinPath(path, "action"), "action is required: join, leave or replace")
	default:
		v.errorf(joinPath(path, "action"), "action %q: must be join, leave or replace", n.Action)
	}
}

// Resolve is the number of nodes the step acts on when the pool has size
// nodes: see NodeTarget.Resolve; a join may add more than size.
func (n NodesStep) Resolve(size int) int {
	if n.Action == NodeJoin {
		if n.Fraction > 0 {
			return max(1, int(float64(size)*n.Fraction+0.5))
		}
		return max(0, n.Count)
	}
	return n.NodeTarget.Resolve(size)
}

func (v *validator) create(c *CreateStep, path string, st *simState) {
	refs := c.DaemonSets
	var keys []string
	if len(refs) == 0 {
		for _, ds := range v.s.DaemonSets() {
			if key := Ref(ds); v.byKey[key] != nil && st.live[key] == nil {
				keys = append(keys, key)
			}
		}
		if len(keys) == 0 && len(v.byKey) > 0 {
			v.errorf(path, "every DaemonSet exists already at this point")
		}
	}
	seen := map[string]bool{}
	for i, ref := range refs {
		rpath := indexPath(joinPath(path, "daemonSets"), i)
		key, ok := v.dsRef(rpath, ref, nil)
		switch {
		case !ok:
		case seen[key]:
			v.errorf(rpath, "DaemonSet %s is listed twice", key)
		case st.live[key] != nil:
			v.errorf(rpath, "DaemonSet %s exists already at this point: delete it first", key)
		default:
			keys = append(keys, key)
		}
		seen[key] = true
	}
	for _, key := range keys {
		ds := v.byKey[key]
		st.live[key] = newDSState(ds)
		v.createdEver[key] = true
	}
}

func (v *validator) update(u *UpdateStep, path string, st *simState) {
	key, ok := v.dsRef(joinPath(path, "daemonSet"), u.DaemonSet, st)
	if u.Image == "" && len(u.Env) == 0 && u.Patch == nil {
		v.errorf(path, "set image, env or patch")
		return
	}
	for _, k := range slices.Sorted(maps.Keys(u.Env)) {
		if errs := validation.IsEnvVarName(k); len(errs) > 0 {
			v.errorf(keyPath(joinPath(path, "env"), k), "invalid environment variable name: %s", strings.Join(errs, "; "))
		}
	}
	if !ok {
		return
	}
	cur := st.live[key]
	ds := cur.ds
	errs := len(v.is.errs)
	if u.Image != "" || len(u.Env) > 0 {
		if _, err := container(ds, u.Container); err != nil {
			v.errorf(joinPath(path, "container"), "%v", err)
			return
		}
	}
	after, err := ApplyUpdate(ds, u)
	if err != nil {
		v.errorf(joinPath(path, "patch"), "%v", err)
		return
	}
	if after.Name != ds.Name || after.Namespace != ds.Namespace {
		v.errorf(joinPath(path, "patch"), "the patch must not change the DaemonSet's name or namespace")
	}
	if !equalSelector(after.Spec.Selector, ds.Spec.Selector) {
		v.errorf(joinPath(path, "patch"), "the patch changes spec.selector, which is immutable")
	}
	sub := &validator{s: &Scenario{Source: v.s.Source}}
	sub.daemonSet(after, "")
	for _, e := range sub.is.errs {
		v.errorf(joinPath(path, "patch"), "after the update, %s: %s", e.Path, e.Message)
	}
	if len(v.is.errs) > errs {
		return // the DaemonSet stays as it was
	}
	if apiequality.Semantic.DeepEqual(after.Spec.Template, ds.Spec.Template) {
		v.warnf(path, "the update leaves the pod template as it is: no rollout starts")
	}
	st.live[key] = cur.with(after)
}

func (v *validator) rollback(r *RollbackStep, path string, st *simState) {
	key, ok := v.dsRef(joinPath(path, "daemonSet"), r.DaemonSet, st)
	if r.ToRevision < 0 {
		v.errorf(joinPath(path, "toRevision"), "toRevision must not be negative (0 means the previous revision)")
		return
	}
	if !ok {
		return
	}
	cur := st.live[key]
	hist := slices.SortedFunc(slices.Values(cur.history), func(a, b revision) int { return cmp.Compare(a.number, b.number) })
	var to *revision
	switch {
	case r.ToRevision == 0 && len(hist) < 2:
		v.errorf(path, "DaemonSet %s has no previous revision at this point: update it first", key)
		return
	case r.ToRevision == 0:
		to = &hist[len(hist)-2]
	default:
		for i := range hist {
			if hist[i].number == r.ToRevision {
				to = &hist[i]
			}
		}
		if to == nil {
			var have []string
			for _, h := range hist {
				have = append(have, strconv.FormatInt(h.number, 10))
			}
			v.errorf(joinPath(path, "toRevision"), "DaemonSet %s has no revision %d at this point (revisions: %s; a rollback renumbers the revision it restores)",
				key, r.ToRevision, strings.Join(have, ", "))
			return
		}
	}
	if apiequality.Semantic.DeepEqual(to.template, cur.ds.Spec.Template) {
		v.warnf(path, "revision %d is the current template: the rollback changes nothing", to.number)
		return
	}
	after := cur.ds.DeepCopy()
	after.Spec.Template = *to.template.DeepCopy()
	st.live[key] = cur.with(after)
}

func (v *validator) strategyStep(s *StrategyStep, path string, st *simState) {
	key, ok := v.dsRef(joinPath(path, "daemonSet"), s.DaemonSet, st)
	if s.Type == "" && s.MaxUnavailable == nil && s.MaxSurge == nil && s.MinReadySeconds == nil {
		v.errorf(path, "set type, maxUnavailable, maxSurge or minReadySeconds")
	}
	if s.MinReadySeconds != nil && *s.MinReadySeconds < 0 {
		v.errorf(joinPath(path, "minReadySeconds"), "minReadySeconds must not be negative")
	}
	if !ok {
		return
	}
	cur := st.live[key]
	errs := len(v.is.errs)
	after := ApplyStrategy(cur.ds, s)
	if after.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType && (s.MaxSurge != nil || s.MaxUnavailable != nil) {
		v.errorf(path, "maxUnavailable and maxSurge apply to RollingUpdate, and %s would be OnDelete", key)
	}
	sub := &validator{s: &Scenario{Source: v.s.Source}}
	sub.strategy("", after.Spec.UpdateStrategy)
	for _, e := range sub.is.errs {
		field := e.Path[strings.LastIndex(e.Path, ".")+1:]
		if field == "" {
			field = "type"
		}
		v.errorf(joinPath(path, field), "%s (the strategy would be %s)", e.Message, describeStrategy(after.Spec.UpdateStrategy))
	}
	if len(v.is.errs) == errs {
		st.live[key] = cur.with(after)
	}
}

func describeStrategy(s appsv1.DaemonSetUpdateStrategy) string {
	t := s.Type
	if t == "" {
		t = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if ru := s.RollingUpdate; ru != nil && t == appsv1.RollingUpdateDaemonSetStrategyType {
		var parts []string
		if ru.MaxUnavailable != nil {
			parts = append(parts, "maxUnavailable="+ru.MaxUnavailable.String())
		}
		if ru.MaxSurge != nil {
			parts = append(parts, "maxSurge="+ru.MaxSurge.String())
		}
		if len(parts) > 0 {
			return string(t) + " " + strings.Join(parts, " ")
		}
	}
	return string(t)
}

func (v *validator) pods(p *PodsStep, path string, st *simState) {
	switch p.Action {
	case PodDelete, PodFail, PodUnready:
	case "":
		v.errorf(joinPath(path, "action"), "action is required: delete, fail or unready")
	default:
		v.errorf(joinPath(path, "action"), "action %q: must be delete, fail or unready", p.Action)
	}
	perNode := len(st.live)
	if p.DaemonSet != "" {
		if _, ok := v.dsRef(joinPath(path, "daemonSet"), p.DaemonSet, st); !ok {
			return
		}
		perNode = 1
	} else if perNode == 0 {
		v.errorf(path, "no DaemonSet exists at this point")
		return
	}
	// Counts are of pods: at most one per node and DaemonSet.
	v.target(&p.NodeTarget, path, st, false, perNode)
}

func (v *validator) parallel(branches [][]Step, path string, st *simState) *simState {
	if len(branches) == 0 {
		v.errorf(path, "parallel needs at least one branch (a list of steps)")
		return st
	}
	out := st.clone()
	var ends []poolSizes
	controllerBranch := -1
	createdBy := map[string]int{}
	// faultBranch: which branch holds a fault that another branch's would
	// undo or overwrite: a slowAPI, a writeTimeouts or conflicting writers
	// of a DaemonSet.
	faultBranch := map[string]int{}
	for b, branch := range branches {
		bpath := indexPath(path, b)
		if len(branch) == 0 {
			v.errorf(bpath, "a parallel branch needs at least one step")
			continue
		}
		end := v.stepList(branch, bpath, st.clone())
		for _, what := range v.exclusiveFaults(branch) {
			if prev, dup := faultBranch[what]; dup && prev != b {
				v.errorf(bpath, "branches %d and %d of this parallel group both run %s: each would undo the other's", prev, b, what)
			}
			faultBranch[what] = b
		}
		ends = append(ends, end.pools)
		for key, d := range end.live {
			if st.live[key] == nil {
				if prev, dup := createdBy[key]; dup {
					v.errorf(bpath, "branches %d and %d of this parallel group both create DaemonSet %s", prev, b, key)
				}
				createdBy[key] = b
			}
			if st.live[key] != d {
				out.live[key] = d
			}
		}
		for key := range st.live {
			if end.live[key] == nil {
				delete(out.live, key)
			}
		}
		if end.controllerUp != st.controllerUp || branchTouchesController(branch) {
			if controllerBranch >= 0 {
				v.errorf(bpath, "branches %d and %d of this parallel group both act on the controller", controllerBranch, b)
			}
			controllerBranch = b
			out.controllerUp = end.controllerUp
		}
	}
	out.pools.afterParallel(ends)
	return out
}

// exclusiveFaults names the faults of a branch (nested ones included) that
// no other branch of a parallel group may run at the same time: a slowAPI
// (the proxy's one latency), a writeTimeouts (its one write fault), and
// conflicting writers per DaemonSet.
func (v *validator) exclusiveFaults(steps []Step) []string {
	var out []string
	for _, s := range steps {
		if f := s.Fault; f != nil && f.SlowAPI != nil {
			out = append(out, "a slowAPI fault")
		}
		if f := s.Fault; f != nil && f.WriteTimeouts != nil {
			out = append(out, "a writeTimeouts fault")
		}
		if f := s.Fault; f != nil && f.ConflictingWriters != nil {
			if ds, err := v.s.DaemonSet(f.ConflictingWriters.DaemonSet); err == nil {
				out = append(out, "conflicting writers of DaemonSet "+Ref(ds))
			}
		}
		for _, b := range s.Parallel {
			out = append(out, v.exclusiveFaults(b)...)
		}
	}
	return out
}

func branchTouchesController(steps []Step) bool {
	for _, s := range steps {
		if s.Controller != nil || (s.Fault != nil && s.Fault.KillStorm != nil) {
			return true
		}
		for _, b := range s.Parallel {
			if branchTouchesController(b) {
				return true
			}
		}
	}
	return false
}

// fault checks a fault step: one fault, sensible counts and durations, and
// what it needs at this point (a running controller, a known namespace).
func (v *validator) fault(f *FaultStep, step int, kpath string, st *simState) {
	switch ks := f.Kinds(); len(ks) {
	case 0:
		v.errorf(kpath, "a fault step needs one fault: killStorm, rejectCreates, apiServerRestart, slowAPI, conflictingWriters or writeTimeouts")
		return
	case 1:
	default:
		v.errorf(kpath, "a fault step holds one fault, not %d", len(ks))
		return
	}
	span := func(path string, r DurationRange) {
		switch {
		case r.Min.Duration < 0:
			v.errorf(joinPath(path, "min"), "must not be negative")
		case r.Max.Duration < r.Min.Duration:
			v.errorf(joinPath(path, "max"), "max %v is less than min %v", r.Max.Duration, r.Min.Duration)
		}
	}
	if k := f.KillStorm; k != nil {
		path := joinPath(kpath, "killStorm")
		if k.Kills <= 0 {
			v.errorf(joinPath(path, "kills"), "kills must be positive")
		}
		span(joinPath(path, "uptime"), k.Uptime)
		span(joinPath(path, "downtime"), k.Downtime)
		if !st.controllerUp {
			v.errorf(path, "the controller is killed at this point: start it first")
		}
	}
	if a := f.APIServerRestart; a != nil && a.Downtime.Duration < 0 {
		v.errorf(joinPath(joinPath(kpath, "apiServerRestart"), "downtime"), "downtime must not be negative")
	}
	if a := f.SlowAPI; a != nil {
		path := joinPath(kpath, "slowAPI")
		if a.WriteLatency.Duration < 0 {
			v.errorf(joinPath(path, "writeLatency"), "writeLatency must not be negative")
		}
		if a.ReadLatency.Duration < 0 {
			v.errorf(joinPath(path, "readLatency"), "readLatency must not be negative")
		}
		if a.WriteLatency.Duration == 0 && a.ReadLatency.Duration == 0 {
			v.errorf(path, "set writeLatency or readLatency: with neither the fault delays nothing")
		}
		if a.For.Duration <= 0 {
			v.errorf(joinPath(path, "for"), "for must be a positive duration such as \"30s\"")
		}
	}
	if w := f.WriteTimeouts; w != nil {
		path := joinPath(kpath, "writeTimeouts")
		if w.Every <= 0 {
			v.errorf(joinPath(path, "every"), "every must be a positive count: 1 times out every pod write, 3 one in three")
		}
		if w.LandAfter.Duration < 0 {
			v.errorf(joinPath(path, "landAfter"), "landAfter must not be negative")
		}
		if w.For.Duration <= 0 {
			v.errorf(joinPath(path, "for"), "for must be a positive duration such as \"30s\"")
		}
	}
	if w := f.ConflictingWriters; w != nil {
		v.conflictingWriters(w, step, joinPath(kpath, "conflictingWriters"), st)
	}
	if r := f.RejectCreates; r != nil {
		path := joinPath(kpath, "rejectCreates")
		v.intOrPercent(joinPath(path, "pods"), r.Pods)
		if r.For.Duration <= 0 {
			v.errorf(joinPath(path, "for"), "for must be a positive duration such as \"30s\"")
		}
		if r.MaxCallsPerMinute < 0 {
			v.errorf(joinPath(path, "maxCallsPerMinute"), "maxCallsPerMinute must not be negative")
		}
		if r.Namespace != "" {
			if errs := validation.IsDNS1123Label(r.Namespace); len(errs) > 0 {
				v.errorf(joinPath(path, "namespace"), "namespace %q: %s", r.Namespace, strings.Join(errs, "; "))
			}
		} else if _, err := v.s.FaultNamespace(r); err != nil {
			v.errorf(joinPath(path, "namespace"), "%v", err)
		}
	}
}

// conflictingWriters checks the writers' DaemonSet, container and pace,
// and follows the templates they write, as an update step would.
func (v *validator) conflictingWriters(w *ConflictingWriters, step int, path string, st *simState) {
	positive := func(field string, d Duration) bool {
		if d.Duration <= 0 {
			v.errorf(joinPath(path, field), "%s must be a positive duration such as \"1s\"", field)
			return false
		}
		return true
	}
	if positive("for", w.For) {
		if positive("statusEvery", w.StatusEvery) && w.StatusEvery.Duration >= w.For.Duration {
			v.errorf(joinPath(path, "statusEvery"), "statusEvery %v is not shorter than for %v: no status would be written", w.StatusEvery.Duration, w.For.Duration)
		}
		if positive("applyEvery", w.ApplyEvery) {
			switch {
			case w.ApplyEvery.Duration > MaxApplyEvery:
				v.errorf(joinPath(path, "applyEvery"), "applyEvery %v is more than %v: the oracle would judge the status between two template writes, and blame the fault's bogus status on the controller",
					w.ApplyEvery.Duration, MaxApplyEvery)
			case w.ApplyEvery.Duration >= w.For.Duration:
				v.errorf(joinPath(path, "applyEvery"), "applyEvery %v is not shorter than for %v: the template would be written once", w.ApplyEvery.Duration, w.For.Duration)
			}
		}
	} else {
		positive("statusEvery", w.StatusEvery)
		positive("applyEvery", w.ApplyEvery)
	}
	key, ok := v.dsRef(joinPath(path, "daemonSet"), w.DaemonSet, st)
	if !ok {
		return
	}
	cur := st.live[key]
	if _, err := container(cur.ds, w.Container); err != nil {
		v.errorf(joinPath(path, "container"), "%v", err)
		return
	}
	for _, wr := range w.Writes(step) {
		after, err := WithWriterValue(cur.ds, w, wr.Value)
		if err != nil {
			v.errorf(path, "%v", err)
			return
		}
		cur = cur.with(after)
	}
	st.live[key] = cur
}
