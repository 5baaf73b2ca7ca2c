package oracle

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// EventKind is the watch event type.
type EventKind string

// Event kinds. Timer is never applied: it marks evaluations that happen only
// because time passed (minReadySeconds).
const (
	Added    EventKind = "Added"
	Modified EventKind = "Modified"
	Deleted  EventKind = "Deleted"
	Timer    EventKind = "Timer"
)

// Event is one watch event as the runner received it. Object is a *Node, *Pod
// or *DaemonSet (unwrap informer tombstones first). Time is when the runner
// received it; it should not go backwards (see World.Apply).
type Event struct {
	Time   time.Time
	Kind   EventKind
	Object runtime.Object
	// Relisted: the event comes from a list after a watch had to start
	// over, not from the watch. It carries the object as it was then, and
	// its order against other objects' changes is unknown.
	Relisted bool
}

// ErrUnsupportedObject is returned by Apply for objects other than nodes,
// pods and DaemonSets.
var ErrUnsupportedObject = errors.New("unsupported object type")

// World is the oracle's own in-memory view of nodes, pods and DaemonSets,
// built only from events, plus what it observed about them: when each node was
// added and since when each pod has been Ready. Objects are kept as given and
// never mutated; callers must not mutate them either. Not safe for concurrent
// use.
type World struct {
	now     time.Time
	clamped int

	nodes map[string]*nodeEntry
	pods  map[string]*podEntry
	dss   map[string]*dsEntry
	// goneDS remembers the UID of deleted DaemonSets so that their leftover
	// pods can still be found.
	goneDS map[string]types.UID
	// goneNodes is when each deleted node was seen deleted, until a node of
	// the same name appears again.
	goneNodes map[string]time.Time
	// cacheLag is Config.CacheLag (see PodOnDeletedNode).
	cacheLag time.Duration
	// owned indexes pods by controller UID, then by target node ("" for pods
	// without one), then by namespace/name.
	owned   map[types.UID]map[string]map[string]*podEntry
	orphans map[string]*podEntry
	// changes holds what events touched since a reader last took them
	// (TakeChanges); nil until one first does.
	changes *Changes
}

type nodeEntry struct {
	node    *corev1.Node
	addedAt time.Time // event time the node was first seen since it last appeared
	// past holds the node's earlier versions, those replaced less than
	// cacheLag before its latest change: a controller's cache may still
	// show one of them (mustRunUntil reads only those recent at its time).
	past []pastNode
}

// pastNode is a version of a node and when it was replaced.
type pastNode struct {
	node  *corev1.Node
	until time.Time
}

type podEntry struct {
	pod   *corev1.Pod
	key   string
	owner types.UID // controller UID, "" for orphans
	node  string    // target node, "" when it has none
	// placedAt is when the pod was first seen targeting node.
	placedAt time.Time
	// orphanedAt is when the pod was last seen becoming an orphan (first
	// seen without a controller, or losing it) or, as one, changing its
	// labels: from then on a DaemonSet can know it may adopt it.
	orphanedAt time.Time
	// readySince is when the pod became Ready as far as the oracle can tell,
	// zero while it is not Ready.
	readySince time.Time
	// firstRV is the resourceVersion the pod had when first seen (its
	// creation's, when the Added event was seen); 0 if not a number.
	firstRV uint64
}

type dsEntry struct {
	ds  *appsv1.DaemonSet
	rev revision
	pl  *placement
}

// NewWorld returns an empty view.
func NewWorld() *World { return newWorld(0) }

func newWorld(cacheLag time.Duration) *World {
	return &World{
		cacheLag:  cacheLag,
		nodes:     map[string]*nodeEntry{},
		pods:      map[string]*podEntry{},
		dss:       map[string]*dsEntry{},
		goneDS:    map[string]types.UID{},
		goneNodes: map[string]time.Time{},
		owned:     map[types.UID]map[string]map[string]*podEntry{},
		orphans:   map[string]*podEntry{},
	}
}

// Now is the time of the latest event applied.
func (w *World) Now() time.Time { return w.now }

