package bench

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// The field managers of the conflicting writers, as kubectl names its own.
const (
	WriterApplyManager  = "kubectl"
	WriterEditManager   = "kubectl-edit"
	WriterStatusManager = "dsbench-status-writer"
)

// writerRetries bounds the re-reads of a writer that keeps conflicting.
const writerRetries = 10

// conflictingWriters plays other clients writing the DaemonSet for w.For:
// the template writes scenarios.ConflictingWriters.Writes lists, and once
// the first is in, a bogus status every StatusEvery. Then it checks that the
// DaemonSet kept the last template written: the step's barrier waits for
// the oracle to see that one.
func (s *runState) conflictingWriters(ctx context.Context, w *scenarios.ConflictingWriters, step int, rec *reports.Fault) (visibility, error) {
	ds, err := s.sc.DaemonSet(w.DaemonSet)
	if err != nil {
		return nil, err
	}
	ref := scenarios.Ref(ds)
	rec.DaemonSet = ref
	start := s.r.clock.Now()
	end := start.Add(w.For.Duration)
	writes := w.Writes(step)
	if len(writes) == 0 {
		return nil, fmt.Errorf("conflictingWriters: no template write within %v", w.For.Duration)
	}
	first := make(chan struct{})
	statusWrites := 0
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		for i, wr := range writes {
			s.sleepUntil(gctx, start.Add(wr.At))
			if err := gctx.Err(); err != nil {
				return err
			}
			written, err := s.writeTemplate(gctx, ds, w, wr)
			if err != nil {
				return fmt.Errorf("template write %d of %d: %w", i+1, len(writes), err)
			}
			rec.Injected++
			rec.LastValue, rec.LastGeneration = wr.Value, written.Generation
			if i == 0 {
				close(first)
			}
		}
		return nil
	})
	g.Go(func() error {
		// A status write before the first template write could land while
		// the DaemonSet has long been converged: the oracle would blame it
		// on the controller at once.
		select {
		case <-first:
		case <-gctx.Done():
			return nil
		}
		for k := 1; ; k++ {
			at := start.Add(time.Duration(k) * w.StatusEvery.Duration)
			if !at.Before(end) {
				return nil
			}
			s.sleepUntil(gctx, at)
			if gctx.Err() != nil {
				return nil
			}
			if err := s.writeBogusStatus(gctx, ds); err != nil {
				return fmt.Errorf("status write %d: %w", k, err)
			}
			statusWrites++
		}
	})
	err = g.Wait()
	rec.StatusWrites = statusWrites
	if err != nil {
		return nil, err
	}
	s.sleepUntil(ctx, end)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cur, err := s.r.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading DaemonSet %s after the writers: %w", ref, err)
	}
	rec.LostUpdate = lostUpdate(cur, w, rec.LastValue, rec.LastGeneration)
	return visibility{ref: oracle.GenerationObserved(ref, rec.LastGeneration)}, nil
}

func (s *runState) sleepUntil(ctx context.Context, t time.Time) {
	if d := t.Sub(s.r.clock.Now()); d > 0 {
		sleep(ctx, d)
	}
}

// writeTemplate makes one template write as a user would: kubectl apply
// --server-side (forced, as after a conflict), or kubectl edit (read,
// change, write back; read again on a conflict).
func (s *runState) writeTemplate(ctx context.Context, ds *appsv1.DaemonSet, w *scenarios.ConflictingWriters, wr scenarios.WriterWrite) (*appsv1.DaemonSet, error) {
	dss := s.r.client.AppsV1().DaemonSets(ds.Namespace)
	if wr.Apply {
		// The live object only names the container; the apply sends no
		// resourceVersion, so nothing conflicts.
		cur, err := dss.Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("getting DaemonSet %s: %w", scenarios.Ref(ds), err)
		}
		cfg, err := scenarios.WriterApplyConfig(cur, w, wr.Value)
		if err != nil {
			return nil, err
		}
		force := true
		applied, err := dss.Patch(ctx, ds.Name, types.ApplyPatchType, cfg, metav1.PatchOptions{FieldManager: WriterApplyManager, Force: &force})
		if err != nil {
			return nil, fmt.Errorf("applying %s=%s to DaemonSet %s: %w", scenarios.WriterEnv, wr.Value, scenarios.Ref(ds), err)
		}
		return applied, nil
	}
	for attempt := 0; ; attempt++ {
		cur, err := dss.Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("getting DaemonSet %s: %w", scenarios.Ref(ds), err)
		}
		next, err := scenarios.WithWriterValue(cur, w, wr.Value)
		if err != nil {
			return nil, err
		}
		updated, err := dss.Update(ctx, next, metav1.UpdateOptions{FieldManager: WriterEditManager})
		if apierrors.IsConflict(err) && attempt < writerRetries {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("editing %s=%s into DaemonSet %s: %w", scenarios.WriterEnv, wr.Value, scenarios.Ref(ds), err)
		}
		return updated, nil
	}
}

// writeBogusStatus writes bogusStatus through the status subresource,
// reading again on a conflict.
func (s *runState) writeBogusStatus(ctx context.Context, ds *appsv1.DaemonSet) error {
	dss := s.r.client.AppsV1().DaemonSets(ds.Namespace)
	for attempt := 0; ; attempt++ {
		cur, err := dss.Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("getting DaemonSet %s: %w", scenarios.Ref(ds), err)
		}
		_, err = dss.UpdateStatus(ctx, bogusStatus(cur), metav1.UpdateOptions{FieldManager: WriterStatusManager})
		if apierrors.IsConflict(err) && attempt < writerRetries {
			continue
		}
		if err != nil {
			return fmt.Errorf("writing the status of DaemonSet %s: %w", scenarios.Ref(ds), err)
		}
		return nil
	}
}

// bogusStatus is ds with the status of a client that sees no pod ready:
// wrong whenever one is. The observedGeneration stays, so that only the
// counts are wrong.
func bogusStatus(ds *appsv1.DaemonSet) *appsv1.DaemonSet {
	out := ds.DeepCopy()
	st := &out.Status
	st.NumberReady, st.NumberAvailable, st.UpdatedNumberScheduled = 0, 0, 0
	st.NumberUnavailable = st.DesiredNumberScheduled
	return out
}

// lostUpdate says how ds lost the writers' last template, which set value
// and made generation gen; "" when it kept it.
func lostUpdate(ds *appsv1.DaemonSet, w *scenarios.ConflictingWriters, value string, gen int64) string {
	got, ok, err := scenarios.WriterValue(ds, w)
	switch {
	case err != nil:
		return err.Error()
	case !ok:
		return fmt.Sprintf("DaemonSet %s at generation %d has no %s; the last template write (generation %d) set it to %q",
			scenarios.Ref(ds), ds.Generation, scenarios.WriterEnv, gen, value)
	case got != value:
		return fmt.Sprintf("DaemonSet %s at generation %d has %s=%q; the last template write (generation %d) set %q",
			scenarios.Ref(ds), ds.Generation, scenarios.WriterEnv, got, gen, value)
	}
	return ""
}
