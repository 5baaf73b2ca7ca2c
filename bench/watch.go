package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/dsbench/dsbench/bench/oracle"
)

// Gap is a stretch of time in which one watch saw nothing because it had to
// start over (410 Gone or an error). What changed during it is seen only as
// the difference between two lists.
type Gap struct {
	Resource string
	Start    time.Time
	End      time.Time
	Reason   string
}

// Watcher streams node, pod and DaemonSet events to one channel, each stamped
// with the time the harness received it. It never trusts a status: it only
// reports what it saw and when, and the gaps in what it saw.
type Watcher struct {
	client kubernetes.Interface
	clock  clock.PassiveClock
	events chan oracle.Event

	mu   sync.Mutex
	gaps []Gap
	// synced counts resources whose first list is done.
	synced int
	// counts of events by resource, for coverage.
	counts map[string]int
}

// NewWatcher returns a watcher; Run starts it.
func NewWatcher(client kubernetes.Interface, clk clock.PassiveClock) *Watcher {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Watcher{client: client, clock: clk, events: make(chan oracle.Event, 1<<16), counts: map[string]int{}}
}

// Events is the merged stream. It is closed when Run returns.
func (w *Watcher) Events() <-chan oracle.Event { return w.events }

// Gaps returns the gaps so far.
func (w *Watcher) Gaps() []Gap {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Gap(nil), w.gaps...)
}

// Synced says whether every resource has been listed once.
func (w *Watcher) Synced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.synced == 3
}

// Counts returns the number of events received per resource.
func (w *Watcher) Counts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.counts {
		out[k] = v
	}
	return out
}

type listWatch struct {
	resource string
	list     func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	watch    func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Run watches until ctx ends, then closes Events.
func (w *Watcher) Run(ctx context.Context) {
	c := w.client
	lws := []listWatch{
		{"nodes",
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return c.CoreV1().Nodes().List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return c.CoreV1().Nodes().Watch(ctx, o)
			}},
		{"pods",
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return c.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
			}},
		{"daemonsets",
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return c.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return c.AppsV1().DaemonSets(metav1.NamespaceAll).Watch(ctx, o)
			}},
	}
	var wg sync.WaitGroup
	for _, lw := range lws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx, lw)
		}()
	}
	wg.Wait()
	close(w.events)
}

func (w *Watcher) emit(ctx context.Context, resource string, kind oracle.EventKind, obj runtime.Object) {
	w.send(ctx, resource, oracle.Event{Kind: kind, Object: obj})
}

// emitRelisted sends what a list showed changed: no watch event's order.
func (w *Watcher) emitRelisted(ctx context.Context, resource string, kind oracle.EventKind, obj runtime.Object) {
	w.send(ctx, resource, oracle.Event{Kind: kind, Object: obj, Relisted: true})
}

func (w *Watcher) send(ctx context.Context, resource string, ev oracle.Event) {
	w.mu.Lock()
	w.counts[resource]++
	w.mu.Unlock()
	ev.Time = w.clock.Now()
	select {
	case w.events <- ev:
	case <-ctx.Done():
	}
}

// loop lists, then watches from the list's resource version, resuming from the
// last seen version when a watch ends and relisting (a recorded gap) when
// that version is too old.
func (w *Watcher) loop(ctx context.Context, lw listWatch) {
	known := map[string]runtime.Object{} // by namespace/name
	rv := ""
	first := true
	var gapStart time.Time
	var gapReason string
	for ctx.Err() == nil {
		if rv == "" {
			list, err := lw.list(ctx, metav1.ListOptions{})
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if gapStart.IsZero() {
					gapStart, gapReason = w.clock.Now(), "list: "+err.Error()
				}
				sleep(ctx, time.Second)
				continue
			}
			rv = w.relist(ctx, lw.resource, list, known)
			if first {
				first = false
				w.mu.Lock()
				w.synced++
				w.mu.Unlock()
			}
			if !gapStart.IsZero() {
				w.mu.Lock()
				w.gaps = append(w.gaps, Gap{Resource: lw.resource, Start: gapStart, End: w.clock.Now(), Reason: gapReason})
				w.mu.Unlock()
				gapStart = time.Time{}
			}
		}
		wi, err := lw.watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				gapStart, gapReason, rv = w.clock.Now(), "watch: "+err.Error(), ""
			}
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		rv = w.drain(ctx, lw.resource, wi, rv, known, &gapStart, &gapReason)
	}
}

func (w *Watcher) drain(ctx context.Context, resource string, wi watch.Interface, rv string, known map[string]runtime.Object, gapStart *time.Time, gapReason *string) string {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv // resume from rv
			}
			switch ev.Type {
			case watch.Bookmark:
				if m, err := meta.Accessor(ev.Object); err == nil {
					rv = m.GetResourceVersion()
				}
			case watch.Error:
				status := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(status) || apierrors.IsGone(status) {
					*gapStart, *gapReason = w.clock.Now(), "watch: "+status.Error()
					return ""
				}
				return rv
			case watch.Added, watch.Modified, watch.Deleted:
				m, err := meta.Accessor(ev.Object)
				if err != nil {
					continue
				}
				rv = m.GetResourceVersion()
				key := m.GetNamespace() + "/" + m.GetName()
				kind := oracle.Modified
				switch ev.Type {
				case watch.Added:
					kind = oracle.Added
					known[key] = ev.Object
				case watch.Deleted:
					kind = oracle.Deleted
					delete(known, key)
				default:
					known[key] = ev.Object
				}
				w.emit(ctx, resource, kind, setKind(ev.Object))
			}
		}
	}
}

// relist emits what changed since the objects we knew, and returns the list's
// resource version.
func (w *Watcher) relist(ctx context.Context, resource string, list runtime.Object, known map[string]runtime.Object) string {
	items, err := meta.ExtractList(list)
	if err != nil {
		return ""
	}
	seen := map[string]bool{}
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			continue
		}
		key := m.GetNamespace() + "/" + m.GetName()
		seen[key] = true
		old, ok := known[key]
		switch {
		case !ok:
			w.emitRelisted(ctx, resource, oracle.Added, setKind(item))
		case resourceVersion(old) != m.GetResourceVersion():
			w.emitRelisted(ctx, resource, oracle.Modified, setKind(item))
		}
		known[key] = item
	}
	for key, old := range known {
		if !seen[key] {
			delete(known, key)
			w.emitRelisted(ctx, resource, oracle.Deleted, old)
		}
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return ""
	}
	return lm.GetResourceVersion()
}

func resourceVersion(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// setKind restores the type meta that list items lack, for messages.
func setKind(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *corev1.Node:
		o.Kind, o.APIVersion = "Node", "v1"
	case *corev1.Pod:
		o.Kind, o.APIVersion = "Pod", "v1"
	case *appsv1.DaemonSet:
		o.Kind, o.APIVersion = "DaemonSet", "apps/v1"
	}
	return obj
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// String describes a gap for reports.
func (g Gap) String() string {
	return fmt.Sprintf("%s watch gap %s (%s)", g.Resource, g.End.Sub(g.Start).Round(time.Millisecond), g.Reason)
}
