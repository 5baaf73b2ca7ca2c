package kwoktest

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// PodWatch replays the watch events of the pods in one namespace in order
// and checks each state they pass through, so that no intermediate state is
// missed (polling could skip a short dip or overlap).
type PodWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	// Read after Stop.
	events, relists int
}

// WatchPods lists the pods in namespace and calls evaluate with them; then,
// until Stop or the end of ctx, it watches them from there, with bookmarks,
// and calls evaluate again after each pod added, modified or deleted.
// evaluate gets the namespace's pods in no particular order and the
// resourceVersion of that state. A watch that ends is resumed from the last
// resourceVersion seen. One that fails (its resourceVersion expired) starts
// over from a fresh list without calling evaluate: the states in between are
// lost, which Relists counts.
//
// The first call of evaluate runs before WatchPods returns, the others on
// the watch's goroutine, one at a time; what evaluate writes may be read
// after Stop.
func WatchPods(ctx context.Context, client kubernetes.Interface, namespace string, evaluate func(pods []*corev1.Pod, resourceVersion string)) (*PodWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &PodWatch{cancel: cancel, done: make(chan struct{})}
	pods := client.CoreV1().Pods(namespace)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("listing the pods in %s: %w", namespace, err)
	}
	state := map[string]*corev1.Pod{}
	for i := range list.Items {
		state[list.Items[i].Name] = &list.Items[i]
	}
	rv := list.ResourceVersion
	eval := func() {
		all := make([]*corev1.Pod, 0, len(state))
		for _, p := range state {
			all = append(all, p)
		}
		evaluate(all, rv)
	}
	eval()
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			wi, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				switch ev.Type {
				case watch.Added, watch.Modified:
					p := ev.Object.(*corev1.Pod)
					state[p.Name], rv = p, p.ResourceVersion
				case watch.Deleted:
					p := ev.Object.(*corev1.Pod)
					delete(state, p.Name)
					rv = p.ResourceVersion
				case watch.Bookmark:
					if p, ok := ev.Object.(*corev1.Pod); ok {
						rv = p.ResourceVersion
					}
					continue
				case watch.Error:
					// Expired: start over from a fresh list. The states
					// in between are lost, which is counted.
					wi.Stop()
					if l, err := pods.List(ctx, metav1.ListOptions{}); err == nil {
						clear(state)
						for i := range l.Items {
							state[l.Items[i].Name] = &l.Items[i]
						}
						rv = l.ResourceVersion
						w.relists++
					}
					continue
				}
				w.events++
				eval()
			}
			wi.Stop()
		}
	}()
	return w, nil
}

// Stop ends the watch and waits for its goroutine; it may be called again.
func (w *PodWatch) Stop() {
	w.cancel()
	<-w.done
}

// Events is how many pod events were evaluated; read it after Stop.
func (w *PodWatch) Events() int { return w.events }

// Relists is how many times an expired watch started over from a fresh
// list, losing the states in between; read it after Stop.
func (w *PodWatch) Relists() int { return w.relists }
