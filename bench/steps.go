package bench

import (
	"context"
	"fmt"
	"slices"
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
	"k8s.io/client-go/kubernetes"

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
	s.do(func() { s.core.StepStarted(st, start) })
	kind, ok := stepKinds[st.Kind()]
	if !ok {
		return fmt.Errorf("step kind %q is not supported by the runner", st.Kind())
	}
	vis, err := kind.play(s, ctx, st)
	if kind.flow {
		return err
	}
	ack := s.r.clock.Now()
	if err != nil {
		return err
	}
	var skipped []string
	s.do(func() { skipped = slices.Clone(s.skipped[st]) })
	if len(skipped) > 0 {
		sort.Strings(skipped)
		s.progress("step %s: %d chosen nodes left before the step reached them (%s)", name, len(skipped), strings.Join(skipped, ", "))
	}
	s.do(func() { s.core.StepAcked(name, string(st.Kind()), start, ack, vis, skipped) })
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
	left := true
	s.do(func() {
		for _, ps := range s.pools {
			if ps.nodes[node] {
				left = false
				return
			}
		}
		if s.skipped == nil {
			s.skipped = map[*scenarios.Step][]string{}
		}
		s.skipped[st] = append(s.skipped[st], node)
	})
	return left
}

// stepKind is how the runner plays one kind of step.
type stepKind struct {
	// play performs the step's API writes and returns when they are
	// acknowledged, with what makes them visible to the oracle; the step's
	// barriers are added then.
	play func(s *runState, ctx context.Context, st *scenarios.Step) (visibility, error)
	// flow marks a step that orders others and adds no barrier of its own.
	flow bool
}

// stepKinds is the runner's one table of step kinds: a new kind is an entry
// here and its executor. It is filled in init because parallel plays steps,
// which look their kind up here.
var stepKinds map[scenarios.StepKind]stepKind

func init() {
	stepKinds = map[scenarios.StepKind]stepKind{
		scenarios.KindNodes:         {play: (*runState).nodes},
		scenarios.KindLabels:        {play: (*runState).labels},
		scenarios.KindTaints:        {play: (*runState).taints},
		scenarios.KindCordon:        {play: (*runState).cordon},
		scenarios.KindUncordon:      {play: (*runState).cordon},
		scenarios.KindEvict:         {play: (*runState).evict},
		scenarios.KindMarkNotReady:  {play: (*runState).markReady},
		scenarios.KindMarkReady:     {play: (*runState).markReady},
		scenarios.KindCreate:        {play: (*runState).create},
		scenarios.KindDelete:        {play: (*runState).deleteDS},
		scenarios.KindUpdate:        {play: (*runState).update},
		scenarios.KindStrategy:      {play: (*runState).strategy},
		scenarios.KindRollback:      {play: (*runState).rollback},
		scenarios.KindPods:          {play: (*runState).pods},
		scenarios.KindController:    {play: (*runState).controller},
		scenarios.KindFault:         {play: (*runState).fault},
		scenarios.KindPause:         {play: (*runState).pause, flow: true},
		scenarios.KindWaitConverged: {play: (*runState).waitStep, flow: true},
		scenarios.KindParallel:      {play: (*runState).parallel, flow: true},
	}
}

func (s *runState) labels(ctx context.Context, st *scenarios.Step) (visibility, error) {
	p := kwok.NodePatch{Labels: map[string]*string{}}
	for k, v := range st.Labels.Set {
		p.Labels[k] = &v
	}
	for _, k := range st.Labels.Remove {
		p.Labels[k] = nil
	}
	return s.patchNodes(ctx, st, p)
}

func (s *runState) taints(ctx context.Context, st *scenarios.Step) (visibility, error) {
	return s.patchNodes(ctx, st, kwok.NodePatch{SetTaints: st.Taints.Add, RemoveTaints: st.Taints.Remove})
}

// cordon cordons or uncordons.
func (s *runState) cordon(ctx context.Context, st *scenarios.Step) (visibility, error) {
	cordon := st.Kind() == scenarios.KindCordon
	return s.patchNodes(ctx, st, kwok.NodePatch{Unschedulable: &cordon})
}