// Clamped counts events whose time was before an earlier event's; they were
// applied at the earlier time instead, so that time never goes backwards.
func (w *World) Clamped() int { return w.clamped }

// Node returns the node by name.
func (w *World) Node(name string) (*corev1.Node, bool) {
	e, ok := w.nodes[name]
	if !ok {
		return nil, false
	}
	return e.node, true
}

// NodeAddedAt is the event time at which the node was first seen, since it
// was last absent.
func (w *World) NodeAddedAt(name string) (time.Time, bool) {
	e, ok := w.nodes[name]
	if !ok {
		return time.Time{}, false
	}
	return e.addedAt, true
}

// NodeNames returns the names of all nodes, sorted.
func (w *World) NodeNames() []string { return sortedKeys(w.nodes) }

// Pod returns the pod by namespace/name.
func (w *World) Pod(key string) (*corev1.Pod, bool) {
	e, ok := w.pods[key]
	if !ok {
		return nil, false
	}
	return e.pod, true
}

// PodReadySince is when the pod became Ready: the event time the oracle saw
// it turn Ready, or, for a pod first seen already Ready, its Ready condition's
// lastTransitionTime when that is not in the future. Zero when not Ready.
func (w *World) PodReadySince(key string) time.Time {
	if e, ok := w.pods[key]; ok {
		return e.readySince
	}
	return time.Time{}
}

// DaemonSet returns the DaemonSet by namespace/name.
func (w *World) DaemonSet(key string) (*appsv1.DaemonSet, bool) {
	e, ok := w.dss[key]
	if !ok {
		return nil, false
	}
	return e.ds, true
}

// DaemonSetKeys returns the keys of all DaemonSets, sorted.
func (w *World) DaemonSetKeys() []string { return sortedKeys(w.dss) }

// Apply updates the view with one event. An event older than the latest one
// is applied at the latest time and counted in Clamped.
func (w *World) Apply(ev Event) error {
	_, err := w.apply(ev)
	return err
}

// change says what an event touched, for incremental checking.
type change struct {
	node     string      // a node event: its name
	nodeNew  bool        // the node was not present before
	ds       string      // a DaemonSet event: its key
	owners   []types.UID // a pod event: controller UIDs before and after
	podNodes []string    // a pod event: target nodes before and after
	pod      string      // a pod event: its key
	podNew   bool        // a pod event: the pod (this UID) was not seen before
}

func (w *World) apply(ev Event) (change, error) {
	if ev.Kind != Added && ev.Kind != Modified && ev.Kind != Deleted {
		return change{}, fmt.Errorf("applying event: unknown kind %q", ev.Kind)
	}
	switch ev.Object.(type) {
	case *corev1.Node, *corev1.Pod, *appsv1.DaemonSet:
	default:
		return change{}, fmt.Errorf("applying %s event for %T: %w", ev.Kind, ev.Object, ErrUnsupportedObject)
	}
	t := ev.Time
	if t.Before(w.now) {
		t = w.now
		w.clamped++
	}
	w.now = t
	deleted := ev.Kind == Deleted
	var c change
	switch o := ev.Object.(type) {
	case *corev1.Node:
		c = w.applyNode(o, deleted, t)
	case *corev1.Pod:
		c = w.applyPod(o, deleted, t)
	default:
		c = w.applyDS(o.(*appsv1.DaemonSet), deleted)
	}
	w.changes.note(c)
	return c, nil
}

// Changes are what events touched: the nodes (a node's own event, and a
// pod's target node before and after; "" for a pod without one) and the
// DaemonSets (their keys).
type Changes struct {
	Nodes, DaemonSets map[string]struct{}
}

func (cs *Changes) note(c change) {
	if cs == nil {
		return
	}
	if c.node != "" {
		cs.Nodes[c.node] = struct{}{}
	}
	for _, n := range c.podNodes {
		cs.Nodes[n] = struct{}{}
	}
	if c.ds != "" {
		cs.DaemonSets[c.ds] = struct{}{}
	}
}

