package controller

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/dsbench/dsbench/controller/plan"
)

// t0 is the fake clock's start; tests move it explicitly.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fixture is sample-controller's test fixture: objects go into the fake
// client and straight into the informer stores (the informers never run),
// then the test calls the handlers or the sync directly and checks the
// client's actions.
type fixture struct {
	t        testing.TB
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	c        *Controller

	allActions []core.Action   // every action seen, for checkPermissions
	delayed    *recordingQueue // the DaemonSet queue, recording AddAfter
}

// recordingQueue records AddAfter calls, which the fake clock would
// otherwise deliver on a goroutine of the delaying queue.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[string]
	mu    sync.Mutex
	after []string // "key after"
}

func (q *recordingQueue) AddAfter(key string, d time.Duration) {
	q.mu.Lock()
	q.after = append(q.after, fmt.Sprintf("%s %v", key, d))
	q.mu.Unlock()
	q.TypedRateLimitingInterface.AddAfter(key, d)
}

// takeAfter returns and clears the recorded AddAfter calls.
func (q *recordingQueue) takeAfter() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.after
	q.after = nil
	return out
}

func newFixture(t testing.TB, objs []runtime.Object, configure ...func(*Config)) *fixture {
	t.Helper()
	f := &fixture{
		t:        t,
		client:   newFakeClient(objs...),
		clock:    clocktesting.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(1000),
	}
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	conf := Config{
		Client:    f.client,
		Informers: f.factory,
		Clock:     f.clock,
		Recorder:  f.recorder,
		Workers:   1,
	}
	for _, fn := range configure {
		fn(&conf)
	}
	c, err := NewController(conf)
	if err != nil {
		t.Fatalf("NewController: %v", err)
	}
	f.delayed = &recordingQueue{TypedRateLimitingInterface: c.queue}
	c.queue = f.delayed
	// In place, so that a sync's calls come in one order: the pods', then
	// the status. TestSyncDoesNotWaitForPodWrites runs them as the
	// controller does.
	c.startWrite = func(fn func()) { fn() }
	f.c = c
	t.Cleanup(func() {
		c.queue.ShutDown()
		c.nodeQueue.ShutDown()
	})
	for _, obj := range objs {
		f.addToCache(obj)
	}
	t.Cleanup(f.checkPermissions)
	return f
}

// newFakeClient is fake.NewClientset plus generateName, which the fake
// tracker does not implement and the API server does.
func newFakeClient(objs ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objs...)
	var seq atomic.Int64
	client.PrependReactor("create", "pods", func(action core.Action) (bool, runtime.Object, error) {
		pod := action.(core.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" && pod.GenerateName != "" {
			n := seq.Add(1)
			pod.Name = fmt.Sprintf("%s%05d", pod.GenerateName, n)
			pod.UID = types.UID(fmt.Sprintf("created-%d", n))
		}
		return false, nil, nil
	})
	return client
}

// addToCache puts obj into its informer's store only (not the client).
func (f *fixture) addToCache(obj runtime.Object) {
	f.t.Helper()
	// As the informers of a running controller hold it.
	trimmed, err := trimObject(obj.DeepCopyObject())
	if err != nil {
		f.t.Fatal(err)
	}
	obj = trimmed.(runtime.Object)
	switch o := obj.(type) {
	case *appsv1.DaemonSet:
		err = f.factory.Apps().V1().DaemonSets().Informer().GetIndexer().Add(o)
	case *appsv1.ControllerRevision:
		err = f.factory.Apps().V1().ControllerRevisions().Informer().GetIndexer().Add(o)
	case *corev1.Pod:
		err = f.factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
	case *corev1.Node:
		err = f.factory.Core().V1().Nodes().Informer().GetIndexer().Add(o)
		f.c.nodesVersion.Add(1) // as the node handlers do, which tests may skip
	default:
		f.t.Fatalf("addToCache: unsupported %T", obj)
	}
	if err != nil {
		f.t.Fatalf("addToCache: %v", err)
	}
}

// sync runs one sync of key, its pod writes included, and returns its
// error or theirs.
func (f *fixture) sync(key string) error {
	f.t.Helper()
	err := f.c.syncDaemonSet(f.t.Context(), key)
	if err != nil {
		return err
	}
	return f.c.writeFailure(key)
}

// actions returns the client's actions since the last call, without the
// informers' list and watch calls.
func (f *fixture) actions() []core.Action {
	var out []core.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		out = append(out, a)
	}
	f.client.ClearActions()
	f.allActions = append(f.allActions, out...)
	return out
}

