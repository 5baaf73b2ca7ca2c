package bench

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// steps plays a list of steps in order. Expectations declared by a step stay
// open until the next waitConverged of the same list ends.
func (s *runState) playSteps(ctx context.Context, list []scenarios.Step, path string) error {
	for i := range list {
		st := &list[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.step(ctx, st); err != nil {
			return fmt.Errorf("%s (%s): %w", stepName(st), st.Path, err)
		}
	}
	return nil
}

func stepName(st *scenarios.Step) string {
	if st.Name != "" {
		return st.Name
	}
	return string(st.Kind())
}

func (s *runState) step(ctx context.Context, st *scenarios.Step) error {
	name := stepName(st)
	s.progress("step %s", name)
	start := s.r.clock.Now()
	s.openExpectations(st, start)
	switch st.Kind() {
	case scenarios.KindWaitConverged:
		err := s.waitConverged(ctx, st.WaitConverged, name)
		s.closeExpectations(s.r.clock.Now())
		return err
	case scenarios.KindPause:
		sleep(ctx, st.Pause.Duration)
		return ctx.Err()
	case scenarios.KindParallel:
		g, gctx := errgroup.WithContext(ctx)
		for i, branch := range st.Parallel {
			g.Go(func() error { return s.playSteps(gctx, branch, fmt.Sprintf("%s.parallel[%d]", st.Path, i)) })
		}
		return g.Wait()
	}
	vis, err := s.act(ctx, st)
	ack := s.r.clock.Now()
	if err != nil {
		return err
	}
	s.mu.Lock()
	skipped := s.skipped[st]
	s.mu.Unlock()
	if len(skipped) > 0 {
		sort.Strings(skipped)
		s.progress("step %s: %d chosen nodes left before the step reached them (%s)", name, len(skipped), strings.Join(skipped, ", "))
	}
	s.addBarriers(name, string(st.Kind()), ack, vis, skipped)
	return nil
}

// leftMeanwhile reports whether err says that the node is gone because a
// concurrent leave or replace step deleted it after this step chose it, and
// if so records the node as skipped. Node churn during other steps is what
// parallel branches are for, so that is not an error; a node that vanished
// for any other reason is.
func (s *runState) leftMeanwhile(st *scenarios.Step, node string, err error) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ps := range s.pools {
		if ps.nodes[node] {
			return false
		}
	}
	if s.skipped == nil {
		s.skipped = map[*scenarios.Step][]string{}
	}
	s.skipped[st] = append(s.skipped[st], node)
	return true
}

// visibility says, per DaemonSet ref, when the step's write is visible to the
// oracle; "" applies to every DaemonSet.
type visibility map[string]oracle.Visibility

// act performs the step's API writes and returns when they are acknowledged.
func (s *runState) act(ctx context.Context, st *scenarios.Step) (visibility, error) {
	switch st.Kind() {
	case scenarios.KindNodes:
		return s.nodes(ctx, st)
	case scenarios.KindLabels:
		p := kwok.NodePatch{Labels: map[string]*string{}}
		for k, v := range st.Labels.Set {
			p.Labels[k] = &v
		}
		for _, k := range st.Labels.Remove {
			p.Labels[k] = nil
		}
		return s.patchNodes(ctx, st, p)
	case scenarios.KindTaints:
		return s.patchNodes(ctx, st, kwok.NodePatch{SetTaints: st.Taints.Add, RemoveTaints: st.Taints.Remove})
	case scenarios.KindCordon, scenarios.KindUncordon:
		cordon := st.Kind() == scenarios.KindCordon
		return s.patchNodes(ctx, st, kwok.NodePatch{Unschedulable: &cordon})
	case scenarios.KindEvict:
		taint := corev1.Taint{Key: scenarios.DefaultEvictTaintKey, Effect: corev1.TaintEffectNoExecute}
		if st.Evict.Taint != nil {
			taint = *st.Evict.Taint
		}
		return s.patchNodes(ctx, st, kwok.NodePatch{SetTaints: []corev1.Taint{taint}})
	case scenarios.KindMarkNotReady, scenarios.KindMarkReady:
		ready := st.Kind() == scenarios.KindMarkReady
		names := s.pickNodes(st, st.Target())
		err := s.paced(ctx, st, len(names), func(ctx context.Context, i int) error {
			if err := kwok.SetNodeReady(ctx, s.r.client, names[i], ready); err != nil && !s.leftMeanwhile(st, names[i], err) {
				return err
			}
			return nil
		})
		return visibility{"": nodeConditionSeen(names, ready)}, err
	case scenarios.KindCreate:
		return s.create(ctx, st)
	case scenarios.KindDelete:
		return s.deleteDS(ctx, st.Delete)
	case scenarios.KindUpdate:
		return s.writeDS(ctx, st.Update.DaemonSet, true, func(ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
			return scenarios.ApplyUpdate(ds, st.Update)
		})
	case scenarios.KindStrategy:
		return s.writeDS(ctx, st.Strategy.DaemonSet, false, func(ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
			return scenarios.ApplyStrategy(ds, st.Strategy), nil
		})
	case scenarios.KindRollback:
		return s.rollback(ctx, st.Rollback)
	case scenarios.KindPods:
		return s.pods(ctx, st)
	case scenarios.KindController:
		return nil, s.controller(ctx, st.Controller)
	}
	return nil, fmt.Errorf("step kind %q is not supported by the runner", st.Kind())
}

