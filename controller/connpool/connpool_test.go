package connpool

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/dsbench/dsbench/controller/connpool/h2test"
)

// streamLimitedServer is an HTTP/2 server that allows maxStreams per
// connection, as kube-apiserver does, and holds each response's body until
// release is closed.
type streamLimitedServer struct {
	*h2test.Server
	release chan struct{}
	arrived chan struct{}
}

func newStreamLimitedServer(t *testing.T, maxStreams int) *streamLimitedServer {
	t.Helper()
	s := &streamLimitedServer{release: make(chan struct{}), arrived: make(chan struct{}, 10000)}
	s.Server = h2test.NewServer(t, maxStreams, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.arrived <- struct{}{}
		// Headers now, body on release: the stream stays open while the
		// client holds the response, as a slow API response would.
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-s.release
		_, _ = io.WriteString(w, "ok")
	}))
	// Runs before the server's Close, which waits for the handlers.
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
	})
	return s
}

// burst sends n requests at once through rt, waits until want of them have
// reached the server, releases them all and returns when every response is
// read.
func burst(t *testing.T, s *streamLimitedServer, rt http.RoundTripper, n, want int) {
	t.Helper()
	client := &http.Client{Transport: rt}
	var g errgroup.Group
	for range n {
		g.Go(func() error {
			resp, err := client.Get(s.URL)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK || string(body) != "ok" {
				return errors.New("unexpected response " + resp.Status + " " + string(body))
			}
			return nil
		})
	}
	for range want {
		select {
		case <-s.arrived:
		case <-time.After(30 * time.Second):
			t.Fatalf("only some of the %d requests expected in flight reached the server", want)
		}
	}
	close(s.release)
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// Without a pool, a burst beyond one connection's streams dials a connection
// per waiting request: what the pool exists to prevent.
func TestOneTransportDialsPerWaitingRequest(t *testing.T) {
	s := newStreamLimitedServer(t, 10)
	burst(t, s, s.NewTransport(), 100, 100)
	conns := s.Connections()
	t.Logf("one transport, a burst of 100 against 10 streams per connection: %d connections", conns)
	if conns <= 3 {
		t.Fatalf("a burst of 100 against 10 streams per connection opened %d connections; the pool's test below relies on more", conns)
	}
}

func TestPoolKeepsOneConnectionPerTransport(t *testing.T) {
	s := newStreamLimitedServer(t, 10)
	p, err := New([]http.RoundTripper{s.NewTransport(), s.NewTransport(), s.NewTransport()}, 6, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 18 fill the streams; the other 82 wait in the pool. 6 of the
	// server's 10 leaves room for the streams that Go's client still
	// counts for a moment after their body is read. The transports start
	// cold: each takes one request until its connection is up.
	burst(t, s, p, 100, 18)
	// Every stream ends at once here, and each is handed on at once: Go's
	// client, still counting a few of the ended ones, may dial one more now
	// and then. One transport alone dialled hundreds (the test above).
	if conns := s.Connections(); conns < 3 || conns > 5 {
		t.Errorf("connections: got %d, want 3 (one per transport), or one or two more", conns)
	}
	if m := s.MaxStreamsOnAConnection(); m > 6 {
		t.Errorf("streams in flight on one connection: got %d, want at most 6", m)
	}
	waitFor(t, func() bool { in := p.InFlight(); return in[0]+in[1]+in[2] == 0 })
}

// gatedTransport stands for a transport that must dial: each RoundTrip
// waits until the gate opens. What counts is how many calls were held at
// the gate when it opened; once open, calls may overlap by chance.
type gatedTransport struct {
	mu       sync.Mutex
	open     chan struct{}
	inFlight int
	failNext bool // the next call fails at once, as a refused dial
}

// shut closes the gate for the calls to come.
func (g *gatedTransport) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = make(chan struct{})
}

// openAfter opens the gate after d and reports the calls it held.
func (g *gatedTransport) openAfter(d time.Duration) int {
	time.Sleep(d)
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.open)
	return g.inFlight
}

