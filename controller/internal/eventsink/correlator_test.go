package eventsink

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

// step is one event of a stream: after a pause, object obj records reason
// with a message that is new, or one the same object and reason had before.
type step struct {
	pause  time.Duration
	obj    int
	reason int
	repeat bool // a message this object had for this reason
	fail   bool // the server does not take the write
}

var reasons = []struct{ typ, reason string }{
	{corev1.EventTypeNormal, "SuccessfulCreate"},
	{corev1.EventTypeNormal, "SuccessfulDelete"},
	{corev1.EventTypeWarning, "FailedCreate"},
	{corev1.EventTypeWarning, "HashCollision"},
}

// combinedPrefix starts a combined event's message (client-go's
// EventAggregatorByReasonMessageFunc).
const combinedPrefix = "(combined from similar events): "

// tally counts what a stream exercised, so that a stream that never
// reached the interesting cases fails instead of passing.
type tally struct {
	written, skipped, patched, combined, failed int
}

// playBoth plays steps into client-go's EventCorrelator and ours on one
// fake clock, and fails at the first step where they decide differently.
// A written event comes back from a fake server with a resourceVersion,
// which both are told of.
func playBoth(t *testing.T, steps []step) tally {
	t.Helper()
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	theirs := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clk})
	ours := NewCorrelator(clk)
	var got tally
	msgs := newMessageBook()
	serverVersion := 0
	for i, s := range steps {
		clk.SetTime(clk.Now().Add(s.pause))
		e := newEvent(clk.Now(), s.obj, s.reason, msgs.message(clk.Now(), s))
		input := e.DeepCopy()

		want, wantErr := theirs.EventCorrelate(e.DeepCopy())
		have, haveErr := ours.Correlate(e)
		if !equality.Semantic.DeepEqual(e, input) {
			t.Fatalf("step %d: Correlate modified its argument: %s", i, diff.Diff(input, e))
		}
		if (wantErr == nil) != (haveErr == nil) {
			t.Fatalf("step %d: error %v, client-go's %v", i, haveErr, wantErr)
		}
		if have.Skip != want.Skip {
			t.Fatalf("step %d (%+v): skip %v, client-go's %v", i, s, have.Skip, want.Skip)
		}
		if want.Skip {
			got.skipped++
			continue
		}
		if !equality.Semantic.DeepEqual(have.Event, want.Event) {
			t.Fatalf("step %d (%+v): event differs from client-go's:\n%s", i, s, diff.Diff(want.Event, have.Event))
		}
		if !bytes.Equal(have.Patch, want.Patch) {
			t.Fatalf("step %d: patch %s, client-go's %s", i, have.Patch, want.Patch)
		}
		got.written++
		if have.Patch != nil {
			got.patched++
		}
		if strings.HasPrefix(have.Event.Message, combinedPrefix) {
			got.combined++
		}
		if s.fail {
			got.failed++
			continue
		}
		serverVersion++
		stored := want.Event.DeepCopy()
		stored.ResourceVersion = strconv.Itoa(serverVersion)
		theirs.UpdateState(stored.DeepCopy())
		ours.Recorded(stored.DeepCopy())
	}
	return got
}

// newEvent is an event as client-go's recorder makes it for object obj.
func newEvent(now time.Time, obj, reason int, message string) *corev1.Event {
	t := metav1.NewTime(now)
	name := fmt.Sprintf("ds-%d", obj)
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", name, t.UnixNano()), Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{
			Kind: "DaemonSet", Namespace: "default", Name: name, APIVersion: "apps/v1",
			UID: types.UID(fmt.Sprintf("uid-%d", obj)), ResourceVersion: "7",
		},
		Reason: reasons[reason].reason, Message: message, Type: reasons[reason].typ,
		FirstTimestamp: t, LastTimestamp: t, Count: 1,
		Source:              corev1.EventSource{Component: "daemonset-controller"},
		ReportingController: "daemonset-controller",
	}
}

// messageBook hands out messages. Once an object has had ten distinct
// messages of a reason within ten minutes, client-go forgets one of them at
// random, so a repeat after that has no single right answer: the book then
// hands out a new message instead.
type messageBook struct {
	next  int
	seen  map[[2]int][]string
	last  map[[2]int]time.Time
	mixed map[[2]int]bool // a message was forgotten since the aggregate began
}

func newMessageBook() *messageBook {
	return &messageBook{seen: map[[2]int][]string{}, last: map[[2]int]time.Time{}, mixed: map[[2]int]bool{}}
}

