package oracle_test

import (
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dsbench/dsbench/bench/oracle"
)

// Small builders, in the spirit of upstream's newNode and newDaemonSet.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus sec seconds.
func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

type nodeOpt func(*corev1.Node)

func node(name string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name), Labels: map[string]string{"kubernetes.io/hostname": name}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func withLabels(kv ...string) nodeOpt {
	return func(n *corev1.Node) {
		for i := 0; i < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withTaint(key, value string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

func nodeRV(rv string) nodeOpt { return func(n *corev1.Node) { n.ResourceVersion = rv } }

func createdAt(t time.Time) nodeOpt {
	return func(n *corev1.Node) { n.CreationTimestamp = metav1.NewTime(t) }
}

type dsOpt func(*appsv1.DaemonSet)

// daemonSet is a defaulted RollingUpdate DaemonSet in namespace default,
// selecting app=<name>, maxUnavailable 1.
func daemonSet(name string, opts ...dsOpt) *appsv1.DaemonSet {
	one := intstr.FromInt32(1)
	zero := intstr.FromInt32(0)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("ds-" + name), Generation: 1,
			Annotations: map[string]string{appsv1.DeprecatedTemplateGeneration: "1"}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause:1"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one, MaxSurge: &zero},
			},
		},
	}
	for _, o := range opts {
		o(ds)
	}
	return ds
}

// image changes the template and bumps generation and template generation,
// as the apiserver does.
func image(img string, gen int64) dsOpt {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Image = img
		ds.Generation = gen
		ds.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: strconv.FormatInt(gen, 10)}
	}
}

func tolerate(ts ...corev1.Toleration) dsOpt {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Tolerations = append(ds.Spec.Template.Spec.Tolerations, ts...)
	}
}

func nodeSelector(kv ...string) dsOpt {
	return func(ds *appsv1.DaemonSet) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		ds.Spec.Template.Spec.NodeSelector = m
	}
}

func required(terms ...corev1.NodeSelectorTerm) dsOpt {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
		}}
	}
}

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

func field(op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: op, Values: values}}}
}

func hostNetwork(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = true }

func templateNodeName(name string) dsOpt {
	return func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = name }
}

func maxUnavailable(v intstr.IntOrString) dsOpt {
	return func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &v }
}

func maxSurge(v intstr.IntOrString) dsOpt {
	return func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = &v }
}

func onDelete(ds *appsv1.DaemonSet) {
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
}

func minReady(sec int32) dsOpt {
	return func(ds *appsv1.DaemonSet) { ds.Spec.MinReadySeconds = sec }
}

func deleting(ds *appsv1.DaemonSet) {
	now := metav1.NewTime(t0)
	ds.DeletionTimestamp = &now
}

type podOpt func(*corev1.Pod)

// pod is a pod of ds on nodeName (bound), of ds's current revision, Pending.
func pod(ds *appsv1.DaemonSet, name, nodeName string, opts ...podOpt) *corev1.Pod {
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ds.Namespace, Name: name, UID: types.UID("pod-" + name),
			Labels: map[string]string{"app": ds.Spec.Template.Labels["app"], appsv1.DefaultDaemonSetUniqueLabelKey: oracle.CurrentHash(ds)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec:   corev1.PodSpec{NodeName: nodeName},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// ready marks the pod Running and Ready since t.
func ready(t time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t)}}
	}
}

func notReady(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
}

func terminating(p *corev1.Pod) {
	now := metav1.NewTime(t0)
	p.DeletionTimestamp = &now
}

func failed(p *corev1.Pod) {
	p.Status.Phase = corev1.PodFailed
	p.Status.Conditions = nil
}

func hashLabel(h string) podOpt {
	return func(p *corev1.Pod) { p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = h }
}

func genLabel(g string) podOpt {
	return func(p *corev1.Pod) { p.Labels["pod-template-generation"] = g }
}

// oldRev labels the pod with the revision of an older DaemonSet.
func oldRev(old *appsv1.DaemonSet) podOpt { return hashLabel(oracle.CurrentHash(old)) }

// pinned moves the node from spec.nodeName to a matchFields affinity, as a
// pod created in scheduler mode looks before binding.
func pinned(p *corev1.Pod) {
	n := p.Spec.NodeName
	p.Spec.NodeName = ""
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{field(corev1.NodeSelectorOpIn, n)},
	}}}
}

func orphaned(p *corev1.Pod) { p.OwnerReferences = nil }

func podCreated(t time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}

// timeline collects events in order.
type timeline []oracle.Event

func (tl *timeline) add(sec float64, o runtime.Object) *timeline {
	*tl = append(*tl, oracle.Event{Time: at(sec), Kind: oracle.Added, Object: o})
	return tl
}

func (tl *timeline) mod(sec float64, o runtime.Object) *timeline {
	*tl = append(*tl, oracle.Event{Time: at(sec), Kind: oracle.Modified, Object: o})
	return tl
}

func (tl *timeline) del(sec float64, o runtime.Object) *timeline {
	*tl = append(*tl, oracle.Event{Time: at(sec), Kind: oracle.Deleted, Object: o})
	return tl
}

// feed applies the events to a new Checker, checking after every one that
// the incremental convergence agrees with Evaluate.
func feed(t *testing.T, cfg oracle.Config, evs []oracle.Event) *oracle.Checker {
	t.Helper()
	c := oracle.NewChecker(cfg)
	for i, ev := range evs {
		if err := c.Apply(ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		agree(t, c, i)
	}
	return c
}

// agree is the quick check: Checker.Converged must match Evaluate from
// scratch for every DaemonSet the world knows.
func agree(t *testing.T, c *oracle.Checker, i int) {
	t.Helper()
	for _, key := range c.World().DaemonSetKeys() {
		got, _ := c.Converged(key)
		if v := c.Verdict(key); got != v.Converged {
			t.Fatalf("after event %d: Checker.Converged(%s) = %v, Evaluate says %v: %+v", i, key, got, v.Converged, v)
		}
	}
}

// tenPercentRollout adds a DaemonSet d at maxUnavailable 10% and nodes n1
// to n<nodes>, each with a pod of it Ready since 0, and updates d's
// template at 5; it returns the old and the updated DaemonSet.
func tenPercentRollout(tl *timeline, nodes int) (old, upd *appsv1.DaemonSet) {
	old = daemonSet("d", maxUnavailable(intstr.FromString("10%")))
	upd = daemonSet("d", maxUnavailable(intstr.FromString("10%")), image("pause:2", 2))
	tl.add(0, old)
	for i := 1; i <= nodes; i++ {
		n := "n" + strconv.Itoa(i)
		tl.add(0, node(n)).add(0, pod(old, "p"+n, n, ready(at(0))))
	}
	tl.mod(5, upd)
	return old, upd
}