func (g *gatedTransport) RoundTrip(*http.Request) (*http.Response, error) {
	g.mu.Lock()
	if g.failNext {
		g.failNext = false
		g.mu.Unlock()
		return nil, errors.New("dial refused")
	}
	g.inFlight++
	open := g.open
	g.mu.Unlock()
	<-open
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("ok"))}, nil
}

// roundTrips sends n requests through p at once and reads every response.
func roundTrips(t *testing.T, p *Pool, n int) {
	t.Helper()
	var g errgroup.Group
	for range n {
		g.Go(func() error {
			resp, err := p.RoundTrip(mustRequest(t, "https://api.invalid", context.Background()))
			if err != nil {
				return err
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestPoolSendsOneRequestOnAColdTransport(t *testing.T) {
	now := time.Unix(1000, 0)
	var clockMu sync.Mutex
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }
	rt := &gatedTransport{}
	p, err := New([]http.RoundTripper{rt}, 50, clock)
	if err != nil {
		t.Fatal(err)
	}

	for _, step := range []struct {
		name     string
		idle     time.Duration
		wantHeld int // calls on the transport while the first waited
	}{
		{"never used", 0, 1},
		{"idle under ColdAfter", ColdAfter - time.Second, 20},
		{"idle for ColdAfter", ColdAfter, 1},
	} {
		advance(step.idle)
		rt.shut()
		held := make(chan int, 1)
		// 100 ms gives the burst time to pile up on the transport, if
		// the pool let it.
		go func() { held <- rt.openAfter(100 * time.Millisecond) }()
		roundTrips(t, p, 20)
		if got := <-held; got != step.wantHeld {
			t.Errorf("%s: %d calls on the transport while the first waited, want %d", step.name, got, step.wantHeld)
		}
	}
}

// A probe that fails proves no connection: the next burst probes again
// rather than every request dialling.
func TestPoolProbesAgainAfterAFailedProbe(t *testing.T) {
	rt := &gatedTransport{failNext: true}
	p, err := New([]http.RoundTripper{rt}, 50, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RoundTrip(mustRequest(t, "https://api.invalid", context.Background())); err == nil {
		t.Fatal("the failing probe succeeded")
	}
	rt.shut()
	held := make(chan int, 1)
	go func() { held <- rt.openAfter(100 * time.Millisecond) }()
	roundTrips(t, p, 20)
	if got := <-held; got != 1 {
		t.Errorf("%d calls on the transport while the probe after a failed one waited, want 1", got)
	}
}

func TestPoolWaiterGivesUpWithItsContext(t *testing.T) {
	s := newStreamLimitedServer(t, 10)
	p, err := New([]http.RoundTripper{s.NewTransport()}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		resp, err := p.RoundTrip(mustRequest(t, s.URL, context.Background()))
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		first <- err
	}()
	<-s.arrived
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.RoundTrip(mustRequest(t, s.URL, ctx)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request waiting for a stream past its deadline: got %v, want context.DeadlineExceeded", err)
	}
	close(s.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The stream freed by the first request is free again, not lost to the
	// waiter that left.
	waitFor(t, func() bool { return p.InFlight()[0] == 0 })
	resp, err := p.RoundTrip(mustRequest(t, s.URL, context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := p.InFlight()[0]; got != 0 {
		t.Fatalf("in flight after the last body closed: %d", got)
	}
}

func TestPoolReleasesOnTransportError(t *testing.T) {
	p, err := New([]http.RoundTripper{failingTransport{}}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // with the stream lost, the second would wait forever
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := p.RoundTrip(mustRequest(t, "https://example.invalid", ctx))
		cancel()
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the transport's error", err)
		}
	}
}

func TestNewRejectsBadArguments(t *testing.T) {
	if _, err := New(nil, 1, nil); err == nil {
		t.Error("no transports: want an error")
	}
	if _, err := New([]http.RoundTripper{failingTransport{}}, 0, nil); err == nil {
		t.Error("zero streams: want an error")
	}
}

type failingTransport struct{}

func (failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("dial refused")
}

func mustRequest(t *testing.T, url string, ctx context.Context) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
