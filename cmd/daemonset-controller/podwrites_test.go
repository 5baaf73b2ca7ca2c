package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// podServer answers pod creates slowly over HTTP/2 (10 streams per
// connection) and records the connections and the most creates in flight
// on each.
type podServer struct {
	*httptest.Server
	mu          sync.Mutex
	conns       int
	inFlight    map[string]int
	maxInFlight map[string]int
	paths       map[string]int
}

func newPodServer(t *testing.T) *podServer {
	s := &podServer{inFlight: map[string]int{}, maxInFlight: map[string]int{}, paths: map[string]int{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths[r.Method+" "+r.URL.Path]++
		s.inFlight[r.RemoteAddr]++
		s.maxInFlight[r.RemoteAddr] = max(s.maxInFlight[r.RemoteAddr], s.inFlight[r.RemoteAddr])
		s.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		var pod corev1.Pod
		_ = json.NewDecoder(r.Body).Decode(&pod)
		s.mu.Lock()
		s.inFlight[r.RemoteAddr]--
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(&pod)
	}))
	s.EnableHTTP2 = true
	s.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 10}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
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
	client, err := newPodWriteClient(cfg, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	createPods(t, client, 100)
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := s.paths["POST /api/v1/namespaces/default/pods"]; got != 100 {
		t.Fatalf("pod creates that reached the server: %d, want 100 (%v)", got, s.paths)
	}
	// Two connections, one per transport; a stray third may come from a
	// probe's race with the connection coming up, never one per waiter.
	if s.conns < 2 || s.conns > 3 {
		t.Errorf("connections dialled for 100 creates over 2 transports: %d, want 2 (3 at most)", s.conns)
	}
	for addr, n := range s.maxInFlight {
		if n > 8 {
			t.Errorf("connection %s had %d creates in flight, more than the 8 streams asked for", addr, n)
		}
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns <= 3 {
		t.Errorf("a plain client dialled %d connections for 100 creates against 10 streams each; the pool's test would prove nothing", s.conns)
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
