package bench

import (
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dsbench/dsbench/bench/floor"
	"github.com/dsbench/dsbench/bench/oracle"
)

// floorView is the floor's read of the oracle's view, kept from one plan to
// the next: each live DaemonSet's nodes as the planner takes them. A read
// redoes only the nodes that events touched since the last one
// (World.TakeChanges), those where time alone can make a pod available
// (minReadySeconds) and those with orphans; a DaemonSet that changed is read
// anew. The floor's expectations are laid over the nodes at every read. At
// 5000 nodes a whole read took 10 ms, as often as every 30 ms, on the
// goroutine that feeds the oracle: CPU the cluster did not get (SCALE.md).
type floorView struct {
	world *oracle.World
	dss   map[string]*floorDSView
	// orphanUIDs are the orphans of the latest read.
	orphanUIDs map[string]types.UID
}

// floorDSView is one DaemonSet's part of the view.
type floorDSView struct {
	ds       *appsv1.DaemonSet // the object it was read from
	rev      floorRevision
	minReady time.Duration
	// nodes are the nodes the planner takes, without the expectations,
	// and order their names, sorted: the planner's input comes sorted, so
	// that it need not sort it.
	nodes map[string]floor.Node
	order []string
	// sorted are the nodes in order, and index where each one is in it;
	// rebuilt when a node comes or goes (stale), else updated in place.
	sorted []floor.Node
	index  map[string]int
	stale  bool
	// pods are the DaemonSet's pods on those nodes.
	pods map[string]floorPodRef
	// ripening are the nodes with a pod Ready but not yet available.
	ripening map[string]struct{}
	// orphaned are the nodes that held orphans at the latest read.
	orphaned map[string]struct{}
}

type floorPodRef struct {
	node string
	uid  types.UID
}

// floorExpectations are the floor's calls under way, by the keys of
// floorController's maps.
type floorExpectations struct {
	creating, deleting, adopting map[string]floorExpectation
}

// read returns the planner's input and the live DaemonSets.
func (v *floorView) read(w *oracle.World, now time.Time, exp floorExpectations) (floor.Input, map[string]*appsv1.DaemonSet) {
	changes, ok := w.TakeChanges()
	if !ok || v.world != w {
		v.world, v.dss = w, map[string]*floorDSView{}
	}
	return v.update(w, now, exp, changes.Nodes)
}

// update brings the view up to date, given the nodes that changed since
// the latest read, and returns it with the expectations laid over it. A
// view without DaemonSets is read whole.
func (v *floorView) update(w *oracle.World, now time.Time, exp floorExpectations, touched map[string]struct{}) (floor.Input, map[string]*appsv1.DaemonSet) {
	var (
		in    floor.Input
		dss   = map[string]*appsv1.DaemonSet{}
		names []string // every node, once a DaemonSet is read anew
	)
	v.orphanUIDs = map[string]types.UID{}
	creating := creatingByDaemonSet(exp.creating)
	for _, key := range w.DaemonSetKeys() {
		ds, _ := w.DaemonSet(key)
		if ds.DeletionTimestamp != nil {
			continue
		}
		dss[key] = ds
		orphans := map[string][]*corev1.Pod{}
		for _, p := range w.Orphans(key) {
			pk := p.Namespace + "/" + p.Name
			if _, ok := exp.adopting[pk]; !ok && p.Spec.NodeName != "" {
				orphans[p.Spec.NodeName] = append(orphans[p.Spec.NodeName], p)
				v.orphanUIDs[pk] = p.UID
			}
		}
		d := v.dss[key]
		if d == nil || d.ds != ds {
			d = newFloorDSView(ds)
			v.dss[key] = d
			if names == nil {
				names = w.NodeNames()
			}
			for _, name := range names {
				d.readNode(w, key, name, orphans[name], now)
			}
		} else {
			redo := maps.Clone(touched)
			if redo == nil {
				redo = map[string]struct{}{}
			}
			maps.Copy(redo, d.ripening)
			maps.Copy(redo, d.orphaned)
			for name := range orphans {
				redo[name] = struct{}{}
			}
			for name := range redo {
				d.readNode(w, key, name, orphans[name], now)
			}
		}
		d.orphaned = make(map[string]struct{}, len(orphans))
		for name := range orphans {
			d.orphaned[name] = struct{}{}
		}
		in.DaemonSets = append(in.DaemonSets, d.planned(key, creating[key], exp.deleting))
	}
	for key := range v.dss {
		if _, ok := dss[key]; !ok {
			delete(v.dss, key)
		}
	}
	return in, dss
}

// uid is the UID of a pod of the latest read: the DaemonSet's, or an orphan.
func (v *floorView) uid(ds, pod string) types.UID {
	if d := v.dss[ds]; d != nil {
		if r, ok := d.pods[pod]; ok {
			return r.uid
		}
	}
	return v.orphanUIDs[pod]
}

