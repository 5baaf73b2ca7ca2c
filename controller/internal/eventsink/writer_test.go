package eventsink

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	restclient "k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"
)

// fakeSink is a server that answers each call with the next of errs (nil:
// success), and keeps what it was sent.
type fakeSink struct {
	errs    []error
	calls   []string // "create" or "patch", with the event's resourceVersion
	version int
}

func (s *fakeSink) answer(kind string, e *corev1.Event) (*corev1.Event, error) {
	s.calls = append(s.calls, kind+" rv="+e.ResourceVersion+" count="+strconv.Itoa(int(e.Count)))
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		if err != nil {
			return nil, err
		}
	}
	s.version++
	stored := e.DeepCopy()
	stored.ResourceVersion = strconv.Itoa(s.version)
	return stored, nil
}

func (s *fakeSink) Create(e *corev1.Event) (*corev1.Event, error) { return s.answer("create", e) }
func (s *fakeSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.answer("update", e) }
func (s *fakeSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.answer("patch", e)
}

func newTestWriter(sink *fakeSink, pauses *[]time.Duration, stopAfter int) *Writer {
	w := NewWriter(sink, testingclock.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)))
	w.random = func() float64 { return 0.25 }
	w.sleep = func(_ context.Context, d time.Duration) bool {
		*pauses = append(*pauses, d)
		return stopAfter <= 0 || len(*pauses) < stopAfter
	}
	return w
}

func TestWriter(t *testing.T) {
	transport := errors.New("connection refused")
	gone := apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, "x")
	invalid := apierrors.NewBadRequest("no")
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "x", errors.New("namespace is terminating"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	quarter := 2500 * time.Millisecond // a quarter of client-go's 10 s

	for _, tc := range []struct {
		name       string
		events     int // the same event, recorded this many times
		errs       []error
		stopAfter  int // the broadcaster shuts down at this pause (0: never)
		wantCalls  []string
		wantPauses []time.Duration
	}{
		{name: "a first event is created", events: 1,
			wantCalls: []string{"create rv= count=1"}},
		{name: "a repeat patches the stored event, with the server's resourceVersion", events: 2,
			wantCalls: []string{"create rv= count=1", "patch rv=1 count=2"}},
		{name: "a patch of an event that is gone creates it again", events: 2, errs: []error{nil, gone},
			wantCalls: []string{"create rv= count=1", "patch rv=1 count=2", "create rv= count=2"}},
		{name: "a refusal is not tried again", events: 1, errs: []error{invalid},
			wantCalls: []string{"create rv= count=1"}},
		{name: "a terminating namespace is not tried again", events: 1, errs: []error{terminating},
			wantCalls: []string{"create rv= count=1"}},
		{name: "a request that cannot be built is not tried again", events: 1,
			errs:      []error{&restclient.RequestConstructionError{Err: errors.New("bad")}},
			wantCalls: []string{"create rv= count=1"}},
		{name: "a transport error is tried again, the first pause drawn", events: 1, errs: []error{transport, transport},
			wantCalls:  []string{"create rv= count=1", "create rv= count=1", "create rv= count=1"},
			wantPauses: []time.Duration{quarter, retryDelay}},
		{name: "twelve tries at most", events: 1, errs: slices.Repeat([]error{transport}, 20),
			wantCalls:  slices.Repeat([]string{"create rv= count=1"}, 12),
			wantPauses: append([]time.Duration{quarter}, slices.Repeat([]time.Duration{10 * time.Second}, 10)...)},
		{name: "a shutdown ends the tries", events: 1, errs: slices.Repeat([]error{transport}, 20), stopAfter: 2,
			wantCalls:  slices.Repeat([]string{"create rv= count=1"}, 2),
			wantPauses: []time.Duration{quarter, retryDelay}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &fakeSink{errs: tc.errs}
			var pauses []time.Duration
			w := newTestWriter(sink, &pauses, tc.stopAfter)
			for range tc.events {
				w.Write(context.Background(), newEvent(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), 0, 0, "Created pod: p"))
			}
			if !slices.Equal(sink.calls, tc.wantCalls) {
				t.Errorf("calls %q, want %q", sink.calls, tc.wantCalls)
			}
			if !slices.Equal(pauses, tc.wantPauses) {
				t.Errorf("pauses %v, want %v", pauses, tc.wantPauses)
			}
		})
	}
}

// TestWriterSkipsWhatTheFilterDrops: after the burst of 25, nothing is sent.
func TestWriterSkipsWhatTheFilterDrops(t *testing.T) {
	sink := &fakeSink{}
	var pauses []time.Duration
	w := newTestWriter(sink, &pauses, 0)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 100 {
		w.Write(context.Background(), newEvent(now, 0, 0, "Created pod: p"+strconv.Itoa(i)))
	}
	if len(sink.calls) != spamBurst {
		t.Fatalf("%d writes, want %d: %q", len(sink.calls), spamBurst, sink.calls)
	}
}
