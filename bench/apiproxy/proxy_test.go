package apiproxy

import (
	"bufio"
	"context"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestLatencyFor(t *testing.T) {
	l := Latency{Write: 2 * time.Second, Read: time.Second}
	for method, want := range map[string]time.Duration{
		http.MethodPost: 2 * time.Second, http.MethodPut: 2 * time.Second, http.MethodPatch: 2 * time.Second, http.MethodDelete: 2 * time.Second,
		http.MethodGet: time.Second, http.MethodHead: time.Second, http.MethodOptions: time.Second,
	} {
		if got := l.For(method); got != want {
			t.Errorf("For(%s) = %v, want %v", method, got, want)
		}
	}
}

// upstream is an API server stand-in over TLS and HTTP/2, as kube-apiserver
// is, that accepts only the harness's token; handler answers what it
// admits.
func upstream(t *testing.T, handler http.HandlerFunc) *rest.Config {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer harness" {
			http.Error(w, "unauthorized: "+got, http.StatusUnauthorized)
			return
		}
		handler(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes that Close cuts short
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &rest.Config{Host: srv.URL, BearerToken: "harness", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// echo answers the method and path.
func echo(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, r.Method+" "+r.URL.Path)
}

func start(t *testing.T, conf Config) *Proxy {
	t.Helper()
	p, err := New(conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

type result struct {
	body string
	err  error
}

// send makes one request through the proxy, in the background.
func send(ctx context.Context, p *Proxy, method, path string) <-chan result {
	out := make(chan result, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, method, p.URL()+path, nil)
		if err != nil {
			out <- result{err: err}
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status + ": " + string(b))
		}
		out <- result{body: string(b), err: err}
	}()
	return out
}

// wait returns what ch gives, failing after 10 s without.
func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		var zero T
		t.Fatalf("nothing in 10 s (%T)", zero)
		return zero
	}
}

// waitForTimer waits until a request is held on the fake clock.
func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("no request waits on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

// pending fails unless the request still waits.
func pending(t *testing.T, ch <-chan result) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("answered before its latency passed: %q, %v", r.body, r.err)
	default:
	}
}

// A write waits for the write latency on the clock; a read with no read
// latency goes through at once; switched off, writes go through at once too.
func TestWritesDelayedReadsNot(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	p := start(t, Config{Upstream: upstream(t, echo), Clock: clk})
	p.SetLatency(Latency{Write: 200 * time.Millisecond})

	if r := wait(t, send(t.Context(), p, http.MethodGet, "/api/v1/pods")); r.err != nil || r.body != "GET /api/v1/pods" {
		t.Fatalf("read: %q, %v", r.body, r.err)
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		ch := send(t.Context(), p, method, "/apis/apps/v1/namespaces/dsbench/daemonsets/agent")
		waitForTimer(t, clk)
		clk.Step(199 * time.Millisecond)
		pending(t, ch)
		clk.Step(time.Millisecond)
		if r := wait(t, ch); r.err != nil || !strings.HasPrefix(r.body, method+" ") {
			t.Fatalf("%s: %q, %v", method, r.body, r.err)
		}
	}
	if got, want := p.Counts(), (Counts{Requests: 5, Delayed: 4, LandFailedBy: map[string]int64{}}); !reflect.DeepEqual(got, want) {
		t.Errorf("counts %+v, want %+v", got, want)
	}

	p.SetLatency(Latency{})
	if r := wait(t, send(t.Context(), p, http.MethodPost, "/api/v1/namespaces/dsbench/pods")); r.err != nil {
		t.Fatalf("write after the fault: %v", r.err)
	}
	p.SetLatency(Latency{Read: time.Second})
	ch := send(t.Context(), p, http.MethodGet, "/api/v1/nodes")
	waitForTimer(t, clk)
	pending(t, ch)
	clk.Step(time.Second)
	if r := wait(t, ch); r.err != nil {
		t.Fatalf("delayed read: %v", r.err)
	}
	if got, want := p.Counts(), (Counts{Requests: 7, Delayed: 5, LandFailedBy: map[string]int64{}}); !reflect.DeepEqual(got, want) {
		t.Errorf("counts %+v, want %+v", got, want)
	}
}