func (b *messageBook) message(now time.Time, s step) string {
	k := [2]int{s.obj, s.reason}
	if now.Sub(b.last[k]) > aggregateIntervalSeconds*time.Second {
		b.seen[k], b.mixed[k] = nil, false
	}
	b.last[k] = now
	if s.repeat && !b.mixed[k] && len(b.seen[k]) > 0 {
		return b.seen[k][len(b.seen[k])/2]
	}
	b.next++
	m := fmt.Sprintf("Created pod: ds-pod-%d", b.next)
	b.seen[k] = append(b.seen[k], m)
	if len(b.seen[k]) >= aggregateMaxEvents {
		b.mixed[k] = true
	}
	return m
}

// randomSteps draws a stream: bursts within a second, and pauses long
// enough to refill the spam filter's bucket or to end an aggregate.
func randomSteps(r *rand.Rand, n int) []step {
	pauses := []time.Duration{0, time.Millisecond, 40 * time.Millisecond, time.Second, 20 * time.Second, 301 * time.Second, 700 * time.Second}
	weights := []int{30, 30, 20, 10, 5, 3, 2}
	steps := make([]step, n)
	for i := range steps {
		w := r.IntN(100)
		p := 0
		for w >= weights[p] {
			w -= weights[p]
			p++
		}
		steps[i] = step{
			pause:  pauses[p],
			obj:    r.IntN(3),
			reason: r.IntN(len(reasons)),
			repeat: r.IntN(5) == 0,
			fail:   r.IntN(20) == 0,
		}
	}
	return steps
}

func TestCorrelatorAsClientGo(t *testing.T) {
	var total tally
	for seed := uint64(1); seed <= 40; seed++ {
		got := playBoth(t, randomSteps(rand.New(rand.NewPCG(seed, 29)), 1500))
		total.written += got.written
		total.skipped += got.skipped
		total.patched += got.patched
		total.combined += got.combined
		total.failed += got.failed
	}
	t.Logf("%+v", total)
	if total.skipped == 0 || total.patched == 0 || total.combined == 0 || total.failed == 0 || total.written == 0 {
		t.Fatalf("the streams missed a case: %+v", total)
	}
}

// A DaemonSet's create of 1000 pods: nine events as they are, one
// combined event patched up to the 25th write, the rest dropped but counted,
// so that the write five minutes later carries the count of all.
func TestCorrelatorCreateOfAThousandPods(t *testing.T) {
	steps := make([]step, 1000)
	for i := range steps {
		steps[i] = step{pause: time.Millisecond}
	}
	got := playBoth(t, steps)
	want := tally{written: 25, skipped: 975, patched: 15, combined: 16}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}

	clk := testingclock.NewFakePassiveClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	c := NewCorrelator(clk)
	msgs := newMessageBook()
	for _, s := range steps {
		clk.SetTime(clk.Now().Add(s.pause))
		if _, err := c.Correlate(newEvent(clk.Now(), s.obj, s.reason, msgs.message(clk.Now(), s))); err != nil {
			t.Fatal(err)
		}
	}
	clk.SetTime(clk.Now().Add(301 * time.Second))
	r, err := c.Correlate(newEvent(clk.Now(), 0, 0, "Created pod: ds-pod-late"))
	if err != nil || r.Skip {
		t.Fatalf("the write after five minutes: %+v, %v", r, err)
	}
	if r.Event.Count != 992 || r.Event.Message != combinedPrefix+"Created pod: ds-pod-late" {
		t.Fatalf("count %d, message %q: want 992, the combined message", r.Event.Count, r.Event.Message)
	}
}

func TestCorrelateNil(t *testing.T) {
	if _, err := NewCorrelator(testingclock.NewFakePassiveClock(time.Now())).Correlate(nil); err == nil {
		t.Fatal("no error for a nil event")
	}
}

// FuzzCorrelatorAsClientGo plays streams the fuzzer draws, three bytes a
// step, into both correlators.
func FuzzCorrelatorAsClientGo(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 4, 0, 5, 9, 3})
	f.Add(bytes.Repeat([]byte{1, 0, 0}, 40))
	f.Add(bytes.Repeat([]byte{1, 0, 1, 5, 7, 0, 0, 2, 1}, 30))
	pauses := []time.Duration{0, time.Millisecond, time.Second, 12 * time.Second, 300 * time.Second, 301 * time.Second, 601 * time.Second, time.Hour}
	f.Fuzz(func(t *testing.T, data []byte) {
		var steps []step
		for i := 0; i+2 < len(data) && len(steps) < 400; i += 3 {
			steps = append(steps, step{
				pause:  pauses[int(data[i])%len(pauses)],
				obj:    int(data[i+1]) % 3,
				reason: int(data[i+1]/3) % len(reasons),
				repeat: data[i+2]&1 == 1,
				fail:   data[i+2]&2 == 2,
			})
		}
		playBoth(t, steps)
	})
}
