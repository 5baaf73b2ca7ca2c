package oracle_test

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dsbench/dsbench/bench/oracle"
)

// choices turns fuzz bytes into small decisions.
type choices struct {
	b []byte
	i int
}

func (c *choices) pick(n int) int {
	if c.i >= len(c.b) {
		return 0
	}
	v := int(c.b[c.i]) % n
	c.i++
	return v
}

func (c *choices) done() bool { return c.i >= len(c.b) }

// FuzzCheckerAgreesWithEvaluate drives random event streams through the
// Checker and checks, after every event, that its incremental state agrees
// with Evaluate recomputed from scratch: convergence, and the nodes with open
// DuplicatePods, MissingPod and PodOnDeletedNode episodes; PodOnIneligibleNode
// must cover at least Evaluate's Ineligible nodes (it adds unexcused pods).
func FuzzCheckerAgreesWithEvaluate(f *testing.F) {
	for i := range 40 {
		seed := make([]byte, 300)
		for j := range seed {
			seed[j] = byte((i*7919 + j*104729 + j*j*31) % 251)
		}
		f.Add(seed)
	}
	f.Fuzz(randomStream)
}

// randomStream builds events from data and checks the Checker after each.
func randomStream(t *testing.T, data []byte) {
	ch := &choices{b: data}
	c := oracle.NewChecker(oracle.Config{})
	nodes := []string{"n1", "n2", "n3", "n4"}
	taints := []corev1.Taint{
		{Key: "x", Effect: corev1.TaintEffectNoSchedule},
		{Key: "y", Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeNetworkUnavailable, Effect: corev1.TaintEffectNoSchedule},
	}
	variants := []func(int64) *appsv1.DaemonSet{
		func(g int64) *appsv1.DaemonSet { return daemonSet("d", image(fmt.Sprint("pause:", g), g)) },
		func(g int64) *appsv1.DaemonSet {
			return daemonSet("d", image(fmt.Sprint("pause:", g), g), maxSurge(intstr.FromInt32(1)), maxUnavailable(intstr.FromInt32(0)))
		},
		func(g int64) *appsv1.DaemonSet { return daemonSet("d", image(fmt.Sprint("pause:", g), g), onDelete) },
		func(g int64) *appsv1.DaemonSet { return daemonSet("d", image(fmt.Sprint("pause:", g), g), minReady(2)) },
		func(g int64) *appsv1.DaemonSet {
			return daemonSet("d", image(fmt.Sprint("pause:", g), g), nodeSelector("role", "a"))
		},
		func(g int64) *appsv1.DaemonSet { return daemonSet("d", image(fmt.Sprint("pause:", g), g), hostNetwork) },
	}
	gen := int64(1)
	ds := variants[0](gen)
	var old []*appsv1.DaemonSet
	now := 0.0
	pods := map[string]*corev1.Pod{}
	seq := 0
	n := 0
	apply := func(kind oracle.EventKind, o runtime.Object) {
		if err := c.Apply(oracle.Event{Time: at(now), Kind: kind, Object: o}); err != nil {
			t.Fatal(err)
		}
		agree(t, c, n)
		openAgree(t, c, n)
		n++
	}
	apply(oracle.Added, ds)
	for !ch.done() {
		now += float64(ch.pick(5)) * 0.5
		switch ch.pick(8) {
		case 0: // node add or change
			opts := []nodeOpt{}
			if ch.pick(2) == 0 {
				opts = append(opts, withLabels("role", "a"))
			}
			if k := ch.pick(len(taints) + 2); k < len(taints) {
				tt := taints[k]
				opts = append(opts, withTaint(tt.Key, tt.Value, tt.Effect))
			}
			apply(oracle.Added, node(nodes[ch.pick(len(nodes))], opts...))
		case 1: // node delete
			apply(oracle.Deleted, node(nodes[ch.pick(len(nodes))]))
		case 2: // DaemonSet change
			old = append(old, ds)
			if ch.pick(2) == 0 {
				gen++
			}
			ds = variants[ch.pick(len(variants))](gen)
			apply(oracle.Modified, ds)
		case 3, 4: // new pod
			seq++
			target := append(slices.Clone(nodes), "gone", "")[ch.pick(len(nodes)+2)]
			opts := []podOpt{}
			if len(old) > 0 && ch.pick(2) == 0 {
				opts = append(opts, oldRev(old[ch.pick(len(old))]))
			}
			if ch.pick(6) == 0 {
				opts = append(opts, orphaned)
			}
			if ch.pick(3) == 0 && target != "" {
				opts = append(opts, pinned)
			}
			p := pod(ds, fmt.Sprint("p", seq), target, opts...)
			pods[p.Name] = p
			apply(oracle.Added, p)
		case 5, 6: // pod change
			if len(pods) == 0 {
				continue
			}
			names := slices.Sorted(mapKeys(pods))
			p := pods[names[ch.pick(len(names))]].DeepCopy()
			switch ch.pick(4) {
			case 0:
				ready(at(now - float64(ch.pick(3))))(p)
			case 1:
				notReady(p)
			case 2:
				terminating(p)
			case 3:
				failed(p)
			}
			pods[p.Name] = p
			apply(oracle.Modified, p)
		case 7: // pod delete
			if len(pods) == 0 {
				continue
			}
			names := slices.Sorted(mapKeys(pods))
			p := pods[names[ch.pick(len(names))]]
			delete(pods, p.Name)
			apply(oracle.Deleted, p)
		}
	}
}

// openAgree compares the Checker's open node episodes with Evaluate.
func openAgree(t *testing.T, c *oracle.Checker, i int) {
	t.Helper()
	v := c.Verdict(dsKey)
	if !v.Exists {
		return
	}
	open := map[oracle.Kind][]string{}
	for _, x := range c.OpenViolations() {
		if x.Kind != oracle.OrphanPod && x.Kind != oracle.Overunavailable {
			open[x.Kind] = append(open[x.Kind], x.Node)
		}
	}
	for k := range open {
		slices.Sort(open[k])
	}
	// Duplicates on nodes absent from the view are PodOnDeletedNode only.
	check := func(kind oracle.Kind, want []string) {
		t.Helper()
		if !slices.Equal(open[kind], want) {
			t.Fatalf("after event %d: open %s on %v, Evaluate says %v (%+v)", i, kind, open[kind], want, v)
		}
	}
	check(oracle.DuplicatePods, v.Duplicates)
	check(oracle.MissingPod, v.Missing)
	check(oracle.PodOnDeletedNode, v.OnDeletedNodes)
	for _, n := range v.Ineligible {
		if !slices.Contains(open[oracle.PodOnIneligibleNode], n) {
			t.Fatalf("after event %d: node %s ineligible for Evaluate, no open PodOnIneligibleNode (%v)", i, n, open)
		}
	}
}
