package scenarios

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A write at the start and one every applyEvery within for, apply and edit
// in turn, each value new.
func TestConflictingWritersWrites(t *testing.T) {
	for _, tc := range []struct {
		name       string
		for_, each time.Duration
		want       []WriterWrite
	}{
		{"20s every 3s", 20 * time.Second, 3 * time.Second, []WriterWrite{
			{0, true, "step4-apply-1"}, {3 * time.Second, false, "step4-edit-2"}, {6 * time.Second, true, "step4-apply-3"},
			{9 * time.Second, false, "step4-edit-4"}, {12 * time.Second, true, "step4-apply-5"}, {15 * time.Second, false, "step4-edit-6"},
			{18 * time.Second, true, "step4-apply-7"}}},
		{"a write at for is not within it", 6 * time.Second, 3 * time.Second, []WriterWrite{
			{0, true, "step4-apply-1"}, {3 * time.Second, false, "step4-edit-2"}}},
		{"applyEvery beyond for: the first write only", time.Second, 3 * time.Second, []WriterWrite{{0, true, "step4-apply-1"}}},
		{"no pace", time.Second, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := ConflictingWriters{For: dur(tc.for_), ApplyEvery: dur(tc.each)}
			if diff := cmp.Diff(tc.want, w.Writes(4)); diff != "" {
				t.Errorf("Writes (-want +got):\n%s", diff)
			}
		})
	}
	if a, b := (ConflictingWriters{For: dur(time.Second), ApplyEvery: dur(time.Second)}).Writes(1), (ConflictingWriters{For: dur(time.Second), ApplyEvery: dur(time.Second)}).Writes(2); a[0].Value == b[0].Value {
		t.Errorf("two fault steps write the same value %q", a[0].Value)
	}
}

func writersDaemonSet() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "dsbench"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "agent", Image: "example.com/agent:v1", Env: []corev1.EnvVar{{Name: "LOG", Value: "info"}}},
					{Name: "sidecar", Image: "example.com/sidecar:v1"},
				}},
			},
		},
	}
}

// The apply configuration names the DaemonSet and owns WriterEnv of one
// container, nothing else: an apply of it leaves the image and the other
// variables to their managers.
func TestWriterApplyConfig(t *testing.T) {
	ds := writersDaemonSet()
	got, err := WriterApplyConfig(ds, &ConflictingWriters{DaemonSet: "agent", Container: "sidecar"}, "step1-apply-1")
	if err != nil {
		t.Fatal(err)
	}
	var cfg, want any
	if err := json.Unmarshal(got, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent","namespace":"dsbench"},
		"spec":{"template":{"spec":{"containers":[{"name":"sidecar","env":[{"name":"DSBENCH_WRITER","value":"step1-apply-1"}]}]}}}}`), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("apply configuration (-want +got):\n%s", diff)
	}
	if _, err := WriterApplyConfig(ds, &ConflictingWriters{DaemonSet: "agent"}, "x"); err == nil {
		t.Errorf("two containers and none named: want an error")
	}
}

// An edit sets the variable, adding it first and changing it after, and
// keeps the others; WriterValue reads it back.
func TestWithWriterValue(t *testing.T) {
	ds := writersDaemonSet()
	w := &ConflictingWriters{DaemonSet: "agent", Container: "agent"}
	if _, ok, err := WriterValue(ds, w); ok || err != nil {
		t.Fatalf("WriterValue of a fresh DaemonSet: set %v, %v", ok, err)
	}
	one, err := WithWriterValue(ds, w, "step1-apply-1")
	if err != nil {
		t.Fatal(err)
	}
	two, err := WithWriterValue(one, w, "step1-edit-2")
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.EnvVar{{Name: "LOG", Value: "info"}, {Name: WriterEnv, Value: "step1-edit-2"}}
	if diff := cmp.Diff(want, two.Spec.Template.Spec.Containers[0].Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if v, ok, err := WriterValue(two, w); v != "step1-edit-2" || !ok || err != nil {
		t.Errorf("WriterValue = %q, %v, %v", v, ok, err)
	}
	if len(ds.Spec.Template.Spec.Containers[0].Env) != 1 || len(one.Spec.Template.Spec.Containers[0].Env) != 2 {
		t.Errorf("the input DaemonSets were changed")
	}
}

func TestHasFault(t *testing.T) {
	s := &Scenario{Steps: []Step{
		{Create: &CreateStep{}},
		{Parallel: [][]Step{{{Pause: &Duration{time.Second}}}, {{Fault: &FaultStep{SlowAPI: &SlowAPI{WriteLatency: dur(time.Second), For: dur(time.Second)}}}}}},
	}}
	if !s.HasFault(FaultSlowAPI) {
		t.Errorf("a slowAPI in a parallel branch not found")
	}
	if s.HasFault(FaultConflictingWriters) || s.HasFault(FaultKillStorm) || s.HasFault(FaultWriteTimeouts) {
		t.Errorf("found a fault the scenario does not have")
	}
}

// The controller goes through the proxy when a fault acts there, and only
// then, wherever the step is nested.
func TestUsesAPIProxy(t *testing.T) {
	nested := func(f *FaultStep) *Scenario {
		return &Scenario{Steps: []Step{{Parallel: [][]Step{{{Pause: &Duration{time.Second}}}, {{Fault: f}}}}}}
	}
	for _, tc := range []struct {
		name string
		sc   *Scenario
		want bool
	}{
		{"no fault", &Scenario{Steps: []Step{{Create: &CreateStep{}}}}, false},
		{"slowAPI", nested(&FaultStep{SlowAPI: &SlowAPI{WriteLatency: dur(time.Second), For: dur(time.Second)}}), true},
		{"writeTimeouts", nested(&FaultStep{WriteTimeouts: &WriteTimeouts{Every: 3, For: dur(time.Second)}}), true},
		{"killStorm", nested(&FaultStep{KillStorm: &KillStorm{Kills: 1}}), false},
		{"apiServerRestart", nested(&FaultStep{APIServerRestart: &APIServerRestart{}}), false},
	} {
		if got := tc.sc.UsesAPIProxy(); got != tc.want {
			t.Errorf("%s: UsesAPIProxy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The validator follows the writers' templates: after a fault of three
// writes revisions 2 to 4 exist, and a rollback to 3 renumbers it 5.
func TestConflictingWritersRevisions(t *testing.T) {
	yaml := readmeTestHeader + `- fault: {conflictingWriters: {daemonSet: agent, for: 3s, statusEvery: 500ms, applyEvery: 1s}}
- rollback: {daemonSet: agent, toRevision: 3}
- rollback: {daemonSet: agent, toRevision: 3}
`
	_, _, err := LoadBytes("writers.yaml", []byte(yaml))
	verr, ok := errors.AsType[*ValidationError](err)
	if !ok || len(verr.Errors) != 1 {
		t.Fatalf("want one error, for the renumbered revision 3: %v", err)
	}
	if e := verr.Errors[0]; e.Path != "steps[3].rollback.toRevision" {
		t.Errorf("error at %s, want steps[3].rollback.toRevision: %v", e.Path, e)
	}
}

const readmeTestHeader = `apiVersion: dsbench.dev/v1alpha1
kind: Scenario
metadata: {name: writers}
cluster:
  pools:
  - {name: workers, count: 10}
workloads:
- inline:
    apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: agent}
    spec:
      selector: {matchLabels: {app: agent}}
      template:
        metadata: {labels: {app: agent}}
        spec:
          containers: [{name: agent, image: example.com/agent:v1}]
steps:
- create: {}
`