// paced runs fn for i in [0, n) at the step's rate or spread over its
// duration; without either, with bounded parallelism at once.
func (s *runState) paced(ctx context.Context, st *scenarios.Step, n int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(kwok.DefaultParallelism)
	start := s.r.clock.Now()
	for i := range n {
		if off := st.Offset(i, n); off > 0 {
			if d := off - s.r.clock.Since(start); d > 0 {
				sleep(gctx, d)
			}
		}
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// candidates lists the live nodes the target may pick from, sorted.
func (s *runState) candidates(t *scenarios.NodeTarget) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sel labels.Selector = labels.Everything()
	if t.Selector != "" {
		if parsed, err := labels.Parse(t.Selector); err == nil {
			sel = parsed
		}
	}
	w := s.checker.World()
	var out []string
	for name, ps := range s.pools {
		if t.Pool != "" && t.Pool != name {
			continue
		}
		for n := range ps.nodes {
			if node, ok := w.Node(n); ok && !sel.Matches(labels.Set(node.Labels)) {
				continue
			}
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// pickNodes chooses the step's nodes deterministically among those the step
// would actually change (uncordon picks cordoned nodes, markReady NotReady
// ones), as scenarios/README.md specifies.
func (s *runState) pickNodes(st *scenarios.Step, t *scenarios.NodeTarget) []string {
	cands := s.candidates(t)
	if keep := changeFilter(st.Kind()); keep != nil {
		s.mu.Lock()
		w := s.checker.World()
		filtered := cands[:0:0]
		for _, n := range cands {
			if node, ok := w.Node(n); ok && keep(node) {
				filtered = append(filtered, n)
			}
		}
		s.mu.Unlock()
		cands = filtered
	}
	return scenarios.Select(s.sc.Seed, st.Index, cands, t.Resolve(len(cands)))
}

func changeFilter(kind scenarios.StepKind) func(*corev1.Node) bool {
	switch kind {
	case scenarios.KindCordon:
		return func(n *corev1.Node) bool { return !n.Spec.Unschedulable }
	case scenarios.KindUncordon:
		return func(n *corev1.Node) bool { return n.Spec.Unschedulable }
	case scenarios.KindMarkNotReady:
		return func(n *corev1.Node) bool { return kwok.NodeReady(n) }
	case scenarios.KindMarkReady:
		return func(n *corev1.Node) bool { return !kwok.NodeReady(n) }
	}
	return nil
}

func (s *runState) patchNodes(ctx context.Context, st *scenarios.Step, p kwok.NodePatch) (visibility, error) {
	names := s.pickNodes(st, st.Target())
	written := make([]*corev1.Node, len(names))
	err := s.paced(ctx, st, len(names), func(ctx context.Context, i int) error {
		nodes, err := kwok.PatchNodes(ctx, s.r.client, names[i:i+1], p, 1)
		if err == nil {
			written[i] = nodes[0]
		} else if s.leftMeanwhile(st, names[i], err) {
			return nil
		}
		return err
	})
	return visibility{"": nodesSeenAt(written)}, err
}

// nodesSeenAt: the oracle's view holds each node at the resource version the
// write returned or later, or no longer holds it. Resource versions are
// opaque in general; on etcd they are increasing integers, which is what
// this harness runs on.
func nodesSeenAt(nodes []*corev1.Node) oracle.Visibility {
	want := map[string]uint64{}
	for _, n := range nodes {
		if n != nil {
			want[n.Name] = parseRV(n.ResourceVersion)
		}
	}
	return func(w *oracle.World) bool {
		for name, rv := range want {
			if node, ok := w.Node(name); ok && parseRV(node.ResourceVersion) < rv {
				return false
			}
		}
		return true
	}
}

func parseRV(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}

// podsChanged: every named pod is gone, terminating, or (for a fail) Failed
// in the oracle's view.
func podsChanged(keys []string, failed bool) oracle.Visibility {
	return func(w *oracle.World) bool {
		for _, k := range keys {
			p, ok := w.Pod(k)
			if !ok || p.DeletionTimestamp != nil || failed && p.Status.Phase == corev1.PodFailed {
				continue
			}
			return false
		}
		return true
	}
}

func nodeConditionSeen(names []string, ready bool) oracle.Visibility {
	return func(w *oracle.World) bool {
		for _, n := range names {
			node, ok := w.Node(n)
			if !ok {
				continue
			}
			if kwok.NodeReady(node) != ready {
				return false
			}
		}
		return true
	}
}

func (s *runState) nodes(ctx context.Context, st *scenarios.Step) (visibility, error) {
	ns := st.Nodes
	switch ns.Action {
	case scenarios.NodeJoin:
		s.mu.Lock()
		ps := s.pools[ns.Pool]
		if ps == nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("no pool %q", ns.Pool)
		}
		count := ns.Resolve(len(ps.nodes))
		kp := s.kwokPool(ps.pool, ps.next, count)
		ps.next += count
		names := kp.NodeNames()
		for _, n := range names {
			ps.nodes[n] = true
		}
		s.mu.Unlock()
		err := s.paced(ctx, st, len(names), func(ctx context.Context, i int) error {
			one := kp
			one.Start, one.Count = kp.Start+i, 1
			return kwok.CreateNodes(ctx, s.r.client, one, 1)
		})
		return visibility{"": oracle.NodesSettled(names...)}, err
	case scenarios.NodeLeave, scenarios.NodeReplace:
		names := s.pickNodes(st, &ns.NodeTarget)
		s.mu.Lock()
		byPool := map[string]int{}
		for name, ps := range s.pools {
			for _, n := range names {
				if ps.nodes[n] {
					delete(ps.nodes, n)
					byPool[name]++
				}
			}
		}
		s.mu.Unlock()
		err := s.paced(ctx, st, len(names), func(ctx context.Context, i int) error {
			return kwok.DeleteNodes(ctx, s.r.client, names[i:i+1], 1)
		})
		if err != nil || ns.Action == scenarios.NodeLeave {
			return visibility{"": oracle.NodesAbsent(names...)}, err
		}
		var added []string
		for pool, n := range byPool {
			s.mu.Lock()
			ps := s.pools[pool]
			kp := s.kwokPool(ps.pool, ps.next, n)
			ps.next += n
			for _, name := range kp.NodeNames() {
				ps.nodes[name] = true
			}
			s.mu.Unlock()
			if err := kwok.CreateNodes(ctx, s.r.client, kp, 0); err != nil {
				return nil, err
			}
			added = append(added, kp.NodeNames()...)
		}
		return visibility{"": oracle.AllOf(oracle.NodesAbsent(names...), oracle.NodesSettled(added...))}, nil
	}
	return nil, fmt.Errorf("node action %q is not supported", ns.Action)
}

func (s *runState) create(ctx context.Context, st *scenarios.Step) (visibility, error) {
	var targets []*appsv1.DaemonSet
	if len(st.Create.DaemonSets) == 0 {
		targets = s.sc.DaemonSets()
	} else {
		for _, ref := range st.Create.DaemonSets {
			ds, err := s.sc.DaemonSet(ref)
			if err != nil {
				return nil, err
			}
			targets = append(targets, ds)
		}
	}
	vis := visibility{}
	var mu sync.Mutex
	err := s.paced(ctx, st, len(targets), func(ctx context.Context, i int) error {
		ds := targets[i].DeepCopy()
		ds.ResourceVersion = ""
		created, err := s.r.client.AppsV1().DaemonSets(ds.Namespace).Create(ctx, ds, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating DaemonSet %s: %w", scenarios.Ref(ds), err)
		}
		ref := scenarios.Ref(ds)
		mu.Lock()
		vis[ref] = oracle.GenerationObserved(ref, created.Generation)
		mu.Unlock()
		s.mu.Lock()
		s.dss[ref] = true
		s.mu.Unlock()
		return nil
	})
	return vis, err
}

func (s *runState) deleteDS(ctx context.Context, d *scenarios.DeleteStep) (visibility, error) {
	ds, err := s.sc.DaemonSet(d.DaemonSet)
	if err != nil {
		return nil, err
	}
	prop := metav1.DeletePropagationBackground
	switch d.Cascade {
	case scenarios.CascadeForeground:
		prop = metav1.DeletePropagationForeground
	case scenarios.CascadeOrphan:
		prop = metav1.DeletePropagationOrphan
	}
	err = s.r.client.AppsV1().DaemonSets(ds.Namespace).Delete(ctx, ds.Name, metav1.DeleteOptions{PropagationPolicy: &prop})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("deleting DaemonSet %s: %w", scenarios.Ref(ds), err)
	}
	ref := scenarios.Ref(ds)
	s.mu.Lock()
	delete(s.dss, ref)
	s.mu.Unlock()
	if d.Cascade == scenarios.CascadeOrphan {
		// Orphaned pods stay; there is nothing to converge on but absence.
		return visibility{ref: oracle.DaemonSetAbsent(ref), "-orphan": nil}, nil
	}
	return visibility{ref: oracle.DaemonSetAbsent(ref)}, nil
}

// writeDS reads the DaemonSet, changes it with fn and writes it back,
// retrying on conflict.
func (s *runState) writeDS(ctx context.Context, ref string, rollout bool, fn func(*appsv1.DaemonSet) (*appsv1.DaemonSet, error)) (visibility, error) {
	want, err := s.sc.DaemonSet(ref)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		cur, err := s.r.client.AppsV1().DaemonSets(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("getting DaemonSet %s: %w", scenarios.Ref(want), err)
		}
		next, err := fn(cur.DeepCopy())
		if err != nil {
			return nil, err
		}
		updated, err := s.r.client.AppsV1().DaemonSets(want.Namespace).Update(ctx, next, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && attempt < 10 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("updating DaemonSet %s: %w", scenarios.Ref(want), err)
		}
		key := scenarios.Ref(want)
		if rollout {
			s.mu.Lock()
			s.rollouts = append(s.rollouts, rolloutStep{ds: key, start: s.r.clock.Now()})
			s.mu.Unlock()
		}
		return visibility{key: oracle.GenerationObserved(key, updated.Generation)}, nil
	}
}

// rollback does what `kubectl rollout undo` does: it writes the template of
// an earlier ControllerRevision back into the DaemonSet.
func (s *runState) rollback(ctx context.Context, rb *scenarios.RollbackStep) (visibility, error) {
	want, err := s.sc.DaemonSet(rb.DaemonSet)
	if err != nil {
		return nil, err
	}
	return s.writeDS(ctx, rb.DaemonSet, true, func(ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
		list, err := s.r.client.AppsV1().ControllerRevisions(want.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing ControllerRevisions: %w", err)
		}
		var history []*appsv1.ControllerRevision
		for i := range list.Items {
			if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == ds.UID {
				history = append(history, &list.Items[i])
			}
		}
		rev, err := scenarios.RollbackRevision(history, rb.ToRevision)
		if err != nil {
			return nil, err
		}
		return scenarios.ApplyRevision(ds, rev)
	})
}

func (s *runState) pods(ctx context.Context, st *scenarios.Step) (visibility, error) {
	ps := st.Pods
	nodes := map[string]bool{}
	for _, n := range s.candidates(&ps.NodeTarget) {
		nodes[n] = true
	}
	var dss []*appsv1.DaemonSet
	if ps.DaemonSet != "" {
		ds, err := s.sc.DaemonSet(ps.DaemonSet)
		if err != nil {
			return nil, err
		}
		dss = append(dss, ds)
	} else {
		dss = s.sc.DaemonSets()
	}
	// Pods are chosen by <node>/<namespace>/<daemonset>, not by their random
	// names, so that the same seed picks the same nodes every time.
	type podRef struct{ ns, name string }
	byKey := map[string][]podRef{}
	var cands []string
	for _, ds := range dss {
		sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		if err != nil {
			return nil, err
		}
		list, err := s.r.client.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil || !nodes[p.Spec.NodeName] {
				continue
			}
			// Only a Running pod can fail: kwok may already be playing
			// a Pending pod's start, and would make it Running again.
			if ps.Action == scenarios.PodFail && p.Status.Phase != corev1.PodRunning {
				continue
			}
			key := p.Spec.NodeName + "/" + ds.Namespace + "/" + ds.Name
			if _, ok := byKey[key]; !ok {
				cands = append(cands, key)
			}
			byKey[key] = append(byKey[key], podRef{p.Namespace, p.Name})
		}
	}
	picked := scenarios.Select(s.sc.Seed, st.Index, cands, ps.Resolve(len(cands)))
	var targets []podRef
	var keys []string
	for _, k := range picked {
		for _, p := range byKey[k] {
			targets = append(targets, p)
			keys = append(keys, p.ns+"/"+p.name)
		}
	}
	err := s.paced(ctx, st, len(targets), func(ctx context.Context, i int) error {
		p := targets[i]
		if ps.Action == scenarios.PodFail {
			patch := []byte(`{"status":{"phase":"Failed","reason":"DsbenchFailed"}}`)
			_, err := s.r.client.CoreV1().Pods(p.ns).Patch(ctx, p.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("failing pod %s/%s: %w", p.ns, p.name, err)
			}
			return nil
		}
		s.mu.Lock()
		s.checker.RequestDeletion(p.ns + "/" + p.name)
		s.mu.Unlock()
		err := s.r.client.CoreV1().Pods(p.ns).Delete(ctx, p.name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s/%s: %w", p.ns, p.name, err)
		}
		return nil
	})
	return visibility{"": podsChanged(keys, ps.Action == scenarios.PodFail)}, err
}

