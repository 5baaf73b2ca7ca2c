package controller_test

// DaemonSets that are odd but valid (issue 13): no node admits the pods,
// maxUnavailable 100%, a template near the API's size limits, and a selector
// that pods of another controller also match. Each case runs on the shared
// KWOK cluster with a controller of its own, so that the controller's metrics
// count that case alone, and cleans up when it ends. In each the controller
// must settle without a hot loop (its syncs of the DaemonSet, its API writes
// and its failed syncs over a quiet window, read from its metrics) and touch
// no pod it does not own.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/dsbench/dsbench/controller"
	"github.com/dsbench/dsbench/controller/plan"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/kwok/kwoktest"
)

// Bounds of a settled controller over oddQuietWindow. It syncs a settled
// DaemonSet at most for the echo of its own last write, and writes nothing;
// a hot loop syncs and writes hundreds of times. A sync that keeps failing
// backs off, and would stay within these bounds: no sync may fail at all.
const (
	oddQuietWindow = 10 * time.Second
	maxQuietSyncs  = 5
	maxQuietWrites = 2
)

func TestIntegrationOddDaemonSets(t *testing.T) {
	kwoktest.Cluster(t) // skips under -short and without binaries, as newEnv would in each case
	tests := []struct {
		name string
		run  func(e *env)
	}{
		{"zero eligible nodes", oddZeroEligibleNodes},
		{"maxUnavailable 100%", oddMaxUnavailableAll},
		{"huge template", oddHugeTemplate},
		{"selector shared with another controller", oddSharedSelector},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(newEnv(t)) })
	}
}

// ---------------------------------------------------------------------------
// Zero eligible nodes.

// oddZeroEligibleNodes: ready nodes exist, but the nodeSelector names a pool
// that none of them is in. The status is all zeros and observes the current
// generation, no pod is ever created, and the controller then stays quiet.
func oddZeroEligibleNodes(e *env) {
	t := e.t
	ns := e.namespace("it-odd-zero")
	pool := kwok.NodePool{Prefix: "odd-zero", Count: 3}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	const nowhere = "odd-zero-nowhere"
	ds := e.createDS(newDS(ns, "agent", nowhere))
	for _, p := range []string{pool.Prefix, nowhere} {
		if got := e.eligibleNodes(p, ds); len(got) != 0 {
			t.Fatalf("nodes %v of pool %s admit the DaemonSet; the case needs none", got, p)
		}
	}

	e.waitStatus(ns, ds.Name, appsv1.DaemonSetStatus{})
	noPods := func(ctx context.Context) (bool, string, error) {
		list, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Name+" on "+kwoktest.PodNode(&p))
		}
		return len(names) == 0, fmt.Sprintf("pods %v", names), nil
	}
	total := e.requireQuiet(ds, "no pod is created", noPods)
	// From the start: the DaemonSet's creation, then the echoes of its
	// revision's creation and of its status write, about three syncs.
	if total.syncs > 2*maxQuietSyncs {
		t.Errorf("%v syncs of a DaemonSet with nothing to do since the controller started, want at most %d", total.syncs, 2*maxQuietSyncs)
	}

	got := e.getDS(ns, ds.Name)
	want := appsv1.DaemonSetStatus{ObservedGeneration: got.Generation}
	if d := cmp.Diff(want, got.Status); d != "" {
		t.Errorf("status after the quiet window (-want +got):\n%s", d)
	}
	// Upstream writes the history whatever the nodes: one revision.
	if revs := e.revisionsOf(ds); len(revs) != 1 {
		t.Errorf("%d ControllerRevisions, want 1", len(revs))
	}
}

// ---------------------------------------------------------------------------
// maxUnavailable 100%.

