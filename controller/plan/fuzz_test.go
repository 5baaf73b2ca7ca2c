package plan

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dsbench/dsbench/controller/internal/cputime"
)

// choices turns fuzz bytes into decisions; past the end every answer is 0.
type choices struct {
	data []byte
	pos  int
}

func (c *choices) intn(n int) int {
	if n <= 1 {
		return 0
	}
	if c.pos >= len(c.data) {
		return 0
	}
	b := int(c.data[c.pos])
	c.pos++
	return b % n
}

func (c *choices) bool() bool { return c.intn(2) == 1 }

// scenario builds a random but valid sync input: up to 8 nodes, up to 14 pods
// on them or on nodes that do not exist, any strategy.
func scenario(c *choices) Input {
	var opts []func(*appsv1.DaemonSet)
	switch c.intn(5) {
	case 0:
		opts = append(opts, onDelete)
	case 1, 2:
		vals := []intstr.IntOrString{intstr.FromInt32(0), intstr.FromInt32(1), intstr.FromInt32(2), intstr.FromInt32(3), intstr.FromString("30%"), intstr.FromString("100%")}
		opts = append(opts, maxUnavailable(vals[c.intn(len(vals))]))
	default:
		vals := []intstr.IntOrString{intstr.FromInt32(1), intstr.FromInt32(2), intstr.FromString("1%"), intstr.FromString("50%")}
		opts = append(opts, maxSurge(vals[c.intn(len(vals))]))
	}
	if c.bool() {
		opts = append(opts, nodeSelector("ds", "yes"))
	}
	if c.bool() {
		opts = append(opts, minReady(int32(c.intn(3)*5)))
	}
	if c.intn(4) == 0 {
		opts = append(opts, hostNetwork)
	}
	ds := newDaemonSet("ds", opts...)

	taints := []func(*corev1.Node){
		func(*corev1.Node) {},
		taint("dedicated", corev1.TaintEffectNoSchedule),
		taint("dedicated", corev1.TaintEffectNoExecute),
		taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule),
		taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule),
		cordon,
	}
	var nodes []*corev1.Node
	for i := range c.intn(9) {
		n := newNode(fmt.Sprintf("n%d", i), taints[c.intn(len(taints))])
		if c.intn(4) > 0 {
			n.Labels["ds"] = "yes"
		}
		nodes = append(nodes, n)
	}

	// Most nodes get a pod, so that manage often has nothing to do and the
	// rolling update runs; a few extra pods make duplicates and strays.
	var targets []string
	for _, n := range nodes {
		if c.intn(5) > 0 {
			targets = append(targets, n.Name)
		}
	}
	for range c.intn(6) {
		targets = append(targets, fmt.Sprintf("n%d", c.intn(10)))
	}
	var pods []*corev1.Pod
	for i, target := range targets {
		p := newPod(fmt.Sprintf("p%02d", i), target, created(t0.Add(-time.Duration(c.intn(4))*time.Minute)))
		switch c.intn(4) {
		case 0, 1:
			old(p)
		case 2:
			if c.bool() {
				hash("older")(p)
			}
		}
		if c.intn(6) == 0 {
			// Updated by the template generation only.
			p.Labels[TemplateGenerationLabelKey] = "1"
		}
		switch c.intn(12) {
		case 0:
			phase(corev1.PodFailed)(p)
		case 1:
			phase(corev1.PodSucceeded)(p)
		case 2:
			phase(corev1.PodPending)(p)
		case 3, 4:
			notReady(p)
		default:
			ready(t0.Add(-time.Duration(c.intn(12)) * time.Second))(p)
		}
		if c.intn(8) == 0 {
			terminating(p)
		}
		if c.intn(4) == 0 {
			pinned(p)
		}
		pods = append(pods, p)
	}

	in := input(ds, nodes, pods...)
	for range c.intn(3) {
		if in.Backoff.Entries == nil {
			in.Backoff.Entries = map[BackoffKey]BackoffEntry{}
		}
		in.Backoff.Entries[BackoffKey{Node: fmt.Sprintf("n%d", c.intn(10)), Generation: int64(c.intn(2))}] =
			BackoffEntry{Delay: time.Duration(1+c.intn(8)) * time.Second, LastUpdate: t0.Add(-time.Duration(c.intn(10)) * time.Second)}
	}
	return in
}

func shuffled(in Input, r *rand.Rand) Input {
	out := in
	out.Nodes = slices.Clone(in.Nodes)
	out.Pods = slices.Clone(in.Pods)
	r.Shuffle(len(out.Nodes), func(i, j int) { out.Nodes[i], out.Nodes[j] = out.Nodes[j], out.Nodes[i] })
	r.Shuffle(len(out.Pods), func(i, j int) { out.Pods[i], out.Pods[j] = out.Pods[j], out.Pods[i] })
	return out
}