func (s *runState) controller(ctx context.Context, c *scenarios.ControllerStep) error {
	stopped := func() {
		s.mu.Lock()
		s.checker.ControllerStopped()
		s.mu.Unlock()
	}
	started := func(err error) error {
		s.mu.Lock()
		s.checker.ControllerStarted(s.r.clock.Now())
		s.mu.Unlock()
		return err
	}
	switch c.Action {
	case scenarios.ControllerKill:
		stopped()
		s.ctrl.Kill()
		return nil
	case scenarios.ControllerStart:
		return started(s.ctrl.Restart(ctx))
	case scenarios.ControllerRestart:
		stopped()
		s.ctrl.Kill()
		sleep(ctx, c.Downtime.Duration)
		return started(s.ctrl.Restart(ctx))
	}
	return fmt.Errorf("controller action %q is not supported", c.Action)
}

// addBarriers registers, for each DaemonSet that exists or was just touched,
// a barrier that completes when the oracle sees it converged after the
// step's write became visible.
func (s *runState) addBarriers(name, kind string, ack time.Time, vis visibility, skipped []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := stepRecord{name: name, kind: kind, start: ack, skipped: skipped}
	idx := len(s.steps)
	keys := map[string]bool{}
	for ref := range s.dss {
		keys[ref] = true
	}
	for ref := range vis {
		if ref != "" && ref != "-orphan" {
			keys[ref] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, key := range sorted {
		v := vis[key]
		if all := vis[""]; all != nil {
			if v == nil {
				v = all
			} else {
				v = oracle.AllOf(v, all)
			}
		}
		id := s.checker.AddBarrier(oracle.Barrier{Name: name, DaemonSet: key, Start: ack, Visible: v, Hold: s.sc.BarrierHold()})
		rec.barriers = append(rec.barriers, id)
		s.pending = append(s.pending, pendingBarrier{id: id, step: idx, ds: key})
	}
	s.steps = append(s.steps, rec)
}

// waitConverged blocks until every pending barrier has converged, or the
// timeout passes; a timeout is a NotConverged violation, not an error, so
// that the rest of the scenario still runs.
func (s *runState) waitConverged(ctx context.Context, w *scenarios.WaitStep, name string) error {
	timeout := w.EffectiveTimeout(s.sc.DefaultNodes())
	if timeout <= 0 {
		timeout = scenarios.DefaultWaitTimeout
	}
	deadline := s.r.clock.Now().Add(timeout)
	for {
		s.mu.Lock()
		remaining := s.pending[:0:0]
		for _, pb := range s.pending {
			if len(w.DaemonSets) > 0 && !containsRef(s.sc, w.DaemonSets, pb.ds) {
				remaining = append(remaining, pb)
				continue
			}
			c, ok := s.checker.ConvergedAt(pb.id)
			if !ok {
				remaining = append(remaining, pb)
				continue
			}
			s.steps[pb.step].addConvergence(c)
		}
		s.pending = remaining
		waiting := 0
		for _, pb := range remaining {
			if len(w.DaemonSets) == 0 || containsRef(s.sc, w.DaemonSets, pb.ds) {
				waiting++
			}
		}
		s.mu.Unlock()
		if waiting == 0 {
			return nil
		}
		if s.r.clock.Now().After(deadline) {
			s.mu.Lock()
			var why []string
			others := s.pending[:0:0]
			for _, pb := range s.pending {
				if len(w.DaemonSets) > 0 && !containsRef(s.sc, w.DaemonSets, pb.ds) {
					others = append(others, pb) // a later barrier may still wait for it
					continue
				}
				s.steps[pb.step].timedOut = true
				s.steps[pb.step].timeoutExpected = s.expected(scenarios.NotConverged, pb.ds, deadline)
				why = append(why, fmt.Sprintf("step %q: %s", s.steps[pb.step].name, s.checker.Explain(pb.id)))
			}
			s.pending = others
			s.mu.Unlock()
			s.recordNotConverged(name, timeout, deadline, why)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// addConvergence folds one of the step's barriers into it: a step converges when
// its last DaemonSet does.
func (rec *stepRecord) addConvergence(c oracle.Convergence) {
	if c.At.After(rec.at) {
		rec.at = c.At
		rec.event = &reports.Event{Time: c.Event.Time, Reason: string(c.Event.Kind), Object: c.Event.Object}
	}
}

func containsRef(sc *scenarios.Scenario, refs []string, key string) bool {
	for _, r := range refs {
		if ds, err := sc.DaemonSet(r); err == nil && scenarios.Ref(ds) == key {
			return true
		}
	}
	return false
}

// recordNotConverged records a barrier's timeout with what kept each of its
// steps from converging, so that a report says which nodes and why.
func (s *runState) recordNotConverged(name string, timeout time.Duration, at time.Time, why []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	detail := fmt.Sprintf("%s timed out after %v", name, timeout)
	if len(why) > 0 {
		detail += ": " + strings.Join(why, "; ")
	}
	s.run.Violations = append(s.run.Violations, reports.Violation{
		Kind: string(scenarios.NotConverged), Start: at, Detail: detail,
		Expected: s.expected(scenarios.NotConverged, "", at),
	})
}

func (s *runState) openExpectations(st *scenarios.Step, start time.Time) {
	if len(st.Expect) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range st.Expect {
		s.windows = append(s.windows, expectWindow{exp: e, from: start, open: true, stepName: stepName(st)})
	}
}

func (s *runState) closeExpectations(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.windows {
		if s.windows[i].open {
			s.windows[i].open = false
			s.windows[i].to = at
		}
	}
}

// expected says whether a violation of kind on ds starting at t was declared;
// s.mu is held.
func (s *runState) expected(kind scenarios.ViolationKind, ds string, t time.Time) bool {
	for i := range s.windows {
		w := &s.windows[i]
		if w.exp.Violation != kind {
			continue
		}
		if w.exp.DaemonSet != "" && ds != "" {
			if d, err := s.sc.DaemonSet(w.exp.DaemonSet); err != nil || scenarios.Ref(d) != ds {
				continue
			}
		}
		if t.Before(w.from) || (!w.open && t.After(w.to)) {
			continue
		}
		w.seen = true
		return true
	}
	return false
}

// expectedDuring says whether a declared window for kind on ds overlaps
// [from, to]; s.mu is held.
func (s *runState) expectedDuring(kind scenarios.ViolationKind, ds string, from, to time.Time) bool {
	for i := range s.windows {
		w := &s.windows[i]
		if w.exp.Violation != kind {
			continue
		}
		if w.exp.DaemonSet != "" {
			if d, err := s.sc.DaemonSet(w.exp.DaemonSet); err != nil || scenarios.Ref(d) != ds {
				continue
			}
		}
		if w.from.After(to) || (!w.open && w.to.Before(from)) {
			continue
		}
		w.seen = true
		return true
	}
	return false
}

// scenarioKind maps the oracle's invariant names to the scenario format's.
func scenarioKind(k oracle.Kind) scenarios.ViolationKind { return k.Family() }

// collect turns the oracle's findings and the process's cost into the run.
func (s *runState) collect(ctx context.Context) {
	now := s.r.clock.Now()
	if s.ctrl != nil {
		if byVerb, err := s.ctrl.APIRequests(context.WithoutCancel(ctx)); err == nil {
			for k, v := range byVerb {
				s.run.APIRequests[k] = int64(v)
			}
		}
		// Stopped first, so that its CPU and peak memory are the kernel's
		// exact figures for its whole life, not a sample.
		s.ctrl.Stop()
		u := s.ctrl.Usage()
		s.run.Resources = reports.Resources{CPUSeconds: u.CPUSeconds, PeakRSSBytes: u.PeakRSSBytes}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sample(now)
	s.run.Harness = s.harnessStats()
	s.run.SimulatorStalls = s.stalls.finish(now)
	// Barriers no waitConverged covered: a step is never reported converged
	// (in 0 s) just because nobody waited for it.
	for _, pb := range s.pending {
		rec := &s.steps[pb.step]
		if c, ok := s.checker.ConvergedAt(pb.id); ok {
			rec.addConvergence(c)
			continue
		}
		rec.timedOut = true
		rec.timeoutExpected = s.expected(scenarios.NotConverged, pb.ds, now)
		s.run.Violations = append(s.run.Violations, reports.Violation{
			Kind: string(scenarios.NotConverged), Start: now,
			Detail:   fmt.Sprintf("step %q had not converged when the run ended and no waitConverged covered it: %s", rec.name, s.checker.Explain(pb.id)),
			Expected: rec.timeoutExpected,
		})
	}
	s.pending = nil
	for _, rec := range s.steps {
		step := reports.Step{Name: rec.name, Kind: rec.kind, Start: rec.start, Converged: !rec.timedOut, CompletingEvent: rec.event, SkippedNodes: rec.skipped,
			ExpectedNotConverged: rec.timeoutExpected}
		if !rec.at.IsZero() {
			step.Seconds = rec.at.Sub(rec.start).Seconds()
		}
		if rec.timedOut {
			step.Seconds = now.Sub(rec.start).Seconds()
		}
		if step.Seconds < 0 {
			step.Seconds = 0
		}
		s.run.Steps = append(s.run.Steps, step)
	}
	for _, v := range s.checker.Finish(now) {
		kind := scenarioKind(v.Kind)
		s.run.Violations = append(s.run.Violations, reports.Violation{
			DaemonSet: v.DaemonSet, Node: v.Node, Kind: string(v.Kind), Start: v.Start,
			Seconds: v.End.Sub(v.Start).Seconds(), Detail: v.Detail,
			Expected: s.expected(kind, v.DaemonSet, v.Start),
		})
	}
	for _, w := range s.windows {
		if !w.seen && !w.exp.Optional {
			s.run.Violations = append(s.run.Violations, reports.Violation{
				DaemonSet: w.exp.DaemonSet, Kind: "ExpectedViolationMissing", Start: w.from,
				Detail: fmt.Sprintf("step %s expected %s, which did not happen", w.stepName, w.exp.Violation),
			})
		}
	}
	for _, ro := range s.checker.Rollouts() {
		out := reports.Rollout{Step: s.rolloutStep(ro), DaemonSet: ro.DaemonSet, Complete: ro.Outcome == oracle.RolloutConverged, Outcome: strings.ToLower(string(ro.Outcome))}
		end := ro.End
		if end.IsZero() {
			end = now
		}
		out.Seconds = end.Sub(ro.Start).Seconds()
		for _, n := range ro.Nodes {
			if n.NewPodAvailable.IsZero() {
				continue
			}
			from := ro.Start
			if !n.OldPodGone.IsZero() && n.OldPodGone.After(from) {
				from = n.OldPodGone
			}
			out.Nodes = append(out.Nodes, reports.NodeLatency{Node: n.Node, Seconds: max(0, n.NewPodAvailable.Sub(from).Seconds())})
		}
		s.run.Rollouts = append(s.run.Rollouts, out)
		s.run.Availability = append(s.run.Availability, reports.Availability{
			DaemonSet: ro.DaemonSet, Step: out.Step, PeakUnavailable: ro.PeakUnavailable, AllowedUnavailable: ro.AllowedAtPeak,
			Expected: ro.PeakUnavailable > ro.AllowedAtPeak && s.expectedDuring(scenarios.MaxUnavailableExceeded, ro.DaemonSet, ro.Start, end),
		})
	}
	for _, w := range s.checker.PodGCWaits() {
		if !w.PodsGone.IsZero() {
			s.run.PodGCWaits = append(s.run.PodGCWaits, reports.NodeLatency{Node: w.Node, Seconds: w.PodsGone.Sub(w.NodeDeleted).Seconds()})
		}
	}
	for _, j := range s.checker.NodeJoins() {
		if j.PodReady.IsZero() {
			continue
		}
		s.run.NodeJoins = append(s.run.NodeJoins, reports.NodeLatency{Node: j.Node, Seconds: j.Latency().Seconds()})
		s.run.NodeEligible = append(s.run.NodeEligible, reports.NodeLatency{Node: j.Node, Seconds: j.ClusterShare().Seconds()})
	}
	keys := make([]string, 0, len(s.timeline))
	for k := range s.timeline {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.run.Timelines = append(s.run.Timelines, *s.timeline[k])
	}
	s.run.Coverage = s.coverage()
}

func (s *runState) rolloutStep(ro oracle.Rollout) string {
	name := ""
	for _, r := range s.rollouts {
		if r.ds == ro.DaemonSet && !r.start.After(ro.Start.Add(time.Second)) {
			name = r.step
		}
	}
	for _, rec := range s.steps {
		if (rec.kind == string(scenarios.KindUpdate) || rec.kind == string(scenarios.KindRollback)) && !rec.start.After(ro.Start.Add(time.Second)) {
			name = rec.name
		}
	}
	return name
}

// coverage reports what the harness may have missed; s.mu is held.
func (s *runState) coverage() reports.Coverage {
	c := reports.Coverage{NodeReadyFlaps: s.seen.flaps}
	c.PodsExpected, c.PodsObserved = len(s.seen.pods), 0
	for _, whole := range s.seen.pods {
		if whole {
			c.PodsObserved++
		}
	}
	c.ObservedFraction = 1
	if c.PodsExpected > 0 {
		c.ObservedFraction = float64(c.PodsObserved) / float64(c.PodsExpected)
	}
	for _, g := range s.watcher.Gaps() {
		c.WatchGaps = append(c.WatchGaps, reports.WatchGap{Resource: g.Resource, Start: g.Start, Seconds: g.End.Sub(g.Start).Seconds(), Reason: g.Reason})
	}
	return c
}