// checkPermissions fails the test if the controller made a call that
// RequiredClusterPermissions (and so deploy/clusterrole.yaml) lacks.
func (f *fixture) checkPermissions() {
	f.actions()
	for _, a := range f.allActions {
		res := a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			res += "/" + sub
		}
		if !allows(RequiredClusterPermissions, a.GetResource().Group, res, a.GetVerb()) {
			f.t.Errorf("the controller called %s %s, which RequiredClusterPermissions does not grant", a.GetVerb(), res)
		}
	}
}

// summarize renders actions as "verb resource[/sub] name-or-detail" lines
// for cmp.Diff.
func summarize(actions []core.Action) []string {
	var out []string
	for _, a := range actions {
		res := a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			res += "/" + sub
		}
		s := a.GetVerb() + " " + res
		switch a := a.(type) {
		case core.CreateAction:
			switch o := a.GetObject().(type) {
			case *corev1.Pod:
				s += " on " + targetNodeName(o)
			case metav1.Object:
				s += " " + o.GetName()
			}
		case core.UpdateAction:
			if o, ok := a.GetObject().(metav1.Object); ok {
				s += " " + o.GetName()
			}
		case core.PatchAction:
			s += " " + a.GetName()
		case core.DeleteAction:
			s += " " + a.GetName()
		case core.GetAction:
			s += " " + a.GetName()
		}
		out = append(out, s)
	}
	return out
}

// filterActions keeps the actions whose summary starts with prefix.
func filterActions(actions []core.Action, prefix string) []core.Action {
	var out []core.Action
	for i, s := range summarize(actions) {
		if strings.HasPrefix(s, prefix) {
			out = append(out, actions[i])
		}
	}
	return out
}

// events drains the fake recorder.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// queued returns the keys in the DaemonSet queue (ready now), sorted,
// leaving the queue empty. It never blocks.
func (f *fixture) queued() []string {
	var out []string
	for f.c.queue.Len() > 0 {
		k, _ := f.c.queue.Get()
		f.c.queue.Done(k)
		f.c.queue.Forget(k)
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// routeNodes processes every pending node event. It never blocks.
func (f *fixture) routeNodes() {
	for f.c.nodeQueue.Len() > 0 {
		f.c.processNextNodeEvent(f.t.Context())
	}
}

// Builders, in the spirit of upstream's newDaemonSet / newNode.

func newDaemonSet(name string, mutate ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	ds := &appsv1.DaemonSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   metav1.NamespaceDefault,
			UID:         types.UID("uid-" + name),
			Generation:  1,
			Annotations: map[string]string{"deprecated.daemonset.template.generation": "1"},
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
					MaxSurge:       ptr.To(intstr.FromInt32(0)),
				},
			},
			RevisionHistoryLimit: ptr.To[int32](10),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
					RestartPolicy: corev1.RestartPolicyAlways,
					DNSPolicy:     corev1.DNSClusterFirst,
				},
			},
		},
	}
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

func withNodeSelector(sel map[string]string) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = sel }
}

func newNode(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, ResourceVersion: "1"},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(t0),
		}}},
	}
}

// newPodFor is a running, ready daemon pod of ds on node, at the current
// revision hash.
func newPodFor(ds *appsv1.DaemonSet, name, node string) *corev1.Pod {
	pod := plan.NewPod(ds, currentHash(ds), node, plan.BindDirect)
	pod.Name = name
	pod.GenerateName = ""
	pod.UID = types.UID("uid-" + name)
	pod.ResourceVersion = "1"
	pod.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour)),
		}},
	}
	return pod
}

// orphan strips the ControllerRef.
func orphan(pod *corev1.Pod) *corev1.Pod {
	pod.OwnerReferences = nil
	return pod
}

func currentHash(ds *appsv1.DaemonSet) string {
	return plan.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
}

// currentRevision is the ControllerRevision a sync of ds would create.
func currentRevision(t testing.TB, ds *appsv1.DaemonSet) *appsv1.ControllerRevision {
	t.Helper()
	hp := plan.PlanHistory(ds, nil, nil)
	if hp.Err != nil || !hp.Create {
		t.Fatalf("PlanHistory: err %v, create %v", hp.Err, hp.Create)
	}
	rev := hp.Current.DeepCopy()
	rev.UID = types.UID("uid-" + rev.Name)
	rev.ResourceVersion = "1"
	return rev
}

func dsKey(ds *appsv1.DaemonSet) string {
	k, _ := cache.MetaNamespaceKeyFunc(ds)
	return k
}

// targetNodeName is plan.TargetNodeName, "" for no target.
func targetNodeName(p *corev1.Pod) string {
	n, _ := plan.TargetNodeName(p)
	return n
}
