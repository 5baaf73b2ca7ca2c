package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

const writersScenario = `apiVersion: dsbench.dev/v1alpha1
kind: Scenario
metadata: {name: writers}
cluster:
  pools:
  - {name: workers, count: 3}
workloads:
- inline:
    apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: agent, namespace: dsbench}
    spec:
      selector: {matchLabels: {app: agent}}
      template:
        metadata: {labels: {app: agent}}
        spec:
          containers:
          - {name: agent, image: example.com/agent:v1, env: [{name: LOG, value: info}]}
steps:
- create: {}
- fault: {conflictingWriters: {daemonSet: agent, for: 300ms, statusEvery: 50ms, applyEvery: 100ms}}
`

// statusOnly makes the fake clientset's status updates change the status
// alone, as the API server's status subresource does.
func statusOnly(cs *fake.Clientset) {
	gvr := appsv1.SchemeGroupVersion.WithResource("daemonsets")
	cs.PrependReactor("update", "daemonsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		in := a.(k8stesting.UpdateAction).GetObject().(*appsv1.DaemonSet)
		obj, err := cs.Tracker().Get(gvr, in.Namespace, in.Name)
		if err != nil {
			return true, nil, err
		}
		cur := obj.(*appsv1.DaemonSet).DeepCopy()
		cur.Status = in.Status
		return true, cur, cs.Tracker().Update(gvr, cur, in.Namespace)
	})
}

// The writers alternate a server-side apply and an edit of the template on
// their schedule, write the bogus status in between, leave the rest of the
// DaemonSet alone, and find the last template kept.
func TestConflictingWriters(t *testing.T) {
	sc, _, err := scenarios.LoadBytes("writers.yaml", []byte(writersScenario))
	if err != nil {
		t.Fatal(err)
	}
	ds := sc.DaemonSets()[0].DeepCopy()
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 3,
		NumberReady: 3, NumberAvailable: 3, ObservedGeneration: 1}
	cs := fake.NewClientset(ds)
	statusOnly(cs)
	s := &runState{r: &Runner{client: cs, clock: clock.RealClock{}}, sc: sc, run: &reports.Run{}}
	st := &sc.Steps[1]

	var rec reports.Fault
	vis, err := s.conflictingWriters(t.Context(), st.Fault.ConflictingWriters, st.Index, &rec)
	if err != nil {
		t.Fatal(err)
	}
	want := reports.Fault{DaemonSet: "dsbench/agent", Injected: 3, StatusWrites: 5, LastValue: "step1-apply-3"}
	if diff := cmp.Diff(want, rec); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if vis["dsbench/agent"] == nil {
		t.Errorf("visibility %v: want the last template's generation for dsbench/agent", vis)
	}

	var writes []string
	for _, a := range cs.Actions() {
		switch a := a.(type) {
		case k8stesting.PatchAction:
			writes = append(writes, string(a.GetPatchType()))
		case k8stesting.UpdateAction:
			if a.GetSubresource() == "" {
				writes = append(writes, "update")
			}
		}
	}
	if diff := cmp.Diff([]string{string(types.ApplyPatchType), "update", string(types.ApplyPatchType)}, writes); diff != "" {
		t.Errorf("template writes (-want +got):\n%s", diff)
	}

	got, err := cs.AppsV1().DaemonSets("dsbench").Get(t.Context(), "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Spec.Template.Spec.Containers[0]
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "LOG", Value: "info"}, {Name: scenarios.WriterEnv, Value: "step1-apply-3"}}, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if c.Image != "example.com/agent:v1" {
		t.Errorf("image %q: the writers changed it", c.Image)
	}
	if st := got.Status; st.NumberReady != 0 || st.NumberAvailable != 0 || st.NumberUnavailable != 3 || st.ObservedGeneration != 1 {
		t.Errorf("status %+v: want the bogus one, observedGeneration kept", st)
	}
	var managers []string
	for _, m := range got.ManagedFields {
		managers = append(managers, m.Manager+"/"+string(m.Operation))
	}
	// The last write, a forced apply, took the variable back from the edit,
	// which owned nothing else.
	if !slices.Contains(managers, WriterApplyManager+"/Apply") || slices.Contains(managers, WriterEditManager+"/Update") {
		t.Errorf("managed fields %v: want %s/Apply and no %s", managers, WriterApplyManager, WriterEditManager)
	}
}

// A DaemonSet that does not hold the last value written lost an update, and
// the fault says which.
func TestLostUpdate(t *testing.T) {
	w := &scenarios.ConflictingWriters{DaemonSet: "agent"}
	with := func(env ...corev1.EnvVar) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "dsbench", Generation: 9},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Env: env}}}}}}
	}
	for _, tc := range []struct {
		name string
		ds   *appsv1.DaemonSet
		want string // in the detail; "" for none
	}{
		{"kept", with(corev1.EnvVar{Name: scenarios.WriterEnv, Value: "step1-apply-7"}), ""},
		{"an older value", with(corev1.EnvVar{Name: scenarios.WriterEnv, Value: "step1-edit-6"}),
			`DaemonSet dsbench/agent at generation 9 has DSBENCH_WRITER="step1-edit-6"; the last template write (generation 8) set "step1-apply-7"`},
		{"none", with(), `DaemonSet dsbench/agent at generation 9 has no DSBENCH_WRITER`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lostUpdate(tc.ds, w, "step1-apply-7", 8)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("lostUpdate = %q, want %q", got, tc.want)
			}
		})
	}
}

// The bogus status counts nothing ready, whatever the real one said, and
// keeps observedGeneration; the input is not changed.
func TestBogusStatus(t *testing.T) {
	ds := &appsv1.DaemonSet{Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 5, CurrentNumberScheduled: 5, UpdatedNumberScheduled: 5,
		NumberReady: 5, NumberAvailable: 5, ObservedGeneration: 4}}
	got := bogusStatus(ds).Status
	want := appsv1.DaemonSetStatus{DesiredNumberScheduled: 5, CurrentNumberScheduled: 5, NumberUnavailable: 5, ObservedGeneration: 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bogus status (-want +got):\n%s", diff)
	}
	if ds.Status.NumberReady != 5 {
		t.Errorf("the input was changed")
	}
}

// Validation keeps the writers' template writes at most the oracle's status
// lag apart, so that their bogus status is never judged between two of them
// (scenarios.MaxApplyEvery says why); the two must not drift apart.
func TestMaxApplyEveryWithinStatusLag(t *testing.T) {
	if scenarios.MaxApplyEvery > StatusLag {
		t.Errorf("scenarios.MaxApplyEvery %v is more than StatusLag %v", scenarios.MaxApplyEvery, StatusLag)
	}
}