// hash is the current hash of a DaemonSet of the latest read.
func (v *floorView) hash(ds string) string {
	if d := v.dss[ds]; d != nil {
		return d.rev.hash
	}
	return ""
}

func newFloorDSView(ds *appsv1.DaemonSet) *floorDSView {
	return &floorDSView{ds: ds,
		rev:      floorRevision{hash: oracle.CurrentHash(ds), generation: ds.Annotations[appsv1.DeprecatedTemplateGeneration]},
		minReady: time.Duration(ds.Spec.MinReadySeconds) * time.Second,
		nodes:    map[string]floor.Node{}, pods: map[string]floorPodRef{}, ripening: map[string]struct{}{}, stale: true}
}

// readNode reads the node afresh: its eligibility, the DaemonSet's pods
// there and the orphans given. A node that is gone, or where the pod may not
// run and there is none, is left out.
func (d *floorDSView) readNode(w *oracle.World, key, name string, orphans []*corev1.Pod, now time.Time) {
	old, had := d.nodes[name]
	for _, p := range old.Pods {
		if r, ok := d.pods[p.Key]; ok && r.node == name {
			delete(d.pods, p.Key)
		}
	}
	delete(d.nodes, name)
	delete(d.ripening, name)
	mustRun, mayRun, ok := w.Eligibility(key, name)
	pods := w.PodsOn(key, name)
	if !ok || !mayRun && len(pods)+len(orphans) == 0 {
		if had {
			i, _ := slices.BinarySearch(d.order, name)
			d.order = slices.Delete(d.order, i, i+1)
			d.stale = true
		}
		return
	}
	if !had {
		i, _ := slices.BinarySearch(d.order, name)
		d.order = slices.Insert(d.order, i, name)
		d.stale = true
	}
	n := floor.Node{Name: name, MustRun: mustRun, MayRun: mayRun}
	if len(pods)+len(orphans) > 0 {
		n.Pods = make([]floor.Pod, 0, len(pods)+len(orphans))
	}
	add := func(pk string, p *corev1.Pod, readySince time.Time, orphan bool) {
		// As World.PodAvailable, from the readiness in hand.
		ready := !readySince.IsZero()
		available := ready && !readySince.Add(d.minReady).After(now)
		if ready && !available {
			d.ripening[name] = struct{}{}
		}
		n.Pods = append(n.Pods, floor.Pod{Key: pk, Created: p.CreationTimestamp.Time, Current: d.rev.matches(p),
			Terminal:    p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded,
			Terminating: p.DeletionTimestamp != nil, Ready: ready, Available: available, Orphan: orphan})
	}
	for _, p := range pods {
		add(p.Key, p.Pod, p.ReadySince, false)
		d.pods[p.Key] = floorPodRef{node: name, uid: p.Pod.UID}
	}
	for _, p := range orphans {
		pk := p.Namespace + "/" + p.Name
		add(pk, p, w.PodReadySince(pk), true)
	}
	d.nodes[name] = n
	if !d.stale {
		d.sorted[d.index[name]] = n
	}
}

// planned is the DaemonSet as the planner takes it: its nodes, sorted, with
// the creates and deletes under way laid over a copy.
func (d *floorDSView) planned(key string, creating map[string]struct{}, deleting map[string]floorExpectation) floor.DaemonSet {
	if d.stale {
		d.sorted = make([]floor.Node, len(d.order))
		d.index = make(map[string]int, len(d.order))
		for i, name := range d.order {
			d.sorted[i], d.index[name] = d.nodes[name], i
		}
		d.stale = false
	}
	fd := floor.DaemonSet{Key: key, Strategy: d.ds.Spec.UpdateStrategy, Nodes: slices.Clone(d.sorted)}
	for name := range creating {
		if i, ok := d.index[name]; ok {
			fd.Nodes[i].Creating = true
		}
	}
	if len(deleting) == 0 {
		return fd
	}
	deletingOn := map[int]struct{}{}
	for pk := range deleting {
		if r, ok := d.pods[pk]; ok {
			if i, ok := d.index[r.node]; ok {
				deletingOn[i] = struct{}{}
			}
		}
	}
	for name := range d.orphaned { // orphans are not in pods: look at them all
		if i, ok := d.index[name]; ok {
			deletingOn[i] = struct{}{}
		}
	}
	for i := range deletingOn {
		n := &fd.Nodes[i]
		n.Pods = slices.Clone(n.Pods)
		for j := range n.Pods {
			_, n.Pods[j].Deleting = deleting[n.Pods[j].Key]
		}
	}
	return fd
}

// creatingByDaemonSet splits the creates under way ("<ds>|<node>") by
// DaemonSet.
func creatingByDaemonSet(creating map[string]floorExpectation) map[string]map[string]struct{} {
	out := map[string]map[string]struct{}{}
	for k := range creating {
		ds, node, _ := strings.Cut(k, "|")
		if out[ds] == nil {
			out[ds] = map[string]struct{}{}
		}
		out[ds][node] = struct{}{}
	}
	return out
}
