package plan

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Reasons for events (as upstream) and for deletions.
const (
	// SelectingAllReason: the selector is empty; nothing else is done.
	SelectingAllReason = "SelectingAll"
	// SelectingAllMessage is upstream's message for SelectingAllReason.
	SelectingAllMessage = "This daemon set is selecting all pods. A non-empty selector is required."
	// FailedDaemonPodReason: a pod failed and is deleted (event and deletion reason).
	FailedDaemonPodReason = "FailedDaemonPod"
	// SucceededDaemonPodReason: a pod exited and is deleted (event and deletion reason).
	SucceededDaemonPodReason = "SucceededDaemonPod"
	// InvalidUpdateStrategyReason: maxSurge or maxUnavailable cannot be used;
	// the rolling update is skipped.
	InvalidUpdateStrategyReason = "InvalidUpdateStrategy"

	// DuplicateDaemonPodReason: an excess pod on a node (the oldest stays).
	DuplicateDaemonPodReason = "DuplicateDaemonPod"
	// NodeNotEligibleReason: the node no longer admits the pod (affinity,
	// nodeName, or an untolerated NoExecute taint).
	NodeNotEligibleReason = "NodeNotEligible"
	// NodeNotFoundReason: the pod is pinned to a node that does not exist
	// and was never bound (bound pods of deleted nodes are the pod GC's).
	NodeNotFoundReason = "NodeNotFound"
	// RollingUpdateReason: an old pod replaced by the rolling update.
	RollingUpdateReason = "RollingUpdate"
	// SurgeReplacedReason: an old pod whose surge replacement is available, or
	// which is not ready next to its replacement.
	SurgeReplacedReason = "SurgeReplaced"
)

// Input is everything one sync of one DaemonSet decides from.
type Input struct {
	DaemonSet *appsv1.DaemonSet // as stored (defaults applied by the apiserver); never mutated
	Nodes     []*corev1.Node    // all nodes, any order
	// NodeIndex, when not nil, is NodeIndexOf(Nodes), kept by the caller
	// for as long as its list of nodes; the plan never modifies it.
	NodeIndex map[string]int
	Pods      []*corev1.Pod // pods this DS controls (after adoption), any order, incl. terminating
	// Facts, when its length is that of Pods, holds ReadPodFacts of each
	// pod, kept by the caller between syncs; otherwise the plan reads them.
	Facts    []PodFacts
	Hash     string   // current revision hash (from history)
	InFlight InFlight // the caller's writes not yet in Pods
	Backoff  Backoff  // failed-pod backoff state, carried between syncs by the caller
	Now      time.Time
}

// InFlight is what the caller has written and not yet seen in Pods. The
// plan lays it over Pods, as the pods will be once the writes are seen: a
// create is a new pod on its node, not yet available; a deleted pod is
// terminating. So the rolling update's budget counts them, no second pod is
// planned beside one in flight, and the caller may plan again before its
// writes are seen. The status counts Pods only: it reports what exists.
type InFlight struct {
	Creates map[string]string   // node name -> template hash of the pod created there
	Deletes map[string]struct{} // names of pods, in the DaemonSet's namespace, being deleted
}

// Empty reports whether nothing is in flight.
func (f InFlight) Empty() bool { return len(f.Creates) == 0 && len(f.Deletes) == 0 }

// Plan is what one sync decided. Everything is sorted.
type Plan struct {
	Creates      []string               // node names that need a daemon pod now, sorted; caller applies burst caps
	Deletes      []PodDeletion          // sorted by (Node, Name); each with a Reason constant
	Status       appsv1.DaemonSetStatus // full status to write (conditions copied from input)
	Events       []Event                // {Type: Normal|Warning, Reason: XxxReason const, Message}
	RequeueAfter time.Duration          // 0 = none; e.g. minReadySeconds, backoff expiry
	Backoff      Backoff                // state out
	// Idle: no writes are in flight, the plan creates and deletes nothing,
	// and every pod that is not terminating runs the current template. A
	// pod's readiness then changes only the status, until a pod, node or
	// DaemonSet changes otherwise: no rolling update waits on it.
	Idle bool
}

// PodDeletion is one pod to delete.
type PodDeletion struct {
	Namespace, Name string
	UID             types.UID
	Node            string
	Reason          string
}