func (s *runState) evict(ctx context.Context, st *scenarios.Step) (visibility, error) {
	taint := corev1.Taint{Key: scenarios.DefaultEvictTaintKey, Effect: corev1.TaintEffectNoExecute}
	if st.Evict.Taint != nil {
		taint = *st.Evict.Taint
	}
	return s.patchNodes(ctx, st, kwok.NodePatch{SetTaints: []corev1.Taint{taint}})
}

// markReady marks nodes Ready or NotReady.
func (s *runState) markReady(ctx context.Context, st *scenarios.Step) (visibility, error) {
	ready := st.Kind() == scenarios.KindMarkReady
	names := s.pickNodes(st, st.Target())
	err := s.paced(ctx, st, len(names), func(ctx context.Context, i int) error {
		if err := kwok.SetNodeReady(ctx, s.r.client, names[i], ready); err != nil && !s.leftMeanwhile(st, names[i], err) {
			return err
		}
		return nil
	})
	return visibility{"": nodeConditionSeen(names, ready)}, err
}

func (s *runState) update(ctx context.Context, st *scenarios.Step) (visibility, error) {
	return s.writeDS(ctx, st.Update.DaemonSet, func(ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
		return scenarios.ApplyUpdate(ds, st.Update)
	})
}

func (s *runState) strategy(ctx context.Context, st *scenarios.Step) (visibility, error) {
	return s.writeDS(ctx, st.Strategy.DaemonSet, func(ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
		return scenarios.ApplyStrategy(ds, st.Strategy), nil
	})
}

func (s *runState) pause(ctx context.Context, st *scenarios.Step) (visibility, error) {
	sleep(ctx, st.Pause.Duration)
	return nil, ctx.Err()
}

// waitStep waits for the barriers, then closes the expectations declared
// before it.
func (s *runState) waitStep(ctx context.Context, st *scenarios.Step) (visibility, error) {
	err := s.waitConverged(ctx, st.WaitConverged, stepName(st))
	end := s.r.clock.Now()
	s.do(func() { s.core.CloseExpectations(end) })
	return nil, err
}

func (s *runState) parallel(ctx context.Context, st *scenarios.Step) (visibility, error) {
	g, gctx := errgroup.WithContext(ctx)
	for i, branch := range st.Parallel {
		g.Go(func() error { return s.playSteps(gctx, branch, fmt.Sprintf("%s.parallel[%d]", st.Path, i)) })
	}
	return nil, g.Wait()
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
	var sel labels.Selector = labels.Everything()
	if t.Selector != "" {
		if parsed, err := labels.Parse(t.Selector); err == nil {
			sel = parsed
		}
	}
	var out []string
	s.do(func() {
		w := s.core.World()
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
	})
	sort.Strings(out)
	return out
}