// TakeChanges returns what events touched since the previous call, for a
// reader that keeps what it derived from the view and redoes only that. The
// first call starts the record and returns ok false: the reader must read
// everything once.
func (w *World) TakeChanges() (cs Changes, ok bool) {
	if w.changes != nil {
		cs, ok = *w.changes, true
	}
	w.changes = &Changes{Nodes: map[string]struct{}{}, DaemonSets: map[string]struct{}{}}
	return cs, ok
}

func (w *World) applyNode(n *corev1.Node, deleted bool, t time.Time) change {
	c := change{node: n.Name}
	old, had := w.nodes[n.Name]
	switch {
	case deleted:
		delete(w.nodes, n.Name)
		w.goneNodes[n.Name] = t
	case had:
		old.past = append(old.past, pastNode{node: old.node, until: t})
		old.past = slices.DeleteFunc(old.past, func(p pastNode) bool { return p.until.Add(w.cacheLag).Before(t) })
		old.node = n
	default:
		w.nodes[n.Name] = &nodeEntry{node: n, addedAt: t}
		delete(w.goneNodes, n.Name)
		c.nodeNew = true
	}
	return c
}

// mustRunUntil returns the latest time, less than cacheLag before now, at
// which an earlier version of the node stopped being one the DaemonSet must
// run on; ok is false if there is none. A controller whose cache trails by
// up to cacheLag may act on that version, for a DaemonSet it sees before the
// node's change (one created, or changed, just after it).
func (w *World) mustRunUntil(name string, e *dsEntry, now time.Time) (until time.Time, ok bool) {
	n := w.nodes[name]
	if n == nil {
		return time.Time{}, false
	}
	for _, p := range n.past {
		if p.until.Add(w.cacheLag).Before(now) || !p.until.After(until) {
			continue
		}
		if e.pl.decide(p.node).mustRun {
			until, ok = p.until, true
		}
	}
	return until, ok
}

func (w *World) applyDS(ds *appsv1.DaemonSet, deleted bool) change {
	key := objectKey(ds.Namespace, ds.Name)
	if deleted {
		delete(w.dss, key)
		w.goneDS[key] = ds.UID
		return change{ds: key}
	}
	delete(w.goneDS, key)
	w.dss[key] = &dsEntry{ds: ds, rev: revisionOf(ds), pl: newPlacement(&ds.Spec.Template.Spec)}
	return change{ds: key}
}

func (w *World) applyPod(p *corev1.Pod, deleted bool, t time.Time) change {
	key := objectKey(p.Namespace, p.Name)
	old := w.pods[key]
	c := change{pod: key}
	if old != nil {
		c.owners = append(c.owners, old.owner)
		c.podNodes = append(c.podNodes, old.node)
		w.unindex(old)
	}
	if deleted {
		delete(w.pods, key)
		return c
	}
	e := &podEntry{pod: p, key: key, node: targetNode(p), placedAt: t}
	if ref := metav1.GetControllerOf(p); ref != nil {
		e.owner = ref.UID
	}
	firstSeen := old == nil || old.pod.UID != p.UID
	c.podNew = firstSeen
	if e.owner == "" {
		e.orphanedAt = t
		if !firstSeen && old.owner == "" && maps.Equal(old.pod.Labels, p.Labels) {
			e.orphanedAt = old.orphanedAt
		}
	}
	if firstSeen {
		e.firstRV = resourceVersion(p)
	} else {
		if old.node == e.node {
			e.placedAt = old.placedAt
		}
		e.readySince = old.readySince
		e.firstRV = old.firstRV
	}
	// Availability is defined by the API (podutil.IsPodAvailable): the Ready
	// condition's lastTransitionTime plus minReadySeconds. That time has
	// whole-second precision, so it may be up to a second before the event
	// arrived; judging by arrival instead would blame a correct controller
	// for acting on the API's own definition. A transition time from the
	// future (clock skew) is not trusted.
	switch ready, since := podReady(p); {
	case !ready:
		e.readySince = time.Time{}
	case e.readySince.IsZero() && !since.IsZero() && !since.After(t):
		e.readySince = since
	case e.readySince.IsZero():
		e.readySince = t
	}
	w.pods[key] = e
	w.index(e)
	c.owners = append(c.owners, e.owner)
	c.podNodes = append(c.podNodes, e.node)
	return c
}