// Event is an event to record on the DaemonSet.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
}

// nodeState is one node name seen in the nodes or as a pod's target.
type nodeState struct {
	name           string
	exists         bool
	shouldRun      bool
	shouldContinue bool
	pods           []podState // oldest first; terminal pods already being deleted are left out
	// first backs pods for the usual single pod, so that a plan costs no
	// allocation per node.
	first [1]podState
}

func (st *nodeState) nodeName() string { return st.name }

// podState is a pod with what the plan reads of it, read once when the pods
// are grouped: status, manage and the rolling update each look at a node's
// pods, and at 10k nodes a pod's labels and conditions are no longer in the
// cache when the next of them comes to read them.
type podState struct {
	*corev1.Pod
	failed      bool // phase Failed
	succeeded   bool // phase Succeeded
	terminating bool
	bound       bool          // spec.nodeName is set
	hash        string        // the controller-revision-hash label
	updated     bool          // runs the current template (updatedMatcher)
	ready       bool          // IsPodReady
	available   bool          // ready for minReadySeconds at Now (availableIn)
	wait        time.Duration // until available, if ready but not yet
}

// planner holds one sync's nodes in no particular order: the nodes as
// given, then the names only pods target. Nothing it decides may depend on
// that order. Creates and deletes are sorted at the end; where a decision
// takes the first nodes by name (the rolling update's budget), it selects
// them by name (firstByName), and manage's events are sorted by node.
type planner struct {
	*scratch
	in Input
	ds *appsv1.DaemonSet
	// index is in.NodeIndex when it fits the nodes; the states of names
	// only pods target are then in states.
	index   map[string]int
	updated updatedMatcher
	backoff Backoff
	creates []string
	deletes []PodDeletion
	events  []Event
	requeue time.Duration

	nodeEvents []nodeEvent // manage's events, until sorted by node
	oldPods    int         // pods not terminating that run another template

	inFlightPods map[*corev1.Pod]struct{} // the creates in flight, as pods
	held         int                      // deletions of pods in flight, left for when they are seen
}

// Compute plans one sync of in.DaemonSet, following upstream's syncDaemonSet:
// manage (create, prune, delete), then the rolling update, and the status.
// It runs in O(nodes + pods) plus sorting what it returns, evaluating each
// node once.
//
// The rolling update runs only when manage deletes nothing: its budget is
// counted from the pods as they are, which a deletion would change. Upstream
// gets the same effect from its expectations, which also hold the update back
// for a sync after creates; we do not wait for those, as manage creates only
// on nodes without pods, which the update already counts as unavailable, and a
// create that keeps failing would otherwise stall the rollout.
func Compute(in Input) Plan {
	ds := in.DaemonSet
	out := Plan{Status: *ds.Status.DeepCopy()}
	if SelectsAll(ds.Spec.Selector) {
		// Upstream stops here, before status; so do we.
		out.Backoff = in.Backoff.gc(in.Now, ds.Generation, func(string) bool { return true })
		out.Events = []Event{{Type: corev1.EventTypeWarning, Reason: SelectingAllReason,
			Message: SelectingAllMessage}}
		return out
	}
	if ds.DeletionTimestamp != nil {
		// Revisions may be gone already; upstream computes nothing for a DaemonSet being deleted.
		out.Backoff = in.Backoff.gc(in.Now, ds.Generation, func(string) bool { return true })
		return out
	}

	p := newPlanner(in)
	defer p.scratch.put()
	p.status(&out.Status)
	p.addInFlight()
	p.manage()
	if len(p.deletes) == 0 && p.held == 0 && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		p.rollingUpdate()
	}
	out.Status.ObservedGeneration = ds.Generation

	slices.Sort(p.creates)
	out.Creates = slices.Compact(p.creates)
	slices.SortFunc(p.deletes, func(a, b PodDeletion) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.UID, b.UID))
	})
	out.Deletes = slices.CompactFunc(p.deletes, func(a, b PodDeletion) bool {
		return a.Node == b.Node && a.Name == b.Name && a.Namespace == b.Namespace && a.UID == b.UID
	})
	out.Events = p.events
	out.RequeueAfter = p.requeue
	out.Backoff = p.backoff
	out.Idle = in.InFlight.Empty() && len(out.Creates) == 0 && len(out.Deletes) == 0 && p.oldPods == 0
	return out
}