// withKept returns in with the Facts and NodeIndex a caller would keep.
func withKept(in Input) Input {
	in.Facts = make([]PodFacts, len(in.Pods))
	for i, pod := range in.Pods {
		if pod != nil {
			in.Facts[i] = ReadPodFacts(pod)
		}
	}
	in.NodeIndex = NodeIndexOf(in.Nodes)
	return in
}

// checkInvariants checks a plan against rules derived independently of the
// planner's code paths.
func checkInvariants(t *testing.T, in Input, p Plan) {
	t.Helper()
	ds := in.DaemonSet
	shouldRun := map[string]bool{}
	exists := map[string]bool{}
	for _, n := range in.Nodes {
		exists[n.Name] = true
		shouldRun[n.Name], _ = NodeShouldRunDaemonPod(n, ds)
	}

	if !slices.IsSorted(p.Creates) || len(slices.Compact(slices.Clone(p.Creates))) != len(p.Creates) {
		t.Errorf("creates not sorted and unique: %v", p.Creates)
	}
	for _, node := range p.Creates {
		if !shouldRun[node] {
			t.Errorf("create on ineligible node %s", node)
		}
	}
	byName := map[string]*corev1.Pod{}
	for _, pod := range in.Pods {
		byName[pod.Name] = pod
	}
	deleted := map[string]bool{}
	for _, d := range p.Deletes {
		pod := byName[d.Name]
		if pod == nil {
			t.Errorf("delete of unknown pod %s", d.Name)
			continue
		}
		if deleted[d.Name] {
			t.Errorf("pod %s deleted twice", d.Name)
		}
		deleted[d.Name] = true
		if isTerminating(pod) {
			t.Errorf("pod %s is already terminating but deleted again", d.Name)
		}
		if target, _ := TargetNodeName(pod); target != d.Node || d.UID != pod.UID {
			t.Errorf("deletion %+v does not describe pod on %s", d, target)
		}
	}
	if p.RequeueAfter < 0 {
		t.Errorf("negative RequeueAfter %v", p.RequeueAfter)
	}
	for k := range p.Backoff.Entries {
		if !exists[k.Node] || k.Generation != ds.Generation {
			t.Errorf("stale backoff entry %+v kept", k)
		}
	}

	// Per node: what stays running after the plan.
	surge := allowsSurge(ds)
	type nodeView struct {
		availBefore, availAfter, alive, aliveUnbound int
	}
	view := map[string]*nodeView{}
	get := func(n string) *nodeView {
		if view[n] == nil {
			view[n] = &nodeView{}
		}
		return view[n]
	}
	for _, pod := range in.Pods {
		target, ok := TargetNodeName(pod)
		if !ok || isTerminating(pod) {
			continue
		}
		v := get(target)
		avail, _ := availableIn(pod, ds.Spec.MinReadySeconds, in.Now)
		if avail {
			v.availBefore++
		}
		if deleted[pod.Name] {
			continue
		}
		if avail {
			v.availAfter++
		}
		if !isTerminal(pod) {
			v.alive++
			if pod.Spec.NodeName == "" {
				v.aliveUnbound++
			}
		}
	}
	for _, node := range p.Creates {
		get(node).alive++
	}
	allowed := 1
	if surge {
		allowed = 2
	}
	lostByUpdate, unavailableBefore, unavailableAfter := 0, 0, 0
	for name, v := range view {
		if !exists[name] {
			// Bound pods of a missing node are the pod GC's (as upstream).
			if v.aliveUnbound > 0 {
				t.Errorf("node %s does not exist but keeps %d unbound pods", name, v.aliveUnbound)
			}
			continue
		}
		if v.alive > allowed {
			t.Errorf("node %s: %d pods remain after pruning (surge %v)", name, v.alive, surge)
		}
	}
	for _, n := range in.Nodes {
		if !shouldRun[n.Name] {
			continue
		}
		v := get(n.Name)
		if v.availBefore == 0 {
			unavailableBefore++
		}
		if v.availAfter == 0 {
			unavailableAfter++
		}
		if v.availBefore > 0 && v.availAfter == 0 {
			// Only duplicate pruning (oldest kept, as upstream) and the
			// rolling update without surge may take a node's last available pod.
			reasons := map[string]bool{}
			for _, d := range p.Deletes {
				if d.Node == n.Name {
					reasons[d.Reason] = true
				}
			}
			switch {
			case reasons[DuplicateDaemonPodReason]:
			case reasons[RollingUpdateReason] && !surge:
				lostByUpdate++
			default:
				t.Errorf("node %s lost its last available pod (reasons %v, surge %v)", n.Name, reasons, surge)
			}
		}
	}
	if lostByUpdate > 0 {
		desired := 0
		for _, n := range in.Nodes {
			if shouldRun[n.Name] {
				desired++
			}
		}
		_, maxUnav, err := UpdateLimits(ds, desired)
		if err != nil {
			t.Fatalf("UpdateLimits: %v", err)
		}
		if unavailableAfter > max(maxUnav, unavailableBefore) {
			t.Errorf("rolling update leaves %d nodes unavailable (was %d), maxUnavailable %d", unavailableAfter, unavailableBefore, maxUnav)
		}
	}

	// Surge: new pods next to still-available old ones never exceed maxSurge.
	if surge {
		upd := newUpdatedMatcher(ds, in.Hash)
		servingOld := map[string]bool{}
		for _, pod := range in.Pods {
			target, ok := TargetNodeName(pod)
			if !ok || isTerminating(pod) || upd.updated(pod) {
				continue
			}
			if avail, _ := availableIn(pod, ds.Spec.MinReadySeconds, in.Now); avail {
				servingOld[target] = true
			}
		}
		surging, desired := 0, 0
		for _, node := range p.Creates {
			if servingOld[node] {
				surging++
			}
		}
		for _, n := range in.Nodes {
			if shouldRun[n.Name] {
				desired++
			}
		}
		maxSurge, _, err := UpdateLimits(ds, desired)
		if err != nil {
			t.Fatalf("UpdateLimits: %v", err)
		}
		if surging > maxSurge {
			t.Errorf("%d surge creates next to available old pods, maxSurge %d", surging, maxSurge)
		}
	}

	// Status against an independent count.
	desired := int32(0)
	for _, n := range in.Nodes {
		if shouldRun[n.Name] {
			desired++
		}
	}
	s := p.Status
	if s.DesiredNumberScheduled != desired || s.NumberUnavailable != desired-s.NumberAvailable ||
		s.CurrentNumberScheduled > desired || s.NumberAvailable > s.NumberReady || s.UpdatedNumberScheduled > s.CurrentNumberScheduled {
		t.Errorf("inconsistent status %+v (desired %d)", s, desired)
	}
}

