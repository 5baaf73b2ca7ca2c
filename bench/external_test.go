package bench

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// externalScenario creates a DaemonSet that selects none of the nodes: it
// converges as soon as it is seen, with nothing to place, so that no
// controller need act.
const externalScenario = `apiVersion: dsbench.dev/v1alpha1
kind: Scenario
metadata: {name: external}
cluster:
  pools:
  - {name: workers, count: 2}
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
          nodeSelector: {disk: none}
          containers:
          - {name: agent, image: example.com/agent:v1}
steps:
- create: {}
- waitConverged: {timeout: 30s}
`

// fakeRunner is a runner on a fake clientset that the harness does not own,
// with no binary for any controller: starting a process would fail.
func fakeRunner(owns bool) (*Runner, *fake.Clientset) {
	client := fake.NewClientset()
	// The fake tracker has no delete-collection; reset only needs it done.
	client.PrependReactor("delete-collection", "*", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	// No kwok: nodes are Ready as they are created.
	client.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		n := a.(k8stesting.CreateAction).GetObject().(*corev1.Node)
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		return false, nil, nil
	})
	return &Runner{conf: Config{OwnsCluster: owns, Binaries: map[Controller]string{}}, client: client, clock: clock.RealClock{}}, client
}

// A run of the external controller starts no process (there is no binary
// to start), plays and judges the scenario, and records nothing of a cost
// it did not measure: no API requests (nil, not zero), no CPU, no memory,
// no command line.
func TestExternalRunStartsNothing(t *testing.T) {
	sc, _, err := scenarios.LoadBytes("external.yaml", []byte(externalScenario))
	if err != nil {
		t.Fatal(err)
	}
	r, client := fakeRunner(false)
	run := r.Run(t.Context(), sc, External, 0)
	if run.Outcome != reports.OutcomeOK {
		t.Fatalf("outcome %s: %s", run.Outcome, run.Error)
	}
	if run.APIRequests != nil || run.Resources != (reports.Resources{}) || run.ControllerArgs != nil {
		t.Errorf("requests %v, resources %+v, args %q: want none measured", run.APIRequests, run.Resources, run.ControllerArgs)
	}
	if len(run.Steps) == 0 || !run.Steps[0].Converged || run.Controller != reports.ControllerExternal {
		t.Errorf("steps %+v of %s: want the create converged", run.Steps, run.Controller)
	}
	if v := Judge(&reports.Report{SchemaVersion: reports.SchemaVersion, Runs: []reports.Run{run}}, nil); !v.Pass {
		t.Errorf("verdict %+v: want the clean external run to pass", v)
	}
	created := false
	for _, a := range client.Actions() {
		created = created || a.GetVerb() == "create" && a.GetResource().Resource == "daemonsets"
	}
	if !created {
		t.Error("the run did not create the scenario's DaemonSet")
	}
	// The same run of ours needs its binary: the external run did not
	// skip starting a controller by luck.
	r, _ = fakeRunner(false)
	if run := r.Run(t.Context(), sc, Ours, 0); !strings.Contains(run.Error, "no binary for the ours controller") {
		t.Errorf("ours without a binary: %s %q, want no binary", run.Outcome, run.Error)
	}
}

// A scenario the external controller cannot play, or a cluster the harness
// owns, fails the run at once, before anything touches the cluster.
func TestExternalRunRefusedAtOnce(t *testing.T) {
	restart, _, err := scenarios.LoadLibrary("controller-restart")
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := scenarios.LoadBytes("external.yaml", []byte(externalScenario))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		sc   *scenarios.Scenario
		owns bool
		want string
	}{
		{"a controller step", restart, false, "scenario controller-restart kills the controller (step controller, steps[4])"},
		{"an owned cluster", plain, true, ExternalClusterReason},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, client := fakeRunner(tt.owns)
			start := time.Now()
			run := r.Run(t.Context(), tt.sc, External, 0)
			if run.Outcome != reports.OutcomeFailed || !strings.Contains(run.Error, tt.want) {
				t.Errorf("run %s %q, want failed with %q", run.Outcome, run.Error, tt.want)
			}
			if n := len(client.Actions()); n > 0 || time.Since(start) > time.Second {
				t.Errorf("%d calls to the cluster in %v before the refusal, want none at once", n, time.Since(start))
			}
			if Judge(&reports.Report{SchemaVersion: reports.SchemaVersion, Runs: []reports.Run{run}}, nil).Pass {
				t.Error("a refused external run passes the verdict")
			}
		})
	}
}
