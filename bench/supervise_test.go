package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// deadComponents plays a cluster whose components die on cue: each call of
// ReviveDead returns the next entry of revive (then nothing).
type deadComponents struct {
	ClusterFaults
	calls  chan struct{}
	revive [][]string
	errs   []error
}

func (d *deadComponents) ReviveDead(context.Context) ([]string, error) {
	defer func() { d.calls <- struct{}{} }()
	if len(d.revive) == 0 {
		return nil, nil
	}
	got, err := d.revive[0], d.errs[0]
	d.revive, d.errs = d.revive[1:], d.errs[1:]
	return got, err
}

// The supervisor looks every SuperviseInterval and records what it started
// again, with when it found it gone and why a start failed; on a cluster the
// harness does not own it does nothing.
func TestSuperviseRecordsRestarts(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	cluster := &deadComponents{
		calls:  make(chan struct{}),
		revive: [][]string{nil, {"kube-scheduler"}, {"kube-controller-manager", "kube-scheduler"}},
		errs:   []error{nil, nil, errors.New("kwokctl start cluster: exit status 1")},
	}
	s := &runState{r: &Runner{conf: Config{ClusterFaults: cluster}, clock: clk}, sc: &scenarios.Scenario{}, which: Ours, run: &reports.Run{}}
	sup := s.supervise(t.Context())
	for range 3 {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(SuperviseInterval)
		<-cluster.calls
	}
	got := sup.finish()
	want := []reports.ClusterRestart{
		{Component: "kube-scheduler", At: t0.Add(2 * SuperviseInterval)},
		{Component: "kube-controller-manager", At: t0.Add(3 * SuperviseInterval), Error: "kwokctl start cluster: exit status 1"},
		{Component: "kube-scheduler", At: t0.Add(3 * SuperviseInterval), Error: "kwokctl start cluster: exit status 1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restarts (-want +got):\n%s", diff)
	}

	notOurs := &runState{r: &Runner{clock: clk}, sc: &scenarios.Scenario{}, which: Ours, run: &reports.Run{}}
	if got := notOurs.supervise(t.Context()).finish(); got != nil {
		t.Errorf("a cluster not ours: restarts %+v, want none", got)
	}
}
