package bench

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/scenarios"
)

// A node that a concurrent leave took out of its pool is skipped; a node
// still in its pool that vanished, or any other error, is a real failure.
func TestLeftMeanwhileExcusesOnlyNodesThatLeft(t *testing.T) {
	st := &scenarios.Step{}
	s := &runState{pools: map[string]*poolState{"spot": {nodes: map[string]bool{"spot-1": true}}}}
	gone := func(name string) error {
		return fmt.Errorf("patching node %s: %w", name, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name))
	}
	if !s.leftMeanwhile(st, "spot-0", gone("spot-0")) {
		t.Error("spot-0 left its pool and is not found: want it skipped")
	}
	if s.leftMeanwhile(st, "spot-1", gone("spot-1")) {
		t.Error("spot-1 is still in its pool but not found: want an error, not a skip")
	}
	if s.leftMeanwhile(st, "spot-0", errors.New("connection refused")) {
		t.Error("an error other than NotFound was excused")
	}
	if got := s.skipped[st]; !slices.Equal(got, []string{"spot-0"}) {
		t.Errorf("skipped = %q, want [spot-0]", got)
	}
}

// The grace for a missing pod grows with the pods the cluster must make,
// and never applies to duplicates or over-unavailability.
func TestDefaultGraceGrowsWithNodesTimesDaemonSets(t *testing.T) {
	one, many := DefaultGrace(1000, 1), DefaultGrace(1000, 14)
	if got, want := one[oracle.MissingPod], 60*time.Second; got != want {
		t.Errorf("1000 nodes, 1 DaemonSet: MissingPod grace %s, want %s", got, want)
	}
	if got, want := many[oracle.MissingPod], 450*time.Second; got != want {
		t.Errorf("1000 nodes, 14 DaemonSets: MissingPod grace %s, want %s", got, want)
	}
	if DefaultGrace(100, 0)[oracle.MissingPod] != DefaultGrace(100, 1)[oracle.MissingPod] {
		t.Error("no DaemonSets should count as one")
	}
	for _, k := range []oracle.Kind{oracle.DuplicatePods, oracle.Overunavailable} {
		if many[k] != 0 {
			t.Errorf("%s has grace %s; a correct controller never causes it", k, many[k])
		}
	}
}

// The report states every grace that remains and the causal lag bounds, so
// that a reader can tell what the oracle allowed.
func TestOracleParamsStateTheGraces(t *testing.T) {
	p := OracleParams(100, 2)
	if got, want := p.GraceSeconds[string(oracle.MissingPod)], 36.0; got != want {
		t.Errorf("MissingPod grace %v s, want %v", got, want)
	}
	for _, k := range []oracle.Kind{oracle.DuplicatePods, oracle.Overunavailable} {
		if _, ok := p.GraceSeconds[string(k)]; ok {
			t.Errorf("%s is listed with a grace; it has none", k)
		}
	}
	if p.CacheLagSeconds != CacheLag.Seconds() || p.StatusLagSeconds != StatusLag.Seconds() || p.StallAfterSeconds != StallAfter.Seconds() {
		t.Errorf("lag bounds %+v do not match the oracle's configuration", p)
	}
}

// Every step kind of the scenario format has an entry in stepKinds.
func TestStepKindsCoverTheFormat(t *testing.T) {
	var st scenarios.Step
	v := reflect.ValueOf(&st).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 0, 0))
		}
	}
	kinds := st.Kinds()
	if len(kinds) == 0 {
		t.Fatalf("found %d kinds by setting every field of a Step: %v", len(kinds), kinds)
	}
	for _, k := range kinds {
		if _, ok := stepKinds[k]; !ok {
			t.Errorf("step kind %q has no entry in stepKinds", k)
		}
	}
	if len(stepKinds) != len(kinds) {
		t.Errorf("stepKinds has %d entries, the format %d kinds", len(stepKinds), len(kinds))
	}
}

