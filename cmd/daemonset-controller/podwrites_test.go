package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/dsbench/dsbench/controller/connpool/h2test"
)

// podServer answers pod creates slowly over HTTP/2 (10 streams per
// connection) and counts the requests by method and path.
type podServer struct {
	*h2test.Server
	mu    sync.Mutex
	paths map[string]int
}

func newPodServer(t *testing.T) *podServer {
	s := &podServer{paths: map[string]int{}}
	s.Server = h2test.NewServer(t, 10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths[r.Method+" "+r.URL.Path]++
		s.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		var pod corev1.Pod
		_ = json.NewDecoder(r.Body).Decode(&pod)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(&pod)
	}))
	return s
}

func createPods(t *testing.T, client kubernetes.Interface, n int) {
	t.Helper()
	var g errgroup.Group
	for i := range n {
		g.Go(func() error {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)}}
			_, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestPodWriteClientKeepsItsConnections(t *testing.T) {
	s := newPodServer(t)
	cfg := &rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: -1}
	// 5 of the server's 10 streams: Go's client counts a stream for a
	// moment after its body is read and dials when it counts the limit
	// (with 8, one run in a few dialled 5 connections).
	client, err := newPodWriteClient(cfg, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	createPods(t, client, 100)
	s.mu.Lock()
	creates := s.paths["POST /api/v1/namespaces/default/pods"]
	s.mu.Unlock()
	if creates != 100 {
		t.Fatalf("pod creates that reached the server: %d, want 100", creates)
	}
	// Two connections, one per transport; a stray third may come from a
	// probe's race with the connection coming up, never one per waiter.
	if n := s.Connections(); n < 2 || n > 3 {
		t.Errorf("connections dialled for 100 creates over 2 transports: %d, want 2 (3 at most)", n)
	}
	if m := s.MaxStreamsOnAConnection(); m > 5 {
		t.Errorf("a connection had %d creates in flight, more than the 5 streams asked for", m)
	}
}

// The baseline the pool exists to beat: the same burst over a plain client
// dials a connection for most of the creates that find no free stream.
func TestPlainClientDialsPerWaitingRequest(t *testing.T) {
	s := newPodServer(t)
	cfg := &rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: -1}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	createPods(t, client, 100)
	if n := s.Connections(); n <= 3 {
		t.Errorf("a plain client dialled %d connections for 100 creates against 10 streams each; the pool's test would prove nothing", n)
	}
}

func TestWithSharedRateLimiter(t *testing.T) {
	cfg := &rest.Config{QPS: 50, Burst: 100}
	shared := withSharedRateLimiter(cfg)
	if cfg.RateLimiter != nil {
		t.Fatal("the original config was given the shared limiter")
	}
	if shared.RateLimiter == nil || shared.RateLimiter.QPS() != 50 {
		t.Fatalf("shared rate limiter: %v", shared.RateLimiter)
	}
	if a, b := rest.CopyConfig(shared), rest.CopyConfig(shared); a.RateLimiter != b.RateLimiter {
		t.Fatal("copies of the config do not share the limiter")
	}
	if off := withSharedRateLimiter(&rest.Config{QPS: -1}); off.RateLimiter != nil {
		t.Fatal("a limiter was made for a client with the limit off")
	}
}