// oddMaxUnavailableAll: a rolling update that may take every node down at
// once replaces every pod, as upstream in a single sync, and never puts two
// pods on a node: with maxSurge 0 a new pod waits until the old one is gone.
func oddMaxUnavailableAll(e *env) {
	t := e.t
	// New pods take a second to become ready, so that the dip shows.
	e.applyStages(kwok.StageOptions{ReadyDelay: time.Second})
	ns := e.namespace("it-odd-all")
	pool := kwok.NodePool{Prefix: "odd-all", Count: 10}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	ds := e.createDS(newDS(ns, "agent", pool.Prefix, func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{
			Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{
				MaxUnavailable: ptr.To(intstr.FromString("100%")),
				MaxSurge:       ptr.To(intstr.FromInt32(0)),
			},
		}
	}))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	pods, err := e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	before := uidsByNode(pods)

	peak := 0 // nodes without a ready pod at once
	w := e.watchPods(ns, func(pods []*corev1.Pod) string {
		live, all, ready := map[string]int{}, map[string]int{}, map[string]bool{}
		for _, p := range pods {
			if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != ds.UID {
				continue
			}
			node := kwoktest.PodNode(p)
			all[node]++
			if p.DeletionTimestamp != nil {
				continue
			}
			live[node]++
			if kwoktest.PodReady(p) {
				ready[node] = true
			}
		}
		down := 0
		var problems []string
		for _, n := range nodes {
			if !ready[n] {
				down++
			}
			switch {
			case live[n] > 1:
				problems = append(problems, fmt.Sprintf("node %s has %d live pods", n, live[n]))
			case all[n] > 1:
				problems = append(problems, fmt.Sprintf("node %s has a new pod while an old one terminates (%d pods), maxSurge 0", n, all[n]))
			}
		}
		peak = max(peak, down)
		return strings.Join(problems, "; ")
	})
	e.updateDS(ns, ds.Name, setImage("example.com/agent:v2"))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	w.Stop()
	t.Logf("rollout: %d watch events, at most %d of %d nodes without a ready pod", w.Events(), peak, len(nodes))
	if w.Relists() > 0 {
		t.Errorf("the pod watch expired %d times: intermediate states were missed", w.Relists())
	}
	for _, v := range w.violations {
		t.Errorf("invariant violated: %s", v)
	}
	if peak != len(nodes) {
		t.Errorf("at most %d nodes were without a ready pod at once; with maxUnavailable 100%% upstream takes all %d down in one sync", peak, len(nodes))
	}
	pods, err = e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	for node, uid := range uidsByNode(pods) {
		if uid == before[node] {
			t.Errorf("the pod on %s was never replaced", node)
		}
	}
	if got := e.deletedByUs(plan.RollingUpdateReason); got != float64(len(nodes)) {
		t.Errorf("controller deleted %v pods for %s, want %d: one per node", got, plan.RollingUpdateReason, len(nodes))
	}
	e.requireQuiet(ds, "", nil)
}

// ---------------------------------------------------------------------------
// A huge template.

// The huge template's size. kube-apiserver refuses more than 256 KiB of
// annotations on an object (a pod template's are validated so), and request
// bodies over 3 MiB; etcd refuses a request over 1.5 MiB (its default
// --max-request-bytes, which kwokctl keeps). The template carries about
// 1 MB, 192 KiB of it as annotations and 800 KiB as the environment of eight
// containers, and each pod and the ControllerRevision carry it again: two
// thirds of what etcd takes, with room for what the API server adds to a pod.
const (
	hugeAnnotations     = 16
	hugeAnnotationBytes = 12 << 10
	hugeContainers      = 8
	hugeEnvPerContainer = 10
	hugeEnvBytes        = 10 << 10
	// hugeMinBytes is the least size of every object that carries the
	// template: the DaemonSet and its pods in protobuf, the revision's JSON.
	hugeMinBytes = 1_000_000
)

// hugeTemplate fills the pod template with annotations and containers whose
// values are fill repeated, all running image.
func hugeTemplate(fill byte, image string) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) {
		tmpl := &ds.Spec.Template
		tmpl.Annotations = map[string]string{}
		for i := range hugeAnnotations {
			tmpl.Annotations[fmt.Sprintf("it.dsbench.dev/huge-%02d", i)] = strings.Repeat(string(fill), hugeAnnotationBytes)
		}
		tmpl.Spec.Containers = nil
		for c := range hugeContainers {
			ctr := corev1.Container{Name: fmt.Sprintf("agent-%d", c), Image: image}
			for i := range hugeEnvPerContainer {
				ctr.Env = append(ctr.Env, corev1.EnvVar{Name: fmt.Sprintf("HUGE_%02d", i), Value: strings.Repeat(string(fill), hugeEnvBytes)})
			}
			tmpl.Spec.Containers = append(tmpl.Spec.Containers, ctr)
		}
	}
}

