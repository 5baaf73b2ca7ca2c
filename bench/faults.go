package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsbench/dsbench/bench/apiproxy"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// RejectCreatesQuota is the ResourceQuota a rejectCreates fault creates.
const RejectCreatesQuota = "dsbench-reject-creates"

// fault injects a fault step's fault and hands its record to the Core,
// which judges it once the run's convergence is known.
func (s *runState) fault(ctx context.Context, st *scenarios.Step) (visibility, error) {
	rec := reports.Fault{Step: stepName(st), Kind: string(st.Fault.Kind()), Start: s.r.clock.Now()}
	before, beforeErr := s.apiCalls(ctx)
	var vis visibility
	var err error
	switch f := st.Fault; {
	case f.KillStorm != nil:
		rec.Injected, err = s.killStorm(ctx, f.KillStorm, faultRand(s.sc.Seed, st.Index))
	case f.APIServerRestart != nil:
		rec.Injected, err = s.apiServerRestart(ctx, f.APIServerRestart)
	case f.RejectCreates != nil:
		rec.Injected, err = s.rejectCreates(ctx, f.RejectCreates, &rec.StatusError)
		rec.MaxCallsPerMinute = f.RejectCreates.MaxCallsPerMinute
	case f.SlowAPI != nil:
		rec.Injected, err = s.slowAPI(ctx, f.SlowAPI, &rec)
	case f.WriteTimeouts != nil:
		rec.Injected, err = s.writeTimeouts(ctx, f.WriteTimeouts, &rec)
	case f.ConflictingWriters != nil:
		vis, err = s.conflictingWriters(ctx, f.ConflictingWriters, st.Index, &rec)
	default:
		err = fmt.Errorf("fault %q is not supported by the runner", f.Kind())
	}
	rec.End = s.r.clock.Now()
	after, afterErr := s.apiCalls(ctx)
	if beforeErr == nil && afterErr == nil {
		rec.APIRequests = after - before
		if d := rec.End.Sub(rec.Start); d > 0 {
			rec.CallsPerMinute = float64(rec.APIRequests) / d.Minutes()
		}
	} else {
		rec.APIRequests = -1 // unknown, never a made-up zero
	}
	s.do(func() { s.core.FaultEnded(rec) })
	return vis, err
}

// slowAPI delays the controller's requests at the proxy for a.For, then
// lifts the latency, also when the run is cancelled meanwhile.
func (s *runState) slowAPI(ctx context.Context, a *scenarios.SlowAPI, rec *reports.Fault) (int, error) {
	p := s.proxy
	if p == nil {
		return 0, errors.New("slowAPI: the controller does not talk to the API server through the harness's proxy")
	}
	l := apiproxy.Latency{Write: a.WriteLatency.Duration, Read: a.ReadLatency.Duration}
	rec.WriteLatencySeconds, rec.ReadLatencySeconds = l.Write.Seconds(), l.Read.Seconds()
	before := p.Counts().Delayed
	p.SetLatency(l)
	sleep(ctx, a.For.Duration)
	p.SetLatency(apiproxy.Latency{})
	rec.DelayedRequests = p.Counts().Delayed - before
	return 1, ctx.Err()
}

// writeTimeouts answers the controller's pod writes Timeout at the proxy
// for w.For, then lifts the fault and waits for the writes still to land
// (each within apiproxy.LateWriteTimeout); a cancelled run stops waiting,
// and the proxy's Close drops them. It returns how many writes were
// answered Timeout.
func (s *runState) writeTimeouts(ctx context.Context, w *scenarios.WriteTimeouts, rec *reports.Fault) (int, error) {
	p := s.proxy
	if p == nil {
		return 0, errors.New("writeTimeouts: the controller does not talk to the API server through the harness's proxy")
	}
	rec.LandAfterSeconds = w.LandAfter.Duration.Seconds()
	before := p.Counts()
	p.SetWriteTimeouts(apiproxy.WriteTimeouts{Every: w.Every, LandAfter: w.LandAfter.Duration})
	sleep(ctx, w.For.Duration)
	p.SetWriteTimeouts(apiproxy.WriteTimeouts{})
	for ctx.Err() == nil && p.Counts().Landing > 0 {
		sleep(ctx, 50*time.Millisecond)
	}
	after := p.Counts()
	rec.LandedWrites = after.Landed - before.Landed
	rec.LandFailures = after.LandFailed - before.LandFailed
	for why, n := range after.LandFailedBy {
		if d := n - before.LandFailedBy[why]; d > 0 {
			if rec.LandFailuresBy == nil {
				rec.LandFailuresBy = map[string]int64{}
			}
			rec.LandFailuresBy[why] = d
		}
	}
	return int(after.TimedOut - before.TimedOut), ctx.Err()
}

