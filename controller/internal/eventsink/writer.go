package eventsink

import (
	"context"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	recordutil "k8s.io/client-go/tools/record/util"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// client-go's retry policy for an event the server could not take.
const (
	maxTries   = 12
	retryDelay = 10 * time.Second
)

// Writer writes events to a sink through a Correlator, trying again after
// transport errors as client-go does. Its Write is a handler for
// record.EventBroadcaster's StartEventWatcher, which calls it from one
// goroutine.
type Writer struct {
	sink       record.EventSink
	correlator *Correlator
	// random draws the first pause's share of retryDelay, so that clients
	// that lost the server together do not come back together.
	random func() float64
	// sleep waits d, or returns false when ctx ends first.
	sleep func(ctx context.Context, d time.Duration) bool
}

// NewWriter returns a Writer to sink, its Correlator reading time from clk.
func NewWriter(sink record.EventSink, clk clock.PassiveClock) *Writer {
	return &Writer{sink: sink, correlator: NewCorrelator(clk), random: rand.Float64, sleep: sleepCtx}
}

// Write correlates e and writes what the correlator decided, until it is
// written, refused, or maxTries transport errors have passed; ctx ends the
// tries early (the broadcaster shut down).
func (w *Writer) Write(ctx context.Context, e *corev1.Event) {
	logger := klog.FromContext(ctx)
	result, err := w.correlator.Correlate(e)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Could not correlate event", "event", e)
	}
	if result.Skip || result.Event == nil {
		return
	}
	for tries := 1; ; tries++ {
		if w.writeOnce(logger, result) {
			return
		}
		if tries >= maxTries {
			logger.Error(nil, "Unable to write event (retry limit exceeded!)", "event", e)
			return
		}
		delay := retryDelay
		if tries == 1 {
			delay = time.Duration(float64(delay) * w.random())
		}
		if !w.sleep(ctx, delay) {
			logger.Error(nil, "Unable to write event (broadcaster is shut down)", "event", e)
			return
		}
	}
}

// writeOnce patches the earlier event with a count above one, or creates
// it (also when the earlier one is gone). It returns false when the write
// should be tried again.
func (w *Writer) writeOnce(logger klog.Logger, result Result) bool {
	event := result.Event
	var written *corev1.Event
	var err error
	update := event.Count > 1
	if update {
		written, err = w.sink.Patch(event, result.Patch)
	}
	if !update || recordutil.IsKeyNotFoundError(err) {
		event.ResourceVersion = ""
		written, err = w.sink.Create(event)
	}
	if err == nil {
		if written != nil {
			w.correlator.Recorded(written)
		}
		return true
	}
	switch err.(type) {
	case *restclient.RequestConstructionError:
		logger.Error(err, "Unable to construct event (will not retry!)", "event", event)
		return true
	case *apierrors.StatusError:
		if apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			logger.V(5).Info("Server rejected event (will not retry!)", "event", event, "err", err)
		} else {
			logger.Error(err, "Server rejected event (will not retry!)", "event", event)
		}
		return true
	}
	// Transport errors and answers of an unexpected kind: try again.
	logger.Error(err, "Unable to write event (may retry after sleeping)", "event", event)
	return false
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
