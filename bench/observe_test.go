package bench

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/scenarios"
)

// The observe loop owns the core: concurrent steps reach it only through do,
// which it keeps serving after the watch ends, until quit.
func TestObserveLoopOwnsTheCore(t *testing.T) {
	sc := &scenarios.Scenario{}
	s := &runState{r: &Runner{clock: clocktesting.NewFakeClock(scriptT0)}, sc: sc, pools: map[string]*poolState{},
		core:    NewCore(CoreConfig{Scenario: sc, Oracle: oracleConfig(nil)}),
		calls:   make(chan func()),
		watcher: &Watcher{events: make(chan oracle.Event, 8)},
	}
	quit, observed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(observed)
		s.observe(t.Context(), quit)
	}()

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.do(func() { s.core.DaemonSetCreated(string(rune('a' + i))) })
		}()
	}
	for _, name := range []string{"n1", "n2"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name)}}
		s.watcher.events <- oracle.Event{Time: scriptT0, Kind: oracle.Added, Object: n}
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for nodes := 0; nodes < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the loop observed %d of 2 nodes", nodes)
		}
		s.do(func() { nodes = len(s.core.World().NodeNames()) })
	}
	close(s.watcher.events) // the watch ends; calls are still served
	var dss int
	s.do(func() { dss = len(s.core.dss) })
	if dss != 8 {
		t.Errorf("%d DaemonSets recorded by concurrent calls, want 8", dss)
	}
	close(quit)
	select {
	case <-observed:
	case <-time.After(10 * time.Second):
		t.Fatal("observe did not return after quit")
	}
}