func FuzzComputeInvariants(f *testing.F) {
	r := rand.New(rand.NewSource(1))
	for range 40 {
		b := make([]byte, 96)
		r.Read(b)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := scenario(&choices{data: data})
		p1 := Compute(in)
		checkInvariants(t, in, p1)
		p2 := Compute(in)
		if diff := cmp.Diff(p1, p2); diff != "" {
			t.Fatalf("Compute is not deterministic (-first +second):\n%s", diff)
		}
		seed := int64(0)
		for _, b := range data {
			seed = seed*31 + int64(b)
		}
		p3 := Compute(shuffled(in, rand.New(rand.NewSource(seed))))
		if diff := cmp.Diff(p1, p3); diff != "" {
			t.Fatalf("Compute depends on input order (-sorted +shuffled):\n%s", diff)
		}
		// What a caller keeps between syncs changes nothing: the facts of
		// each pod and the index of the nodes, also of shuffled input.
		if diff := cmp.Diff(p1, Compute(withKept(in))); diff != "" {
			t.Fatalf("Compute with kept facts and node index differs (-read +kept):\n%s", diff)
		}
		if diff := cmp.Diff(p1, Compute(withKept(shuffled(in, rand.New(rand.NewSource(seed+1)))))); diff != "" {
			t.Fatalf("Compute with kept facts and node index of shuffled input differs (-read +kept):\n%s", diff)
		}
	})
}