// oddHugeTemplate: a DaemonSet of about 1 MB is created, its pods and its
// ControllerRevision carry the template, a rollout to a second huge template
// completes, and with revisionHistoryLimit 0 the first revision goes.
func oddHugeTemplate(e *env) {
	t := e.t
	e = e.protobuf()
	ns := e.namespace("it-odd-huge")
	pool := kwok.NodePool{Prefix: "odd-huge", Count: 3}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	ds := e.createDS(newDS(ns, "agent", pool.Prefix, hugeTemplate('a', agentImage), func(ds *appsv1.DaemonSet) {
		ds.Spec.RevisionHistoryLimit = ptr.To[int32](0)
	}))
	t.Logf("the stored DaemonSet is %d bytes in protobuf", ds.Size())
	if ds.Size() < hugeMinBytes {
		t.Fatalf("the stored DaemonSet is %d bytes, want at least %d", ds.Size(), hugeMinBytes)
	}
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	e.checkHugePods(ds)
	first := e.checkHugeRevision(ds, 1)

	ds = e.updateDS(ns, ds.Name, hugeTemplate('b', "example.com/agent:v2"))
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	e.checkHugePods(ds)
	e.waitFor(convergeTimeout, "the first revision deleted (revisionHistoryLimit 0)", func(ctx context.Context) (bool, string, error) {
		var names []string
		for _, r := range e.revisionsOf(ds) {
			names = append(names, r.Name)
		}
		return len(names) == 1 && names[0] != first, fmt.Sprintf("revisions %v, the first %s", names, first), nil
	})
	e.checkHugeRevision(ds, 2)
	e.requireQuiet(ds, "", nil)
}

