package bench

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dsbench/dsbench/bench/oracle"
)

// What a watch delivers comes in etcd's order; what a relist shows changed
// does not, and says so (oracle.Event.Relisted), so that the oracle judges
// no order from it.
func TestWatcherMarksRelistedEvents(t *testing.T) {
	podAt := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	lists := []*corev1.PodList{
		{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []corev1.Pod{*podAt("a", "1")}},
		{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []corev1.Pod{*podAt("b", "2"), *podAt("c", "8")}},
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watches := 0
	lw := listWatch{
		resource: "pods",
		list: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			l := lists[0]
			lists = lists[1:]
			return l, nil
		},
		watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			watches++
			w := watch.NewFakeWithChanSize(2, false)
			if watches == 1 {
				w.Add(podAt("b", "2"))
				w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired})
			} else {
				cancel() // after the relist: done
			}
			return w, nil
		},
	}
	w := &Watcher{clock: clocktesting.NewFakeClock(scriptT0), events: make(chan oracle.Event, 16), counts: map[string]int{}}
	w.loop(ctx, lw)
	close(w.events)
	type seen struct {
		kind     oracle.EventKind
		name     string
		relisted bool
	}
	var got []seen
	for ev := range w.events {
		got = append(got, seen{ev.Kind, ev.Object.(*corev1.Pod).Name, ev.Relisted})
	}
	want := []seen{{oracle.Added, "a", true}, {oracle.Added, "b", false}, {oracle.Added, "c", true}, {oracle.Deleted, "a", true}}
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
