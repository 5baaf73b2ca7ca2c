package kwoktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func testPod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv}}
}

// started is one Watch call: the resourceVersion it asked for and the fake
// watch the test drives.
type started struct {
	rv string
	fw *watch.FakeWatcher
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

// TestWatchPods drives WatchPods through fake watches: events, a bookmark,
// a watch that ends and is resumed, and one that expires and relists.
func TestWatchPods(t *testing.T) {
	client := fake.NewClientset()
	lists := []*corev1.PodList{
		{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []corev1.Pod{*testPod("a", "5")}},
		{ListMeta: metav1.ListMeta{ResourceVersion: "20"}, Items: []corev1.Pod{*testPod("c", "15")}},
	}
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		l := lists[0]
		lists = lists[1:]
		return true, l, nil
	})
	watches := make(chan started)
	client.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		fw := watch.NewFake()
		watches <- started{a.(k8stesting.WatchActionImpl).WatchRestrictions.ResourceVersion, fw}
		return true, fw, nil
	})
	states := make(chan string, 10)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w, err := WatchPods(ctx, client, "ns", func(pods []*corev1.Pod, rv string) {
		var names []string
		for _, p := range pods {
			names = append(names, p.Name)
		}
		slices.Sort(names)
		states <- fmt.Sprintf("%s %v", rv, names)
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	next := func() { got = append(got, recv(t, states, "evaluation")) }
	next()

	first := recv(t, watches, "first watch")
	first.fw.Add(testPod("b", "11"))
	next()
	first.fw.Modify(testPod("a", "12"))
	next()
	first.fw.Delete(testPod("b", "13"))
	next()
	first.fw.Action(watch.Bookmark, testPod("", "14"))
	first.fw.Stop() // the server ends the watch

	resumed := recv(t, watches, "resumed watch")
	resumed.fw.Error(&metav1.Status{Reason: metav1.StatusReasonExpired})

	relisted := recv(t, watches, "watch after the relist")
	relisted.fw.Add(testPod("d", "21"))
	next()

	cancel()
	relisted.fw.Stop()
	w.Stop()
	w.Stop() // again: a no-op

	want := []string{"10 [a]", "11 [a b]", "12 [a b]", "13 [a]", "21 [c d]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("evaluated states (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"10", "14", "20"}, []string{first.rv, resumed.rv, relisted.rv}); diff != "" {
		t.Errorf("watches started at resourceVersions (-want +got):\n%s", diff)
	}
	if w.Events() != 4 || w.Relists() != 1 {
		t.Errorf("%d events, %d relists; want 4 and 1", w.Events(), w.Relists())
	}
}

func TestWatchPodsListError(t *testing.T) {
	client := fake.NewClientset()
	refused := errors.New("refused")
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, refused
	})
	_, err := WatchPods(t.Context(), client, "ns", func([]*corev1.Pod, string) {
		t.Error("evaluate called without a list")
	})
	if !errors.Is(err, refused) {
		t.Errorf("got error %v, want %v", err, refused)
	}
}