// protobuf is e with a client that speaks protobuf: the huge case lists
// megabytes of pods on every poll, and protobuf copies the long strings that
// JSON would scan and escape.
func (e *env) protobuf() *env {
	e.t.Helper()
	cfg := rest.CopyConfig(e.cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	c := *e
	c.client = client
	return &c
}

// checkHugePods checks that every pod of ds carries its template's
// annotations and environment. It never prints them.
func (e *env) checkHugePods(ds *appsv1.DaemonSet) {
	t := e.t
	t.Helper()
	pods, err := e.podsOf(e.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := ds.Spec.Template
	for _, p := range live(pods) {
		for k, v := range tmpl.Annotations {
			if p.Annotations[k] != v {
				t.Errorf("pod %s: annotation %s has %d bytes, not the template's %d", p.Name, k, len(p.Annotations[k]), len(v))
			}
		}
		if len(p.Spec.Containers) != len(tmpl.Spec.Containers) {
			t.Errorf("pod %s has %d containers, the template %d", p.Name, len(p.Spec.Containers), len(tmpl.Spec.Containers))
			continue
		}
		for i, c := range tmpl.Spec.Containers {
			if got := p.Spec.Containers[i]; got.Image != c.Image || !slices.Equal(got.Env, c.Env) {
				t.Errorf("pod %s: container %s (image %s, %d env vars) differs from the template's (image %s, %d env vars)", p.Name, got.Name, got.Image, len(got.Env), c.Image, len(c.Env))
			}
		}
		if p.Size() < hugeMinBytes {
			t.Errorf("pod %s is %d bytes, want at least %d", p.Name, p.Size(), hugeMinBytes)
		}
	}
}

// checkHugeRevision checks that ds has exactly one ControllerRevision, the
// current one, with the given revision number and the template in its data;
// it returns its name.
func (e *env) checkHugeRevision(ds *appsv1.DaemonSet, revision int64) string {
	t := e.t
	t.Helper()
	revs := e.revisionsOf(ds)
	if len(revs) != 1 {
		t.Fatalf("%d ControllerRevisions, want 1", len(revs))
	}
	r := revs[0]
	hash := plan.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	if r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash || r.Revision != revision {
		t.Errorf("revision %s: hash %q, number %d; want %q, %d", r.Name, r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey], r.Revision, hash, revision)
	}
	t.Logf("revision %s holds %d bytes of data", r.Name, len(r.Data.Raw))
	if len(r.Data.Raw) < hugeMinBytes {
		t.Errorf("revision %s holds %d bytes, want the template's at least %d", r.Name, len(r.Data.Raw), hugeMinBytes)
	}
	return r.Name
}

// revisionsOf lists the ControllerRevisions ds controls, by name.
func (e *env) revisionsOf(ds *appsv1.DaemonSet) []appsv1.ControllerRevision {
	e.t.Helper()
	list, err := e.client.AppsV1().ControllerRevisions(ds.Namespace).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []appsv1.ControllerRevision
	for _, r := range list.Items {
		if ref := metav1.GetControllerOf(&r); ref != nil && ref.UID == ds.UID {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ---------------------------------------------------------------------------
// A selector that another controller's pods also match.

// oddSharedSelector: before the DaemonSet exists, pods that match its
// selector run on some of its nodes: two controlled by another controller,
// and an orphan. The other controller is a ConfigMap: nothing in the cluster
// acts for it, where the ReplicaSet controller would delete or release a
// ReplicaSet's pods, and the garbage collector keeps its pods while it
// exists. The DaemonSet never writes the other controller's pods (their
// resourceVersion stays) and creates its own beside them; the orphan it
// adopts, as upstream, and then replaces, as it lacks the current template.
func oddSharedSelector(e *env) {
	t := e.t
	ns := e.namespace("it-odd-shared")
	pool := kwok.NodePool{Prefix: "odd-shared", Count: 4}
	nodes := e.addNodes(pool)
	e.waitSchedulable(nodes...)
	spec := newDS(ns, "agent", pool.Prefix)

	holder, err := e.client.CoreV1().ConfigMaps(ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-controller"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	otherRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: holder.Name, UID: holder.UID, Controller: ptr.To(true)}
	matching := func(name, node string, refs ...metav1.OwnerReference) *corev1.Pod {
		lbls := maps.Clone(spec.Spec.Selector.MatchLabels)
		lbls["it.dsbench.dev/made-by"] = "test"
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbls, OwnerReferences: refs},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "other", Image: "example.com/other:v1"}}},
		}
	}
	const orphan = "stray"
	made := []*corev1.Pod{matching("other-0", nodes[0], otherRef), matching("other-1", nodes[1], otherRef), matching(orphan, nodes[2])}
	for _, p := range made {
		if _, err := e.client.CoreV1().Pods(ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s: %v", p.Name, err)
		}
	}
	sel := labels.SelectorFromSet(spec.Spec.Selector.MatchLabels).String()
	foreign := map[string]corev1.Pod{} // as they were before the DaemonSet
	e.waitFor(convergeTimeout, "the test's pods running and ready", func(ctx context.Context) (bool, string, error) {
		list, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, "", err
		}
		var waiting []string
		clear(foreign)
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodRunning || !kwoktest.PodReady(&p) {
				waiting = append(waiting, fmt.Sprintf("%s (%s, ready %v)", p.Name, p.Status.Phase, kwoktest.PodReady(&p)))
			}
			if p.Name != orphan {
				foreign[p.Name] = p
			}
		}
		return len(list.Items) == len(made) && len(waiting) == 0, fmt.Sprintf("%d pods, waiting for %v", len(list.Items), waiting), nil
	})

	ours := func(p *corev1.Pod) bool {
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.APIVersion == "apps/v1" && ref.Kind == "DaemonSet" && ref.Name == spec.Name
	}
	adopted := false
	w := e.watchPods(ns, func(pods []*corev1.Pod) string {
		byName, live := map[string]*corev1.Pod{}, map[string]int{}
		for _, p := range pods {
			byName[p.Name] = p
			if ours(p) && p.DeletionTimestamp == nil {
				live[kwoktest.PodNode(p)]++
			}
		}
		var problems []string
		for _, name := range slices.Sorted(maps.Keys(foreign)) {
			if p := byName[name]; p == nil {
				problems = append(problems, fmt.Sprintf("the other controller's pod %s is gone", name))
			} else if was := foreign[name]; p.ResourceVersion != was.ResourceVersion {
				problems = append(problems, fmt.Sprintf("the other controller's pod %s was written (resourceVersion %s, was %s): %s", name, p.ResourceVersion, was.ResourceVersion, podChange(&was, p)))
			}
		}
		switch p := byName[orphan]; {
		case p != nil && ours(p):
			adopted = true
		case p != nil && p.DeletionTimestamp != nil:
			problems = append(problems, fmt.Sprintf("the orphan %s is being deleted without having been adopted", orphan))
		case p == nil && !adopted:
			problems = append(problems, fmt.Sprintf("the orphan %s is gone without having been adopted", orphan))
		}
		for _, n := range nodes {
			if live[n] > 1 {
				problems = append(problems, fmt.Sprintf("node %s has %d live pods of the DaemonSet", n, live[n]))
			}
		}
		return strings.Join(problems, "; ")
	})

	ds := e.createDS(spec)
	e.waitConverged(ns, ds.Name, converged{nodes: nodes})
	// The orphan, adopted without the current template, is the one pod the
	// rolling update replaces.
	e.waitDeletedByUs(plan.RollingUpdateReason, 0, 1)
	e.requireQuiet(ds, "", nil)
	w.Stop()
	t.Logf("%d watch events", w.Events())
	if w.Relists() > 0 {
		t.Errorf("the pod watch expired %d times: intermediate states were missed", w.Relists())
	}
	for _, v := range w.violations {
		t.Errorf("invariant violated: %s", v)
	}
	if !adopted {
		t.Errorf("the orphan %s, which matches the selector, was never adopted (upstream adopts it)", orphan)
	}
	if _, err := e.client.CoreV1().Pods(ns).Get(e.ctx, orphan, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the adopted orphan %s: %v; want it replaced", orphan, err)
	}
	for name, was := range foreign {
		p, err := e.client.CoreV1().Pods(ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("the other controller's pod %s: %v", name, err)
			continue
		}
		if p.ResourceVersion != was.ResourceVersion || p.DeletionTimestamp != nil || !cmp.Equal(p.OwnerReferences, was.OwnerReferences) {
			t.Errorf("the other controller's pod %s changed: %s", name, podChange(&was, p))
		}
	}
}