// referenceManage is a deliberately simple, quadratic statement of the
// per-node rules without rolling update or backoff, to check Compute against.
func referenceManage(in Input) summary {
	ds := in.DaemonSet
	var s summary
	surge := allowsSurge(ds)
	existing := map[string]bool{}
	for _, node := range in.Nodes {
		existing[node.Name] = true
		run, stay := NodeShouldRunDaemonPod(node, ds)
		var here []*corev1.Pod
		for _, p := range in.Pods {
			if target, ok := TargetNodeName(p); ok && target == node.Name && !(isTerminal(p) && isTerminating(p)) {
				here = append(here, p)
			}
		}
		del := func(p *corev1.Pod, reason string) { s.Deletes = append(s.Deletes, node.Name+"/"+p.Name+" "+reason) }
		if run && len(here) == 0 {
			s.Creates = append(s.Creates, node.Name)
			continue
		}
		if !stay {
			for _, p := range here {
				if !isTerminating(p) {
					del(p, NodeNotEligibleReason)
				}
			}
			continue
		}
		// The first failed pod starts the node's backoff, which holds back
		// the others: only the oldest failed pod goes per sync (as upstream).
		var oldestFailed *corev1.Pod
		for _, p := range here {
			if !isTerminating(p) && p.Status.Phase == corev1.PodFailed && (oldestFailed == nil || podLess(p, oldestFailed)) {
				oldestFailed = p
			}
		}
		if oldestFailed != nil {
			del(oldestFailed, FailedDaemonPodReason)
			s.Events = append(s.Events, "Warning "+FailedDaemonPodReason)
		}
		var running []*corev1.Pod
		for _, p := range here {
			switch {
			case isTerminating(p):
			case p.Status.Phase == corev1.PodFailed:
			case p.Status.Phase == corev1.PodSucceeded:
				del(p, SucceededDaemonPodReason)
				s.Events = append(s.Events, "Normal "+SucceededDaemonPodReason)
			default:
				running = append(running, p)
			}
		}
		if surge && len(running) == 0 && run {
			s.Creates = append(s.Creates, node.Name)
		}
		if surge {
			continue // checked by table tests; the reference covers the plain case
		}
		// Bubble the oldest to the front, then delete the rest.
		for i := range running {
			if podLess(running[i], running[0]) {
				running[0], running[i] = running[i], running[0]
			}
		}
		for _, p := range running[min(1, len(running)):] {
			del(p, DuplicateDaemonPodReason)
		}
	}
	for _, p := range in.Pods {
		// Only never-bound pods of missing nodes; bound ones are the pod GC's.
		if target, ok := TargetNodeName(p); ok && !existing[target] && !isTerminating(p) && p.Spec.NodeName == "" {
			s.Deletes = append(s.Deletes, target+"/"+p.Name+" "+NodeNotFoundReason)
		}
	}
	slices.Sort(s.Creates)
	slices.Sort(s.Deletes)
	return s
}

func TestComputeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewSource(42))
	for i := range 3000 {
		b := make([]byte, 128)
		r.Read(b)
		in := scenario(&choices{data: b})
		onDelete(in.DaemonSet) // no rolling update; manage only
		in.Backoff = Backoff{}
		in.Now = t0
		got := summarize(Compute(in))
		got.RequeueAfter = 0
		slices.Sort(got.Deletes)
		slices.Sort(got.Events)
		want := referenceManage(in)
		slices.Sort(want.Events)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: Compute differs from the reference (-reference +Compute):\n%s", i, diff)
		}
	}
}

// BenchmarkCompute plans for nodes that each run a pod, but one in a hundred.
// In the /shuffled case the nodes and the pods come in random order, as a
// lister returns them: memory is then read in no order at all, where the
// other cases read the nodes and pods in the order they were allocated.
// cpu-ns/op is the process's CPU time per plan, steadier than ns/op on a
// machine shared with a cluster.
func BenchmarkCompute(b *testing.B) {
	for _, tc := range []struct {
		name  string
		nodes int
	}{{"nodes=5000", 5000}, {"nodes=5000/rolling", 5000}, {"nodes=5000/in-flight", 5000}, {"nodes=5000/kept", 5000},
		{"nodes=10000", 10000}, {"nodes=10000/rolling", 10000}, {"nodes=10000/shuffled", 10000}, {"nodes=10000/kept", 10000}, {"nodes=10000/kept-shuffled", 10000}} {
		b.Run(tc.name, func(b *testing.B) {
			ds := newDaemonSet("ds", maxUnavailable(intstr.FromString("10%")), nodeSelector("ds", "yes"),
				requiredTerms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}))
			nodes := make([]*corev1.Node, tc.nodes)
			var pods []*corev1.Pod
			for i := range nodes {
				nodes[i] = newNode(fmt.Sprintf("node-%05d", i), nodeLabels("ds", "yes", "zone", fmt.Sprint(i%3)),
					taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule))
				if i%100 == 0 {
					continue // a few nodes need a pod
				}
				p := newPod(fmt.Sprintf("ds-%05d", i), nodes[i].Name)
				if strings.HasSuffix(tc.name, "/rolling") && i%2 == 0 {
					old(p)
				}
				pods = append(pods, p)
			}
			in := input(ds, nodes, pods...)
			if strings.HasSuffix(tc.name, "/in-flight") {
				// A new DaemonSet's creates, all sent and none seen yet.
				in.Pods = nil
				in.InFlight.Creates = make(map[string]string, len(nodes))
				for _, n := range nodes {
					in.InFlight.Creates[n.Name] = curHash
				}
			}
			if strings.HasSuffix(tc.name, "shuffled") {
				in = shuffled(in, rand.New(rand.NewSource(1)))
			}
			if strings.Contains(tc.name, "/kept") {
				// What the controller's sync passes: the pods' facts and
				// the index of the nodes, both kept between syncs.
				in = withKept(in)
			}
			b.ReportAllocs()
			cpu := cputime.Must(b)
			for b.Loop() {
				Compute(in)
			}
			b.ReportMetric(float64(cputime.Must(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