// pickNodes chooses the step's nodes deterministically among those the step
// would actually change (uncordon picks cordoned nodes, markReady NotReady
// ones), as scenarios/README.md specifies.
func (s *runState) pickNodes(st *scenarios.Step, t *scenarios.NodeTarget) []string {
	cands := s.candidates(t)
	if keep := changeFilter(st.Kind()); keep != nil {
		filtered := cands[:0:0]
		s.do(func() {
			w := s.core.World()
			for _, n := range cands {
				if node, ok := w.Node(n); ok && keep(node) {
					filtered = append(filtered, n)
				}
			}
		})
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
// or (for an unready) not Ready in the oracle's view.
func podsChanged(keys []string, action scenarios.PodAction) oracle.Visibility {
	return func(w *oracle.World) bool {
		for _, k := range keys {
			p, ok := w.Pod(k)
			if !ok || p.DeletionTimestamp != nil || action == scenarios.PodFail && p.Status.Phase == corev1.PodFailed ||
				action == scenarios.PodUnready && !podReady(p) {
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

// joined adds nodes to their pool once their creates are acknowledged:
// from then on other steps may pick them.
func (s *runState) joined(pool string, names ...string) {
	s.do(func() {
		for _, n := range names {
			s.pools[pool].nodes[n] = true
		}
	})
}

func (s *runState) nodes(ctx context.Context, st *scenarios.Step) (visibility, error) {
	ns := st.Nodes
	switch ns.Action {
	case scenarios.NodeJoin:
		var kp kwok.NodePool
		var names []string
		found := false
		s.do(func() {
			ps := s.pools[ns.Pool]
			if ps == nil {
				return
			}
			found = true
			count := ns.Resolve(len(ps.nodes))
			ps.next = s.reserveNodes(ps, count)
			kp = s.kwokPool(ps.pool, ps.next-count, count)
			names = kp.NodeNames()
		})
		if !found {
			return nil, fmt.Errorf("no pool %q", ns.Pool)
		}
		err := s.paced(ctx, st, len(names), func(ctx context.Context, i int) error {
			one := kp
			one.Start, one.Count = kp.Start+i, 1
			if err := kwok.CreateNodes(ctx, s.r.client, one, 1); err != nil {
				return err
			}
			s.joined(ns.Pool, names[i])
			return nil
		})
		return visibility{"": oracle.NodesSettled(names...)}, err
	case scenarios.NodeLeave, scenarios.NodeReplace:
		names := s.pickNodes(st, &ns.NodeTarget)
		byPool := map[string]int{}
		s.do(func() {
			for name, ps := range s.pools {
				for _, n := range names {
					if ps.nodes[n] {
						delete(ps.nodes, n)
						byPool[name]++
					}
				}
			}
		})
		err := s.paced(ctx, st, len(names), func(ctx context.Context, i int) error {
			return kwok.DeleteNodes(ctx, s.r.client, names[i:i+1], 1)
		})
		if err != nil || ns.Action == scenarios.NodeLeave {
			return visibility{"": oracle.NodesAbsent(names...)}, err
		}
		var added []string
		for pool, n := range byPool {
			var kp kwok.NodePool
			s.do(func() {
				ps := s.pools[pool]
				ps.next = s.reserveNodes(ps, n)
				kp = s.kwokPool(ps.pool, ps.next-n, n)
			})
			if err := kwok.CreateNodes(ctx, s.r.client, kp, 0); err != nil {
				return nil, err
			}
			s.joined(pool, kp.NodeNames()...)
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
		created, err := createDaemonSet(ctx, s.r.client, ds, deletingWait, deletingPoll)
		if err != nil {
			return fmt.Errorf("creating DaemonSet %s: %w", scenarios.Ref(ds), err)
		}
		ref := scenarios.Ref(ds)
		mu.Lock()
		vis[ref] = oracle.GenerationObserved(ref, created.Generation)
		mu.Unlock()
		s.do(func() { s.core.DaemonSetCreated(ref) })
		return nil
	})
	return vis, err
}

// deletingWait bounds how long a create waits for a DaemonSet of the same
// name that is still being deleted (the garbage collector orphaning or
// deleting its pods first: about a second per 1000 pods here), and
// deletingPoll is how often it looks.
const (
	deletingWait = 3 * time.Minute
	deletingPoll = 250 * time.Millisecond
)

// createDaemonSet creates ds. When a DaemonSet of that name still exists
// but is being deleted (a delete with cascade orphan or foreground waits for
// the garbage collector), it waits for it to go, at most patience, and
// creates then: the scenario asked for a new DaemonSet after the old one.
func createDaemonSet(ctx context.Context, client kubernetes.Interface, ds *appsv1.DaemonSet, patience, poll time.Duration) (*appsv1.DaemonSet, error) {
	dsc := client.AppsV1().DaemonSets(ds.Namespace)
	deadline := time.Now().Add(patience)
	for {
		created, err := dsc.Create(ctx, ds, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		old, getErr := dsc.Get(ctx, ds.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(getErr):
			continue // gone in between
		case getErr != nil:
			return nil, err
		case old.DeletionTimestamp == nil:
			return nil, err // a live DaemonSet of that name: the scenario's mistake
		case !time.Now().Before(deadline):
			return nil, fmt.Errorf("the DaemonSet of that name was still being deleted after %v (finalizers %v): %w", patience, old.Finalizers, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}

func (s *runState) deleteDS(ctx context.Context, st *scenarios.Step) (visibility, error) {
	d := st.Delete
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
	s.do(func() { s.core.DaemonSetDeleted(ref) })
	if d.Cascade == scenarios.CascadeOrphan {
		// Orphaned pods stay; there is nothing to converge on but absence.
		return visibility{ref: oracle.DaemonSetAbsent(ref), "-orphan": nil}, nil
	}
	return visibility{ref: oracle.DaemonSetAbsent(ref)}, nil
}

// writeDS reads the DaemonSet, changes it with fn and writes it back,
// retrying on conflict.
func (s *runState) writeDS(ctx context.Context, ref string, fn func(*appsv1.DaemonSet) (*appsv1.DaemonSet, error)) (visibility, error) {
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
		return visibility{key: oracle.GenerationObserved(key, updated.Generation)}, nil
	}
}

// rollback does what `kubectl rollout undo` does: it writes the template of
// an earlier ControllerRevision back into the DaemonSet.
func (s *runState) rollback(ctx context.Context, st *scenarios.Step) (visibility, error) {
	rb := st.Rollback
	want, err := s.sc.DaemonSet(rb.DaemonSet)
	if err != nil {
		return nil, err
	}
	return s.writeDS(ctx, rb.DaemonSet, func(ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
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
			// Only a Running pod can fail or turn unready: kwok may
			// already be playing a Pending pod's start, and would make it
			// Running and Ready again.
			if ps.Action != scenarios.PodDelete && p.Status.Phase != corev1.PodRunning {
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
		if ps.Action != scenarios.PodDelete {
			patch, verb := []byte(`{"status":{"phase":"Failed","reason":"DsbenchFailed"}}`), "failing"
			if ps.Action == scenarios.PodUnready {
				// The reason keeps kwok's re-ready stage off the pod.
				patch, verb = []byte(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"`+kwok.UnreadyReason+`"}]}}`), "unreadying"
			}
			_, err := s.r.client.CoreV1().Pods(p.ns).Patch(ctx, p.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s pod %s/%s: %w", verb, p.ns, p.name, err)
			}
			return nil
		}
		s.do(func() { s.core.RequestDeletion(p.ns + "/" + p.name) })
		err := s.r.client.CoreV1().Pods(p.ns).Delete(ctx, p.name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s/%s: %w", p.ns, p.name, err)
		}
		return nil
	})
	return visibility{"": podsChanged(keys, ps.Action)}, err
}

func (s *runState) controller(ctx context.Context, st *scenarios.Step) (visibility, error) {
	return nil, s.controllerAction(ctx, st.Controller)
}

func (s *runState) controllerAction(ctx context.Context, c *scenarios.ControllerStep) error {
	stopped := func() {
		s.do(func() { s.core.ControllerStopped() })
	}
	started := func(err error) error {
		s.do(func() { s.core.ControllerStarted(s.r.clock.Now()) })
		return err
	}
	if s.ctrl == nil {
		// The external controller, whose scenarios Run refuses first.
		return fmt.Errorf("controller action %q: the harness did not start the %s controller", c.Action, s.which)
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
		now := s.r.clock.Now()
		var done bool
		s.do(func() {
			done = s.core.WaitDone(w.DaemonSets)
			if !done && now.After(deadline) {
				s.core.WaitTimedOut(name, w.DaemonSets, timeout, deadline)
				done = true
			}
		})
		if done {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// collect turns the oracle's findings and the process's cost into the run.
func (s *runState) collect(ctx context.Context) {
	in := FinishInput{Now: s.r.clock.Now()}
	if s.which.Measured() {
		in.APIRequests = map[string]int64{}
	}
	if s.ctrl != nil {
		if byVerb, err := s.ctrl.APIRequests(context.WithoutCancel(ctx)); err == nil {
			for k, v := range byVerb {
				in.APIRequests[k] = int64(v)
			}
		}
		// Stopped first, so that its CPU and peak memory are the kernel's
		// exact figures for its whole life, not a sample.
		s.ctrl.Stop()
		u := s.ctrl.Usage()
		in.Resources = reports.Resources{CPUSeconds: u.CPUSeconds, PeakRSSBytes: u.PeakRSSBytes}
	}
	in.HarnessCPU = selfCPU() - s.cpuAtStart
	in.Gaps = s.watcher.Gaps()
	var closed []reports.ExtraMetric
	if s.closedWatchesAtStart != nil {
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if end, err := closedWatches(mctx, s.r.client); err == nil {
			closed = closedWatchesMetrics(s.closedWatchesAtStart, end)
		}
		cancel()
	}
	if s.kwokClosesKnown {
		if end, ok := kwokPodWatchCloses(s.r.conf.ClusterFaults); ok {
			closed = append(closed, kwokClosesMetric(kwokWatchOf(s.r.conf.ClusterFaults), s.kwokClosesAtStart, end))
		}
	}
	s.do(func() {
		s.run.Extra = append(s.run.Extra, closed...)
		*s.run = s.core.Finish(*s.run, in)
	})
}
