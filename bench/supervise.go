package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dsbench/dsbench/reports"
)

// SuperviseInterval is how often a run looks for cluster components that
// exited. A component down for this long holds up at most this much of a
// run, and the run is left out of the statistics anyway.
const SuperviseInterval = time.Second

// supervisor starts again, as kubelet or systemd would, the local cluster's
// components that exit during a run, and records each restart: a run that
// lost kube-scheduler for a while measured the scheduler's absence, not the
// controller, and leaves the statistics (reports.CheckClusterRestart).
type supervisor struct {
	mu       sync.Mutex
	restarts []reports.ClusterRestart
	stop     context.CancelFunc
	done     chan struct{}
}

// reviveBeforeRun starts what died since the last run, before this one
// begins: not this run's concern, so only said on the progress line.
func (s *runState) reviveBeforeRun(ctx context.Context) error {
	cf := s.r.conf.ClusterFaults
	if cf == nil {
		return nil
	}
	revived, err := cf.ReviveDead(ctx)
	if err != nil {
		return fmt.Errorf("cluster components %v exited before the run and did not start again: %w", revived, err)
	}
	if len(revived) > 0 {
		s.progress("cluster components %v had exited since the last run; started them again", revived)
	}
	return nil
}

// supervise checks the cluster's components every SuperviseInterval until
// the returned supervisor is stopped. It does nothing on a cluster the
// harness does not own.
func (s *runState) supervise(ctx context.Context) *supervisor {
	sup := &supervisor{done: make(chan struct{})}
	cf := s.r.conf.ClusterFaults
	if cf == nil {
		close(sup.done)
		sup.stop = func() {}
		return sup
	}
	ctx, sup.stop = context.WithCancel(ctx)
	// Said without progress's read of the run, which Finish rewrites.
	say := func(string, ...any) {}
	if p := s.r.conf.Progress; p != nil {
		label := fmt.Sprintf("%s %s#%d: ", s.sc.Metadata.Name, s.which, s.run.Repetition)
		say = func(format string, args ...any) { p.Step(label + fmt.Sprintf(format, args...)) }
	}
	go func() {
		defer close(sup.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.r.clock.After(SuperviseInterval):
			}
			at := s.r.clock.Now()
			revived, err := cf.ReviveDead(ctx)
			if ctx.Err() != nil && len(revived) == 0 {
				return
			}
			if len(revived) > 0 {
				say("cluster components %v exited; started them again", revived)
			}
			sup.record(revived, at, err)
		}
	}()
	return sup
}

func (sup *supervisor) record(revived []string, at time.Time, err error) {
	sup.mu.Lock()
	defer sup.mu.Unlock()
	for _, comp := range revived {
		r := reports.ClusterRestart{Component: comp, At: at}
		if err != nil {
			r.Error = err.Error()
		}
		sup.restarts = append(sup.restarts, r)
	}
}

// finish stops the supervisor and returns the restarts it made.
func (sup *supervisor) finish() []reports.ClusterRestart {
	sup.stop()
	<-sup.done
	sup.mu.Lock()
	defer sup.mu.Unlock()
	return sup.restarts
}
