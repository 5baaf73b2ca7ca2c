package apiproxy

import (
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestIsPodWrite(t *testing.T) {
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{http.MethodPost, "/api/v1/namespaces/dsbench/pods", true},
		{http.MethodDelete, "/api/v1/namespaces/dsbench/pods/agent-x2k9q", true},
		{http.MethodPost, "/api/v1/namespaces/dsbench/pods/agent-x2k9q/binding", false},
		{http.MethodPost, "/api/v1/namespaces/dsbench/pods/agent-x2k9q/eviction", false},
		{http.MethodDelete, "/api/v1/namespaces/dsbench/pods", false}, // a collection
		{http.MethodPut, "/api/v1/namespaces/dsbench/pods/agent-x2k9q/status", false},
		{http.MethodPatch, "/api/v1/namespaces/dsbench/pods/agent-x2k9q", false},
		{http.MethodGet, "/api/v1/namespaces/dsbench/pods", false},
		{http.MethodPost, "/apis/apps/v1/namespaces/dsbench/daemonsets", false},
		{http.MethodPost, "/api/v1/namespaces/dsbench/events", false},
		{http.MethodPost, "/api/v1/pods", false},
		{http.MethodDelete, "/api/v1/nodes/n-1", false},
	} {
		if got := IsPodWrite(c.method, c.path); got != c.want {
			t.Errorf("IsPodWrite(%s %s) = %v, want %v", c.method, c.path, got, c.want)
		}
	}
}

// received is one request the API server stand-in got.
type received struct{ method, path, body string }

// podServer stands in for the API server's pods: a create answers the pod
// sent, a delete success; every request is also sent on got.
func podServer(got chan<- received) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{r.Method, r.URL.Path, string(b)}
		if r.Method == http.MethodPost {
			w.Header().Set("Content-Type", r.Header.Get("Content-Type")) // client-go sends protobuf
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(b)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	}
}