// addInFlight lays the writes in flight over the pods (see InFlight), after
// the status has been counted. A create is not laid where its node already
// holds a live pod of its hash: that is the pod, seen between the caller's
// reading of its writes and of its cache. Creates for nodes that are gone
// are left out: nothing is planned for them.
func (p *planner) addInFlight() {
	if len(p.in.InFlight.Deletes) > 0 {
		for _, st := range p.order {
			for i := range st.pods {
				ps := &st.pods[i]
				if _, ok := p.in.InFlight.Deletes[ps.Name]; ok && ps.Namespace == p.ds.Namespace && !ps.terminating {
					ps.terminating = true
					if !ps.updated {
						p.oldPods--
					}
				}
			}
			// As newPlanner: a terminal pod being deleted is no longer the node's.
			st.pods = slices.DeleteFunc(st.pods, func(ps podState) bool {
				return ps.terminating && (ps.failed || ps.succeeded)
			})
		}
	}
	// One pod per hash stands for every create of that hash: the plan only
	// reads it, and a new DaemonSet's thousands of creates in flight would
	// otherwise cost a pod and its labels each, at every sync until seen.
	var byHash map[string]podState
	for node, hash := range p.in.InFlight.Creates {
		st := p.state(node)
		if st == nil || !st.exists || st.holdsLive(hash) {
			continue
		}
		ps, ok := byHash[hash]
		if !ok {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Namespace:         p.ds.Namespace,
				Labels:            map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hash},
				CreationTimestamp: metav1.NewTime(p.in.Now),
			}}
			ps = podState{Pod: pod, hash: hash, updated: p.updated.updated(pod)}
			if byHash == nil {
				byHash = map[string]podState{}
				p.inFlightPods = map[*corev1.Pod]struct{}{}
			}
			byHash[hash] = ps
			p.inFlightPods[pod] = struct{}{}
		}
		if st.pods == nil {
			st.pods = st.first[:0]
		}
		// Unbound and the youngest: last in podLess's order, as sorted.
		st.pods = append(st.pods, ps)
	}
}

// holdsLive reports whether a pod of the hash that is not terminating is on st.
func (st *nodeState) holdsLive(hash string) bool {
	for _, ps := range st.pods {
		if !ps.terminating && ps.hash == hash {
			return true
		}
	}
	return false
}

// SelectsAll reports an empty selector. Validation forbids it and a nil one;
// upstream warns only for the empty one, we treat nil the same (it is just as
// unusable).
func SelectsAll(s *metav1.LabelSelector) bool {
	return s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0)
}

func newPlanner(in Input) *planner {
	ds := in.DaemonSet
	p := &planner{
		scratch: getScratch(len(in.Nodes)),
		in:      in,
		ds:      ds,
		updated: newUpdatedMatcher(ds, in.Hash),
	}
	p.addNodes(in.Nodes)
	kept := len(in.Facts) == len(in.Pods)
	for i, pod := range in.Pods {
		if pod == nil {
			continue
		}
		var f PodFacts
		if kept {
			f = in.Facts[i]
		} else {
			f = ReadPodFacts(pod)
		}
		if (f.Failed || f.Succeeded) && f.Terminating {
			// Kubelet or pod GC finishes these; nothing left for us to do.
			continue
		}
		if !f.HasNode {
			continue // as upstream: a pod with no node target is not ours to place
		}
		st := p.state(f.Node)
		if st == nil {
			st = &nodeState{name: f.Node}
			p.states[f.Node] = st
			p.order = append(p.order, st)
		}
		if st.pods == nil {
			st.pods = st.first[:0]
		}
		ps := p.readPod(pod, &f)
		st.pods = append(st.pods, ps)
		if !ps.terminating {
			p.requeueAfter(ps.wait) // when a ready pod becomes available
			if !ps.updated {
				p.oldPods++
			}
		}
	}
	for _, st := range p.order {
		if len(st.pods) > 1 {
			slices.SortFunc(st.pods, func(a, b podState) int {
				switch {
				case podLess(a.Pod, b.Pod):
					return -1
				case podLess(b.Pod, a.Pod):
					return 1
				}
				return 0
			})
		}
	}
	p.backoff = in.Backoff.gc(in.Now, ds.Generation, func(node string) bool {
		st := p.state(node)
		return st != nil && st.exists
	})
	return p
}

