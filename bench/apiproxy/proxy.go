package apiproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"sync"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"
)

// Latency is the delay the proxy adds before it forwards a request.
type Latency struct {
	// Write delays the requests that write: POST, PUT, PATCH and DELETE.
	Write time.Duration
	// Read delays every other request: GET (a get, a list, the start of a
	// watch; its events then stream undelayed), HEAD, OPTIONS.
	Read time.Duration
}

// IsWrite says whether a request of this method writes.
func IsWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// For is the delay of a request of this method.
func (l Latency) For(method string) time.Duration {
	if IsWrite(method) {
		return l.Write
	}
	return l.Read
}

// Config is what a Proxy forwards to.
type Config struct {
	// Upstream is the API server and the credentials the proxy sends every
	// request with (rest.TransportFor: the client certificate, a token).
	Upstream *rest.Config
	// Clock times the delays; nil is the real clock.
	Clock clock.Clock
	// LateWriteTimeout bounds a timed-out write's trip to the API server
	// once it is sent; 0 is the package's LateWriteTimeout.
	LateWriteTimeout time.Duration
}

// Counts are what a proxy has done so far.
type Counts struct {
	// Requests it received.
	Requests int64
	// Delayed are the requests it held back by a latency above zero.
	Delayed int64
	// Failed are the requests it could not forward: the API server not
	// reachable, or the client or the proxy gone before the response began.
	Failed int64
	// TimedOut are the pod writes it answered Timeout (WriteTimeouts);
	// Landed of them reached the API server later and were applied,
	// LandFailed were not (refused, or the proxy closed first), and Landing
	// wait to be sent.
	TimedOut, Landed, LandFailed, Landing int64
	// LandFailedBy splits LandFailed by why, e.g. "DELETE 404" (the
	// method and the status code: the API server's, or 502 when it could
	// not be reached), "POST no answer" (the deadline passed or the
	// response broke off) or "POST not sent" (the proxy closed first).
	LandFailedBy map[string]int64
}

// Proxy listens on 127.0.0.1 over plain HTTP, without authentication, and
// forwards every request to the API server with the upstream's credentials,
// after the latency set for its method, unless a write timeout answers it
// first. Responses stream through as they come (watches event by event).
type Proxy struct {
	clock   clock.Clock
	latency atomic.Pointer[Latency]

	requests, delayed, failed atomic.Int64

	timeouts                  atomic.Pointer[WriteTimeouts]
	podWrites                 atomic.Int64 // since the fault was set
	timedOut, landed, landing atomic.Int64
	lateWriteTimeout          time.Duration
	landFailedByMu            sync.Mutex
	landFailedBy              map[string]int64 // LandFailed is their sum

	url       string
	transport http.RoundTripper
	rp        *httputil.ReverseProxy
	srv       *http.Server
	served    chan struct{} // closed when Serve returns

	// ctx ends with Close: it cuts delays short and cancels the requests
	// forwarded, open watches included.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
}

// New starts a proxy on a free port of 127.0.0.1, with no latency and no
// write timeouts.
func New(conf Config) (*Proxy, error) {
	if conf.Upstream == nil {
		return nil, errors.New("starting the API proxy: no upstream configuration")
	}
	if conf.Clock == nil {
		conf.Clock = clock.RealClock{}
	}
	target, _, err := rest.DefaultServerUrlFor(conf.Upstream)
	if err != nil {
		return nil, fmt.Errorf("starting the API proxy: the API server's URL: %w", err)
	}
	up := rest.CopyConfig(conf.Upstream)
	// client-go caches transports by TLS configuration, so the proxy would
	// share the harness's connections; it cannot compare functions, so a
	// Proxy func (the default one) gets the controller's traffic a
	// transport and connections of its own, which Close closes.
	up.Proxy = utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)
	rt, err := rest.TransportFor(up)
	if err != nil {
		return nil, fmt.Errorf("starting the API proxy: the upstream transport: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the API proxy: %w", err)
	}
	quiet := log.New(io.Discard, "", 0)
	if conf.LateWriteTimeout <= 0 {
		conf.LateWriteTimeout = LateWriteTimeout
	}
	p := &Proxy{clock: conf.Clock, url: "http://" + ln.Addr().String(), transport: rt, served: make(chan struct{}),
		lateWriteTimeout: conf.LateWriteTimeout, landFailedBy: map[string]int64{}}
	p.latency.Store(&Latency{})
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The API server sees the upstream's identity only.
			pr.Out.Header.Del("Authorization")
		},
		Transport: rt,
		// Flush every write at once: a watch event must not wait for the
		// next one.
		FlushInterval: -1,
		ErrorLog:      quiet,
		ErrorHandler:  p.forwardFailed,
	}
	p.srv = &http.Server{Handler: p, ErrorLog: quiet, ReadHeaderTimeout: time.Minute}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// URL is where the proxy listens: http://127.0.0.1:<port>.