// A node whose join is still in flight is no candidate for another step: a
// labels step in a parallel branch picked one in a chaos run and failed to
// patch it ("not found"). It becomes one once its create is acknowledged.
func TestJoiningNodesAreNoCandidatesUntilCreated(t *testing.T) {
	client := fake.NewClientset()
	sc := &scenarios.Scenario{Cluster: scenarios.Cluster{Pools: []scenarios.NodePool{{Name: "workers", Count: 1}}}}
	s := &runState{r: &Runner{clock: clocktesting.NewFakeClock(scriptT0), client: client}, sc: sc,
		core:  NewCore(CoreConfig{Scenario: sc, Oracle: oracleConfig(nil)}),
		pools: map[string]*poolState{"workers": {pool: sc.Cluster.Pools[0], next: 1, nodes: map[string]bool{"workers-0": true}}},
	}
	var (
		mu      sync.Mutex
		creates int
	)
	client.PrependReactor("create", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		name := action.(k8stesting.CreateAction).GetObject().(*corev1.Node).Name
		cands := s.candidates(&scenarios.NodeTarget{Pool: "workers"})
		mu.Lock()
		defer mu.Unlock()
		creates++
		if slices.Contains(cands, name) {
			t.Errorf("node %s is a candidate while its create is in flight: %q", name, cands)
		}
		if !slices.Contains(cands, "workers-0") {
			t.Errorf("candidates during a join lost an existing node: %q", cands)
		}
		return false, nil, nil
	})
	join := &scenarios.Step{Nodes: &scenarios.NodesStep{Action: scenarios.NodeJoin, NodeTarget: scenarios.NodeTarget{Pool: "workers", Count: 2}}}
	if _, err := s.nodes(t.Context(), join); err != nil {
		t.Fatal(err)
	}
	if creates != 2 {
		t.Fatalf("%d node creates, want 2", creates)
	}
	if got := s.candidates(&scenarios.NodeTarget{Pool: "workers"}); len(got) != 3 {
		t.Errorf("candidates after the join = %q, want 3 nodes", got)
	}
}

// A DaemonSet created while one of its name is still being deleted (cascade
// orphan waits for the garbage collector) is created once the old one is
// gone; a live one of that name, or one that never goes, is an error.
func TestCreateDaemonSetWaitsForOneBeingDeleted(t *testing.T) {
	newDS := func(deleting bool) *appsv1.DaemonSet {
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns"}}
		if deleting {
			ds.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			ds.Finalizers = []string{metav1.FinalizerOrphanDependents}
		}
		return ds
	}
	t.Run("waits for it to go", func(t *testing.T) {
		client := fake.NewClientset(newDS(true))
		gets := 0
		client.PrependReactor("get", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
			if gets++; gets == 3 { // the garbage collector finishes
				if err := client.Tracker().Delete(appsv1.SchemeGroupVersion.WithResource("daemonsets"), "ns", "agent"); err != nil {
					t.Fatal(err)
				}
			}
			return false, nil, nil
		})
		created, err := createDaemonSet(t.Context(), client, newDS(false), time.Minute, time.Millisecond)
		if err != nil || created.DeletionTimestamp != nil {
			t.Fatalf("createDaemonSet = %v, %v; want the new DaemonSet", created, err)
		}
		if gets < 3 {
			t.Errorf("created after %d looks, before the old one was gone", gets)
		}
	})
	t.Run("a live one is an error", func(t *testing.T) {
		client := fake.NewClientset(newDS(false))
		if _, err := createDaemonSet(t.Context(), client, newDS(false), time.Minute, time.Millisecond); !apierrors.IsAlreadyExists(err) {
			t.Errorf("err = %v, want AlreadyExists", err)
		}
	})
	t.Run("one that never goes", func(t *testing.T) {
		client := fake.NewClientset(newDS(true))
		_, err := createDaemonSet(t.Context(), client, newDS(false), 20*time.Millisecond, time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "still being deleted after 20ms (finalizers [orphan])") {
			t.Errorf("err = %v, want a bounded wait that names the finalizers", err)
		}
	})
}