// addNodes records every node with its eligibility. Of nodes with the same
// name (a lister never returns them) the first counts; checking for them
// before each insert would double the map work, so they are looked for only
// when the map ends up smaller than the nodes. With the caller's NodeIndex
// no map is built: at 5000 nodes that was a fifth of a sync.
func (p *planner) addNodes(nodes []*corev1.Node) {
	elig := newEligibility(p.ds)
	indexed := p.in.NodeIndex != nil
	for i, node := range nodes {
		if i%readAhead == 0 {
			p.loaded += loadNodes(nodes[i:min(i+readAhead, len(nodes))])
		}
		if node == nil {
			continue
		}
		st := &p.slab[i]
		st.name, st.exists = node.Name, true
		st.shouldRun, st.shouldContinue = elig.check(node)
		if !indexed {
			p.states[node.Name] = st
		}
		p.order = append(p.order, st)
	}
	if indexed && len(p.in.NodeIndex) == len(p.order) {
		p.index = p.in.NodeIndex
		return
	}
	if len(p.states) == len(p.order) {
		return
	}
	// Duplicate names, or an index that does not fit the nodes: a map of
	// the first node of each name.
	clear(p.states)
	p.order = p.order[:0]
	for i, node := range nodes {
		if node == nil {
			continue
		}
		if _, dup := p.states[node.Name]; dup {
			continue
		}
		p.states[node.Name] = &p.slab[i]
		p.order = append(p.order, &p.slab[i])
	}
}

// state returns the state of the node or pod target name, nil if none.
func (p *planner) state(name string) *nodeState {
	if p.index != nil {
		if i, ok := p.index[name]; ok {
			return &p.slab[i]
		}
	}
	return p.states[name]
}

// NodeIndexOf maps each node's name to its position in nodes; of nodes
// with the same name, the first.
func NodeIndexOf(nodes []*corev1.Node) map[string]int {
	index := make(map[string]int, len(nodes))
	for i, node := range nodes {
		if node == nil {
			continue
		}
		if _, dup := index[node.Name]; !dup {
			index[node.Name] = i
		}
	}
	return index
}

// readAhead is how many nodes addNodes loads ahead of the one it works on.
// A lister returns the nodes in no order of their memory, and the work on a
// node waits on one cache miss after another; loading the next nodes in a
// loop that does nothing else has the CPU fetch them in parallel. At 10k
// nodes in random order that saves a fifth of Compute.
const readAhead = 32

// loadNodes reads the fields of each node that eligibility starts from and
// returns a sum of them, so that the compiler keeps the reads.
func loadNodes(nodes []*corev1.Node) int {
	sum := 0
	for _, n := range nodes {
		if n != nil {
			sum += len(n.Name) + len(n.Labels) + len(n.Spec.Taints)
		}
	}
	return sum
}