// ClusterFaults are the faults only a local cluster can suffer, and the
// supervision only a local cluster can get (kwok.Cluster implements them).
type ClusterFaults interface {
	RestartAPIServer(ctx context.Context, downtime time.Duration) error
	CompactEtcd(ctx context.Context) (revision int64, err error)
	// ReviveDead starts again the cluster's components whose process is
	// gone and returns which; none while RestartAPIServer runs.
	ReviveDead(ctx context.Context) ([]string, error)
}

// apiServerRestart compacts etcd if asked, then restarts the API server.
func (s *runState) apiServerRestart(ctx context.Context, a *scenarios.APIServerRestart) (int, error) {
	cf := s.r.conf.ClusterFaults
	if cf == nil {
		return 0, fmt.Errorf("apiServerRestart needs a local KWOK cluster, not --kubeconfig")
	}
	if a.Compact {
		rev, err := cf.CompactEtcd(ctx)
		if err != nil {
			return 0, err
		}
		s.progress("etcd compacted to revision %d", rev)
	}
	if err := cf.RestartAPIServer(ctx, a.Downtime.Duration); err != nil {
		return 0, err
	}
	return 1, nil
}

// faultRand is the fault's own random source: the same seed and step draw
// the same kills on every run, whatever else the scenario does.
func faultRand(seed int64, step int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(step)))
}

// draw picks a duration in [r.Min, r.Max] uniformly.
func draw(rng *rand.Rand, r scenarios.DurationRange) time.Duration {
	span := r.Max.Duration - r.Min.Duration
	if span <= 0 {
		return r.Min.Duration
	}
	return r.Min.Duration + time.Duration(rng.Int64N(int64(span)+1))
}

// killStorm kills and restarts the controller k.Kills times.
func (s *runState) killStorm(ctx context.Context, k *scenarios.KillStorm, rng *rand.Rand) (int, error) {
	kills := 0
	for range k.Kills {
		sleep(ctx, draw(rng, k.Uptime))
		downtime := draw(rng, k.Downtime)
		if ctx.Err() != nil {
			return kills, ctx.Err()
		}
		kills++
		if err := s.controllerAction(ctx, &scenarios.ControllerStep{Action: scenarios.ControllerRestart, Downtime: scenarios.Duration{Duration: downtime}}); err != nil {
			return kills, fmt.Errorf("kill %d of %d: %w", kills, k.Kills, err)
		}
	}
	return kills, nil
}

// rejectCreates holds a pod quota in the namespace for r.For. It is always
// lifted, even when the run is cancelled meanwhile.
func (s *runState) rejectCreates(ctx context.Context, r *scenarios.RejectCreates, statusErr *string) (int, error) {
	ns, err := s.sc.FaultNamespace(r)
	if err != nil {
		return 0, err
	}
	quotas := s.r.client.CoreV1().ResourceQuotas(ns)
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: RejectCreatesQuota, Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(strconv.Itoa(s.sc.FaultQuota(r)))}},
	}
	if _, err := quotas.Create(ctx, q, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("creating ResourceQuota %s/%s: %w", ns, RejectCreatesQuota, err)
	}
	defer func() {
		if err := quotas.Delete(context.WithoutCancel(ctx), RejectCreatesQuota, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			s.progress("lifting ResourceQuota %s/%s: %v", ns, RejectCreatesQuota, err)
		}
	}()
	sleep(ctx, r.For.Duration)
	// Refused creates are no reason for a wrong status (upstream's
	// TestUpdateStatusDespitePodCreationFailure): it must count what exists
	// while the quota still holds, within the status lag.
	*statusErr = s.statusWhileFaulted(ctx, ns)
	return 1, ctx.Err()
}

// statusWhileFaulted waits up to StatusLag for the status of every
// DaemonSet in ns to agree with the oracle, and says where it still did not.
func (s *runState) statusWhileFaulted(ctx context.Context, ns string) string {
	if s.which == Floor {
		return "" // the floor writes no status
	}
	deadline := s.r.clock.Now().Add(StatusLag)
	for {
		var diffs []string
		s.do(func() {
			for _, ds := range s.sc.DaemonSets() {
				if ds.Namespace != ns {
					continue
				}
				if d := s.core.StatusDiff(scenarios.Ref(ds)); d != "" {
					diffs = append(diffs, scenarios.Ref(ds)+" "+d)
				}
			}
		})
		if len(diffs) == 0 || ctx.Err() != nil {
			return ""
		}
		if s.r.clock.Now().After(deadline) {
			return strings.Join(diffs, "; ")
		}
		sleep(ctx, 250*time.Millisecond)
	}
}

// apiCalls is the controller's API requests so far, summed over its
// processes and verbs.
func (s *runState) apiCalls(ctx context.Context) (int64, error) {
	if s.ctrl == nil {
		return 0, fmt.Errorf("no controller")
	}
	byVerb, err := s.ctrl.APIRequests(ctx)
	if err != nil {
		return 0, err
	}
	var n float64
	for _, v := range byVerb {
		n += v
	}
	return int64(n), nil
}