func (p *Proxy) URL() string { return p.url }

// SetLatency sets the delays of the requests that arrive from now on.
func (p *Proxy) SetLatency(l Latency) { p.latency.Store(&l) }

// Latency is the delay set now.
func (p *Proxy) Latency() Latency { return *p.latency.Load() }

// Counts is what the proxy has done so far.
func (p *Proxy) Counts() Counts {
	p.landFailedByMu.Lock()
	by := maps.Clone(p.landFailedBy)
	p.landFailedByMu.Unlock()
	var landFailed int64
	for _, n := range by {
		landFailed += n
	}
	return Counts{Requests: p.requests.Load(), Delayed: p.delayed.Load(), Failed: p.failed.Load(),
		TimedOut: p.timedOut.Load(), Landed: p.landed.Load(), LandFailed: landFailed, Landing: p.landing.Load(),
		LandFailedBy: by}
}

// ServeHTTP delays the request by the latency of its method, then forwards
// it, or answers it Timeout and forwards it later (SetWriteTimeouts).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		http.Error(w, "apiproxy: closed", http.StatusServiceUnavailable)
		return
	}
	defer p.inflight.Done()
	p.requests.Add(1)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()
	if d := p.Latency().For(r.Method); d > 0 {
		p.delayed.Add(1)
		t := p.clock.NewTimer(d)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			p.failed.Add(1)
			http.Error(w, "apiproxy: closed", http.StatusServiceUnavailable)
			return
		}
	}
	if p.timeOut(w, r) {
		return
	}
	p.rp.ServeHTTP(w, r.WithContext(ctx))
}

// enter admits a request unless the proxy is closed; the caller calls
// inflight.Done when it is over.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.inflight.Add(1)
	return true
}

// forwardFailed answers a request the API server could not be asked, or
// whose response broke off, quietly: the client sees a 502 and retries.
func (p *Proxy) forwardFailed(w http.ResponseWriter, r *http.Request, err error) {
	if _, late := w.(*statusRecorder); !late {
		p.failed.Add(1) // a late write counts in LandFailed instead
	}
	if r.Context().Err() != nil {
		return // the client or the proxy is gone: nobody to answer
	}
	http.Error(w, "apiproxy: "+err.Error(), http.StatusBadGateway)
}

// Close stops the proxy: it stops listening, ends every delay and every
// request it forwards (watches too), drops the timed-out writes not yet
// landed, waits for their handlers and closes its
// upstream connections. Safe to repeat.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	err := p.srv.Close()
	p.inflight.Wait()
	<-p.served
	utilnet.CloseIdleConnectionsFor(p.transport)
	if err != nil {
		return fmt.Errorf("closing the API proxy: %w", err)
	}
	return nil
}

// WriteKubeconfig writes a kubeconfig that reaches the API server through
// the proxy, with no credentials of its own (the proxy adds the upstream's).
func (p *Proxy) WriteKubeconfig(path string) error {
	const name = "dsbench-apiproxy"
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{name: {Server: p.url}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: name, AuthInfo: name}},
		CurrentContext: name,
	}
	data, err := clientcmd.Write(cfg)
	if err != nil {
		return fmt.Errorf("writing the API proxy's kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing the API proxy's kubeconfig: %w", err)
	}
	return nil
}