// scratch is a sync's working memory, kept for later syncs: at 10k nodes it
// is over a megabyte, and collecting it cost a fifth of Compute. Nothing in a
// Plan points into it.
type scratch struct {
	slab   []nodeState           // the nodes' states, by position in Input.Nodes
	states map[string]*nodeState // every state by node name
	order  []*nodeState          // every state: the nodes, then names only pods target

	// The rolling update's candidates, its longest lists during a rollout.
	candidatePods  []nodePod
	candidateNodes []*nodeState

	loaded int // loadNodes's sums, never read
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// getScratch returns an empty scratch with a slab for n nodes.
func getScratch(n int) *scratch {
	s := scratchPool.Get().(*scratch)
	if cap(s.slab) < n {
		s.slab = make([]nodeState, n)
		s.order = make([]*nodeState, 0, n)
	}
	if s.states == nil {
		s.states = make(map[string]*nodeState, n)
	}
	s.slab = s.slab[:n]
	return s
}

// put empties s, so that it keeps no nodes or pods alive, and returns it to
// the pool.
func (s *scratch) put() {
	clear(s.slab)
	clear(s.states)
	clear(s.order)
	s.order = s.order[:0]
	clear(s.candidatePods)
	s.candidatePods = s.candidatePods[:0]
	clear(s.candidateNodes)
	s.candidateNodes = s.candidateNodes[:0]
	scratchPool.Put(s)
}

func (p *planner) readPod(pod *corev1.Pod, f *PodFacts) podState {
	available, wait := f.availableIn(p.ds.Spec.MinReadySeconds, p.in.Now)
	return podState{
		Pod:         pod,
		failed:      f.Failed,
		succeeded:   f.Succeeded,
		terminating: f.Terminating,
		bound:       f.Bound,
		hash:        f.Hash,
		updated:     p.updated.updatedLabels(f.Hash, f.Generation),
		ready:       f.Ready,
		available:   available,
		wait:        wait,
	}
}

func (p *planner) requeueAfter(d time.Duration) {
	if d > 0 && (p.requeue == 0 || d < p.requeue) {
		p.requeue = d
	}
}

func (p *planner) backoffKey(node string) BackoffKey {
	return BackoffKey{Node: node, Generation: p.ds.Generation}
}

// create plans a pod on st. The failed-pod backoff never delays a create: as
// upstream, it holds back only the deletion of a Failed pod, so a node whose
// failed pod is gone gets its replacement on the next sync.
func (p *planner) create(st *nodeState) {
	p.creates = append(p.creates, st.name)
}

func (p *planner) delete(st *nodeState, pod *corev1.Pod, reason string) {
	if _, ok := p.inFlightPods[pod]; ok {
		p.held++ // not created yet: decided again once it is seen
		return
	}
	p.deletes = append(p.deletes, PodDeletion{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Node: st.name, Reason: reason})
}

// manage is upstream's manage/podsShouldBeOnNode for every node, plus the
// deletion of unbound pods pinned to nodes that do not exist.
func (p *planner) manage() {
	surge := allowsSurge(p.ds)
	for _, st := range p.order {
		switch {
		case !st.exists:
			// As upstream: only pods never bound (pinned by affinity, which no
			// scheduler can now satisfy) are ours to delete. Bound pods are
			// left to the pod garbage collector, which confirms with the API
			// server that the node is gone: our cache may be older than a
			// node that was re-created, or than one a kubelet re-registered.
			for _, pod := range st.pods {
				if !pod.terminating && !pod.bound {
					p.delete(st, pod.Pod, NodeNotFoundReason)
				}
			}
		case st.shouldRun && len(st.pods) == 0:
			p.create(st)
		case st.shouldContinue:
			p.manageRunning(st, surge)
		case len(st.pods) > 0:
			for _, pod := range st.pods {
				if !pod.terminating {
					p.delete(st, pod.Pod, NodeNotEligibleReason)
				}
			}
		}
	}
	// In node-name order, whatever the order of the nodes.
	slices.SortStableFunc(p.nodeEvents, func(a, b nodeEvent) int { return cmp.Compare(a.node, b.node) })
	for _, e := range p.nodeEvents {
		p.events = append(p.events, e.Event)
	}
}

// nodeEvent is an event about one node's pods.
type nodeEvent struct {
	node string
	Event
}

// manageRunning handles a node that may keep its pods: terminated pods go,
// duplicates are pruned, and under surge a missing pod is created even while
// an old one terminates.
func (p *planner) manageRunning(st *nodeState, surge bool) {
	var running []*podState
	for i := range st.pods {
		pod := &st.pods[i]
		if pod.terminating {
			continue
		}
		switch {
		case pod.failed:
			// Kubelets may reject a pod over and over; back off per node.
			key := p.backoffKey(st.name)
			if left := p.backoff.remaining(key, p.in.Now); left > 0 {
				p.requeueAfter(left)
				continue
			}
			p.backoff.next(key, p.in.Now)
			p.nodeEvents = append(p.nodeEvents, nodeEvent{st.name, Event{Type: corev1.EventTypeWarning, Reason: FailedDaemonPodReason,
				Message: fmt.Sprintf("Found failed daemon pod %s/%s on node %s, will try to kill it", pod.Namespace, pod.Name, st.name)}})
			p.delete(st, pod.Pod, FailedDaemonPodReason)
		case pod.succeeded:
			p.nodeEvents = append(p.nodeEvents, nodeEvent{st.name, Event{Type: corev1.EventTypeNormal, Reason: SucceededDaemonPodReason,
				Message: fmt.Sprintf("Found succeeded daemon pod %s/%s on node %s, will try to delete it", pod.Namespace, pod.Name, st.name)}})
			p.delete(st, pod.Pod, SucceededDaemonPodReason)
		default:
			running = append(running, pod)
		}
	}

	if !surge {
		// Keep the oldest, as upstream.
		for _, pod := range running[min(1, len(running)):] {
			p.delete(st, pod.Pod, DuplicateDaemonPodReason)
		}
		return
	}
	if len(running) <= 1 {
		if len(running) == 0 && st.shouldRun {
			p.create(st)
		}
		return
	}
	// Under surge a node may hold the oldest new pod and the oldest old pod;
	// upstream tells them apart by the hash label alone here.
	var oldestNew, oldestOld *podState
	for _, pod := range running {
		if pod.hash == p.in.Hash {
			if oldestNew == nil {
				oldestNew = pod
				continue
			}
		} else if oldestOld == nil {
			oldestOld = pod
			continue
		}
		p.delete(st, pod.Pod, DuplicateDaemonPodReason)
	}
	if oldestNew == nil || oldestOld == nil {
		return
	}
	if !oldestOld.ready {
		p.delete(st, oldestOld.Pod, SurgeReplacedReason)
		return
	}
	if oldestNew.available {
		p.delete(st, oldestOld.Pod, SurgeReplacedReason)
	} else {
		p.requeueAfter(oldestNew.wait)
	}
}

// status is upstream's updateDaemonSetStatus: per existing node, the oldest
// pod decides readiness, availability and whether it is updated.
func (p *planner) status(s *appsv1.DaemonSetStatus) {
	var desired, current, misscheduled, ready, available, updated int32
	for _, st := range p.order {
		if !st.exists {
			continue
		}
		if !st.shouldRun {
			if len(st.pods) > 0 {
				misscheduled++
			}
			continue
		}
		desired++
		if len(st.pods) == 0 {
			continue
		}
		current++
		pod := &st.pods[0]
		if pod.ready {
			ready++
			if pod.available {
				available++
			}
		}
		if pod.updated {
			updated++
		}
	}
	s.DesiredNumberScheduled = desired
	s.CurrentNumberScheduled = current
	s.NumberMisscheduled = misscheduled
	s.NumberReady = ready
	s.NumberAvailable = available
	s.UpdatedNumberScheduled = updated
	s.NumberUnavailable = desired - available
}

// allowsSurge is upstream util.AllowsSurge: maxSurge scaled against one node.
func allowsSurge(ds *appsv1.DaemonSet) bool {
	n, err := surgeCount(ds, 1)
	return err == nil && n > 0
}

func surgeCount(ds *appsv1.DaemonSet, total int) (int, error) {
	r := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || r == nil || r.MaxSurge == nil {
		return 0, nil
	}
	return intstr.GetScaledValueFromIntOrPercent(r.MaxSurge, total, true)
}

func unavailableCount(ds *appsv1.DaemonSet, total int) (int, error) {
	r := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || r == nil {
		return 0, nil
	}
	return intstr.GetScaledValueFromIntOrPercent(r.MaxUnavailable, total, true)
}

// UpdateLimits returns maxSurge and maxUnavailable for desired nodes: ints or
// percentages of desired rounded up; if both are 0 (and desired > 0)
// maxUnavailable is 1, as upstream.
func UpdateLimits(ds *appsv1.DaemonSet, desired int) (maxSurge, maxUnavailable int, err error) {
	maxUnavailable, err = unavailableCount(ds, desired)
	if err != nil {
		return 0, 0, fmt.Errorf("scaling maxUnavailable: %w", err)
	}
	maxSurge, err = surgeCount(ds, desired)
	if err != nil {
		return 0, 0, fmt.Errorf("scaling maxSurge: %w", err)
	}
	if desired > 0 && maxUnavailable == 0 && maxSurge == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable, nil
}