func (w *World) index(e *podEntry) {
	if e.owner == "" {
		w.orphans[e.key] = e
		return
	}
	byNode := w.owned[e.owner]
	if byNode == nil {
		byNode = map[string]map[string]*podEntry{}
		w.owned[e.owner] = byNode
	}
	pods := byNode[e.node]
	if pods == nil {
		pods = map[string]*podEntry{}
		byNode[e.node] = pods
	}
	pods[e.key] = e
}

func (w *World) unindex(e *podEntry) {
	if e.owner == "" {
		delete(w.orphans, e.key)
		return
	}
	byNode := w.owned[e.owner]
	delete(byNode[e.node], e.key)
	if len(byNode[e.node]) == 0 {
		delete(byNode, e.node)
	}
	if len(byNode) == 0 {
		delete(w.owned, e.owner)
	}
}

// podsOn returns the pods controlled by uid that target node.
func (w *World) podsOn(uid types.UID, node string) map[string]*podEntry {
	return w.owned[uid][node]
}

// podNodes returns the target nodes of the pods controlled by uid.
func (w *World) podNodes(uid types.UID) []string { return sortedKeys(w.owned[uid]) }

// dsUID returns the UID of the live DaemonSet, or of the deleted one.
func (w *World) dsUID(key string) (types.UID, bool) {
	if e, ok := w.dss[key]; ok {
		return e.ds.UID, true
	}
	uid, ok := w.goneDS[key]
	return uid, ok
}

// targetNode is the node a pod is for: spec.nodeName, or for a pod not bound
// yet, the single metadata.name value of a matchFields In requirement, as
// upstream pins DaemonSet pods. "" when neither is there.
func targetNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchFields {
			if r.Key == "metadata.name" && r.Operator == corev1.NodeSelectorOpIn {
				if len(r.Values) != 1 {
					return ""
				}
				return r.Values[0]
			}
		}
	}
	return ""
}

// podReady reports the Ready condition and its last transition time.
func podReady(p *corev1.Pod) (bool, time.Time) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// splitOnMissingNode sorts the non-terminating pods on a node absent from
// the view by whose job their removal is. The controller's: late, created
// more than cacheLag after the node was seen deleted (or for a node never
// seen), and unbound, only pinned by node affinity (upstream's manage deletes
// those). The pod garbage collector's: forGC, bound and already there when
// the node was deleted. lateRV is the lowest first resourceVersion of the
// late pods (0 if any has none): a node of that name written before it may
// still be on its way (see withdrawReordered).
func (w *World) splitOnMissingNode(pods map[string]*podEntry, name string) (late, unbound, forGC int, lateRV uint64) {
	noRV := false
	goneAt, seen := w.goneNodes[name]
	for _, p := range pods {
		if p.pod.DeletionTimestamp != nil {
			continue
		}
		created := p.pod.CreationTimestamp.Time
		if created.IsZero() || p.placedAt.Before(created) {
			created = p.placedAt
		}
		switch {
		case !seen || created.After(goneAt.Add(w.cacheLag)):
			late++
			switch {
			case p.firstRV == 0:
				noRV = true
			case lateRV == 0 || p.firstRV < lateRV:
				lateRV = p.firstRV
			}
		case p.pod.Spec.NodeName == "":
			unbound++
		default:
			forGC++
		}
	}
	if noRV {
		lateRV = 0
	}
	return late, unbound, forGC, lateRV
}

// resourceVersion parses an object's resourceVersion. With one etcd behind
// the API server these numbers order every write of every kind, which the
// separate watch streams do not; 0 when it is not a number.
func resourceVersion(o metav1.Object) uint64 {
	rv, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	if err != nil {
		return 0
	}
	return rv
}