// On the real clock a write takes at least its latency.
func TestWriteLatencyOnTheRealClock(t *testing.T) {
	p := start(t, Config{Upstream: upstream(t, echo)})
	p.SetLatency(Latency{Write: 100 * time.Millisecond})
	begin := time.Now()
	if r := wait(t, send(t.Context(), p, http.MethodPatch, "/api/v1/nodes/n-1")); r.err != nil {
		t.Fatal(r.err)
	}
	if took := time.Since(begin); took < 100*time.Millisecond {
		t.Errorf("a write took %v, less than its latency", took)
	}
}

// The API server sees the harness's credentials, never the client's.
func TestUpstreamCredentials(t *testing.T) {
	p := start(t, Config{Upstream: upstream(t, echo)})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, p.URL()+"/version", nil)
	req.Header.Set("Authorization", "Bearer intruder")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %s, want the harness's token to reach the API server", resp.Status)
	}
}

// A watch streams event by event: the first reaches the client while the
// API server still holds the second back.
func TestWatchStreamsChunkByChunk(t *testing.T) {
	next := make(chan struct{})
	p := start(t, Config{Upstream: upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		f := w.(http.Flusher)
		_, _ = io.WriteString(w, `{"type":"ADDED"}`+"\n")
		f.Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, `{"type":"MODIFIED"}`+"\n")
		f.Flush()
	})})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, p.URL()+"/api/v1/pods?watch=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for i, want := range []string{`{"type":"ADDED"}`, `{"type":"MODIFIED"}`} {
		select {
		case got := <-lines:
			if got != want {
				t.Fatalf("event %d: %q, want %q", i, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d did not come through while the API server held the next", i)
		}
		if i == 0 {
			close(next)
		}
	}
}

// Close ends an open watch and a delayed request, returns, and the proxy
// takes no request after it.
func TestCloseEndsEverything(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	watchStarted, watchEnded := make(chan struct{}), make(chan struct{})
	p, err := New(Config{Clock: clk, Upstream: upstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			echo(w, r)
			return
		}
		w.(http.Flusher).Flush()
		close(watchStarted)
		<-r.Context().Done()
		close(watchEnded)
	})})
	if err != nil {
		t.Fatal(err)
	}
	watch := send(t.Context(), p, http.MethodGet, "/api/v1/pods?watch=true")
	select {
	case <-watchStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not reach the API server")
	}
	p.SetLatency(Latency{Write: time.Hour})
	write := send(t.Context(), p, http.MethodPost, "/api/v1/namespaces/dsbench/pods")
	waitForTimer(t, clk)

	closed := make(chan error)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a watch open and a write delayed")
	}
	if r := wait(t, write); r.err == nil {
		t.Errorf("the delayed write went through after Close: %q", r.body)
	}
	wait(t, watch) // ended, however
	select {
	case <-watchEnded:
	case <-time.After(10 * time.Second):
		t.Error("the API server's side of the watch did not end")
	}
	if r := wait(t, send(t.Context(), p, http.MethodGet, "/version")); r.err == nil {
		t.Errorf("a request after Close went through")
	}
	if err := p.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// The kubeconfig reaches the API server through the proxy, with no
// credentials of its own.
func TestWriteKubeconfig(t *testing.T) {
	p := start(t, Config{Upstream: upstream(t, echo)})
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := p.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != p.URL() || cfg.BearerToken != "" || len(cfg.CertData) > 0 || cfg.CertFile != "" {
		t.Errorf("config %+v: want the proxy's URL and no credentials", cfg)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(p.URL() + "/version")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "GET /version" {
		t.Errorf("through the kubeconfig: %q", b)
	}
}