// podChange says how a pod's metadata changed, and who wrote it.
func podChange(was, now *corev1.Pod) string {
	var out []string
	if d := cmp.Diff(was.OwnerReferences, now.OwnerReferences); d != "" {
		out = append(out, "ownerReferences (-was +now):\n"+d)
	}
	if d := cmp.Diff(was.Labels, now.Labels); d != "" {
		out = append(out, "labels (-was +now):\n"+d)
	}
	if now.DeletionTimestamp != nil {
		out = append(out, "being deleted")
	}
	var managers []string
	for _, f := range now.ManagedFields {
		managers = append(managers, fmt.Sprintf("%s %s %s", f.Manager, f.Operation, f.Subresource))
	}
	out = append(out, fmt.Sprintf("field managers %v", managers))
	return strings.Join(out, "; ")
}

// ---------------------------------------------------------------------------
// Quiet.

// activity is what the controller has done so far, from its metrics.
type activity struct {
	syncs  float64            // syncs of one DaemonSet
	failed float64            // failed syncs of any DaemonSet
	writes map[string]float64 // API writes by "verb resource"
}

func (a activity) totalWrites() float64 {
	var n float64
	for _, v := range a.writes {
		n += v
	}
	return n
}

// since is a minus before, leaving out writes that did not change.
func (a activity) since(before activity) activity {
	out := activity{syncs: a.syncs - before.syncs, failed: a.failed - before.failed, writes: map[string]float64{}}
	for k, v := range a.writes {
		if d := v - before.writes[k]; d != 0 {
			out.writes[k] = d
		}
	}
	return out
}

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// activity reads the controller's metrics: its syncs of ds, its failed syncs
// and its API writes.
func (e *env) activity(ds *appsv1.DaemonSet) activity {
	e.t.Helper()
	mfs, err := e.ctrl.Metrics().Registry.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	a := activity{writes: map[string]float64{}}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			switch mf.GetName() {
			case controller.MetricsNamespace + "_daemonset_syncs_total":
				if l["namespace"] == ds.Namespace && l["name"] == ds.Name {
					a.syncs += m.GetCounter().GetValue()
				}
			case controller.MetricsNamespace + "_sync_duration_seconds":
				if l["result"] == "error" {
					a.failed += float64(m.GetHistogram().GetSampleCount())
				}
			case controller.MetricsNamespace + "_api_requests_total":
				if writeVerbs[l["verb"]] {
					a.writes[l["verb"]+" "+l["resource"]] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return a
}

// requireQuiet watches a settled DaemonSet for oddQuietWindow: the
// controller's syncs of it and its API writes must stay within the bounds,
// no sync may fail, and cond, if not nil, must hold throughout. It returns
// what the controller did from its start to the end of the window.
func (e *env) requireQuiet(ds *appsv1.DaemonSet, what string, cond func(ctx context.Context) (bool, string, error)) activity {
	t := e.t
	t.Helper()
	if cond == nil {
		what, cond = "nothing", func(context.Context) (bool, string, error) { return true, "", nil }
	}
	before := e.activity(ds)
	e.holdsFor(oddQuietWindow, what, cond)
	total := e.activity(ds)
	quiet := total.since(before)
	t.Logf("over %v of quiet: %v syncs of %s, %v failed syncs, writes %v; since the controller started: %v syncs, writes %v",
		oddQuietWindow, quiet.syncs, ds.Name, quiet.failed, quiet.writes, total.syncs, total.writes)
	if quiet.syncs > maxQuietSyncs {
		t.Errorf("the controller synced settled DaemonSet %s %v times in %v, want at most %d: a hot loop", ds.Name, quiet.syncs, oddQuietWindow, maxQuietSyncs)
	}
	if n := quiet.totalWrites(); n > maxQuietWrites {
		t.Errorf("the controller made %v API writes in %v while DaemonSet %s was settled (%v), want at most %d", n, oddQuietWindow, ds.Name, quiet.writes, maxQuietWrites)
	}
	if quiet.failed > 0 {
		t.Errorf("%v syncs failed in %v while DaemonSet %s was settled", quiet.failed, oddQuietWindow, ds.Name)
	}
	return total
}