func clientFor(t *testing.T, p *Proxy) kubernetes.Interface {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := p.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func nothingReceived(t *testing.T, got <-chan received) {
	t.Helper()
	select {
	case r := <-got:
		t.Fatalf("the API server got %s %s before the write was due to land", r.method, r.path)
	case <-time.After(50 * time.Millisecond):
	}
}

// With every 2nd pod write timed out, client-go sees kube-apiserver's
// Timeout on the 2nd and 4th (a create, a delete), and the API server gets
// each of them, unchanged, LandAfter after the answer; the others, and
// every other request, go through at once.
func TestWriteTimeoutsAnswerTimeoutThenLand(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	got := make(chan received, 10)
	p := start(t, Config{Upstream: upstream(t, podServer(got)), Clock: clk})
	p.SetWriteTimeouts(WriteTimeouts{Every: 2, LandAfter: 2 * time.Second})
	pods := clientFor(t, p).CoreV1().Pods("dsbench")
	ctx := t.Context()
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dsbench"}, Spec: corev1.PodSpec{NodeName: "n-1"}}
	}

	if _, err := pods.Create(ctx, pod("first"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("1st pod write: %v", err)
	}
	wait(t, got)
	if r := wait(t, send(ctx, p, http.MethodGet, "/api/v1/namespaces/dsbench/pods")); r.err != nil {
		t.Fatalf("a read: %v", r.err)
	}
	wait(t, got) // reads are never timed out, nor counted
	_, err := pods.Create(ctx, pod("second"), metav1.CreateOptions{})
	if !apierrors.IsTimeout(err) {
		t.Fatalf("2nd pod write: %v, want kube-apiserver's Timeout", err)
	}
	nothingReceived(t, got)
	if c := p.Counts(); c.TimedOut != 1 || c.Landing != 1 || c.Landed != 0 {
		t.Fatalf("after the answer: %+v, want 1 timed out, landing", c)
	}
	waitForTimer(t, clk)
	clk.Step(time.Second)
	nothingReceived(t, got)
	clk.Step(time.Second)
	if r := wait(t, got); r.method != http.MethodPost || r.path != "/api/v1/namespaces/dsbench/pods" || !strings.Contains(r.body, "second") {
		t.Fatalf("landed %+v, want the 2nd create as sent", r)
	}
	waitCounts(t, p, func(c Counts) bool { return c.Landed == 1 && c.Landing == 0 })

	if err := pods.Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("3rd pod write: %v", err)
	}
	wait(t, got)
	if err := pods.Delete(ctx, "second", metav1.DeleteOptions{}); !apierrors.IsTimeout(err) {
		t.Fatalf("4th pod write: %v, want Timeout", err)
	}
	waitForTimer(t, clk)
	clk.Step(2 * time.Second)
	if r := wait(t, got); r.method != http.MethodDelete || r.path != "/api/v1/namespaces/dsbench/pods/second" {
		t.Fatalf("landed %+v, want the delete of second", r)
	}
	waitCounts(t, p, func(c Counts) bool { return c.TimedOut == 2 && c.Landed == 2 && c.Landing == 0 && c.LandFailed == 0 })

	p.SetWriteTimeouts(WriteTimeouts{})
	for range 3 {
		if _, err := pods.Create(ctx, pod("after"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("a pod write after the fault: %v", err)
		}
		wait(t, got)
	}
}

// A write not landed when the proxy closes never lands.
func TestCloseDropsWritesNotLanded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	got := make(chan received, 10)
	p, err := New(Config{Upstream: upstream(t, podServer(got)), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	p.SetWriteTimeouts(WriteTimeouts{Every: 1, LandAfter: time.Hour})
	pods := clientFor(t, p).CoreV1().Pods("dsbench")
	if err := pods.Delete(t.Context(), "agent-x2k9q", metav1.DeleteOptions{}); !apierrors.IsTimeout(err) {
		t.Fatalf("delete: %v, want Timeout", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Hour) // past the landing it would have had
	nothingReceived(t, got)
	if c := p.Counts(); c.TimedOut != 1 || c.LandFailed != 1 || c.Landed != 0 || c.Landing != 0 || c.LandFailedBy["DELETE not sent"] != 1 {
		t.Errorf("counts %+v, want 1 timed out that never landed, not sent", c)
	}
}

// A late write the API server refuses counts as not landed, by its code;
// one it does not answer within the late-write deadline counts as not
// landed without one, and no longer waits to land.
func TestLateWritesRefusedOrUnanswered(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	got := make(chan received, 10)
	server := func(w http.ResponseWriter, r *http.Request) {
		got <- received{method: r.Method, path: r.URL.Path}
		if r.Method == http.MethodDelete {
			<-r.Context().Done() // never answers
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"AlreadyExists","code":409}`)
	}
	p := start(t, Config{Upstream: upstream(t, server), Clock: clk, LateWriteTimeout: 100 * time.Millisecond})
	p.SetWriteTimeouts(WriteTimeouts{Every: 1, LandAfter: time.Second})
	pods := clientFor(t, p).CoreV1().Pods("dsbench")
	ctx := t.Context()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-x2k9q", Namespace: "dsbench"}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); !apierrors.IsTimeout(err) {
		t.Fatalf("create: %v, want Timeout", err)
	}
	waitForTimer(t, clk)
	clk.Step(time.Second)
	if r := wait(t, got); r.method != http.MethodPost {
		t.Fatalf("landed %+v, want the create", r)
	}
	waitCounts(t, p, func(c Counts) bool { return c.Landing == 0 })
	if c := p.Counts(); c.LandFailed != 1 || c.Landed != 0 || !reflect.DeepEqual(c.LandFailedBy, map[string]int64{"POST 409": 1}) {
		t.Fatalf("after the refused create: %+v, want it counted as POST 409", c)
	}

	if err := pods.Delete(ctx, "agent-x2k9q", metav1.DeleteOptions{}); !apierrors.IsTimeout(err) {
		t.Fatalf("delete: %v, want Timeout", err)
	}
	waitForTimer(t, clk)
	clk.Step(time.Second)
	if r := wait(t, got); r.method != http.MethodDelete {
		t.Fatalf("landed %+v, want the delete", r)
	}
	// Only the deadline (real time, 100 ms) ends it now.
	waitCounts(t, p, func(c Counts) bool { return c.Landing == 0 })
	if c := p.Counts(); c.TimedOut != 2 || c.LandFailed != 2 || c.Landed != 0 ||
		!reflect.DeepEqual(c.LandFailedBy, map[string]int64{"POST 409": 1, "DELETE no answer": 1}) {
		t.Fatalf("after the unanswered delete: %+v, want it counted as DELETE no answer", c)
	}
}

func waitCounts(t *testing.T, p *Proxy, ok func(Counts) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(p.Counts()) {
		if time.Now().After(deadline) {
			t.Fatalf("counts %+v", p.Counts())
		}
		time.Sleep(time.Millisecond)
	}
}
