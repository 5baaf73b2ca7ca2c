// Package connpool spreads HTTP requests over a fixed set of transports, each
// holding one HTTP/2 connection, with at most a given number of streams in
// flight on each.
//
// Go's HTTP/2 client, when every stream of its connections is taken, dials a
// new connection (a TCP and TLS handshake) for each request that waits, and
// keeps them until they idle out: a burst of 1000 pod creates against
// kube-apiserver's 100 streams per connection dialled 60 to 80. On a small
// machine those handshakes cost the API server CPU the burst needs. Capping
// the writes at one connection's streams avoids them but makes the pods
// exist later. A Pool keeps a few connections open and makes the excess wait
// for a stream instead.
package connpool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// ColdAfter is how long a transport may go without a request in flight
// before its next request goes alone: its connection may have idled out
// (client-go's transports close one after 90 s), and every request that
// finds none dials its own.
const ColdAfter = 30 * time.Second

// Pool is an http.RoundTripper over a fixed set of transports, with at most
// Streams requests in flight on each; a request is in flight until its
// response body is closed or read to its end (its HTTP/2 stream is open
// until then). A request goes to the least busy transport with a free
// stream, or waits, in order of arrival, until one frees or its context is
// done. A cold transport (never used, idle for ColdAfter, or whose last
// probe failed) takes one
// request, and the others only once its response has come, so that it dials
// one connection. Safe for concurrent use.
type Pool struct {
	transports []http.RoundTripper
	streams    int
	now        func() time.Time

	mu       sync.Mutex
	inFlight []int
	idleFrom []time.Time // when inFlight last fell to 0; zero: no connection shown up yet
	probing  []bool      // a cold transport's first request is out
	waiting  []*waiter   // first come, first served
}

type waiter struct {
	granted chan grant
}

// grant is a stream on transport i; probe: the transport is cold and this
// is its first request.
type grant struct {
	i     int
	probe bool
}

// New returns a Pool over transports with at most streams requests in flight
// on each. Each transport must keep connections of its own (a transport
// shared by two entries would see twice the streams). Keep streams a little
// under the server's limit: Go's client still counts a stream for a moment
// after its body is read, and dials when it counts the limit. now is the
// clock; nil means time.Now.
func New(transports []http.RoundTripper, streams int, now func() time.Time) (*Pool, error) {
	if len(transports) == 0 {
		return nil, errors.New("connpool: no transports")
	}
	if streams <= 0 {
		return nil, fmt.Errorf("connpool: streams per transport must be positive, got %d", streams)
	}
	if now == nil {
		now = time.Now
	}
	n := len(transports)
	return &Pool{
		transports: transports, streams: streams, now: now,
		inFlight: make([]int, n), idleFrom: make([]time.Time, n), probing: make([]bool, n),
	}, nil
}

// RoundTrip sends req on a transport with a free stream, waiting for one if
// need be.
func (p *Pool) RoundTrip(req *http.Request) (*http.Response, error) {
	i, probe, err := p.acquire(req.Context())
	if err != nil {
		return nil, err
	}
	resp, err := p.transports[i].RoundTrip(req)
	if err != nil || resp.Body == nil {
		// A failed probe leaves the transport cold: its next request
		// probes again instead of the waiters all dialling.
		p.release(i, probe, probe && err != nil)
		return resp, err
	}
	if probe {
		p.probed(i)
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: func() { p.release(i, false, false) }}
	return resp, nil
}

// InFlight reports the requests in flight on each transport.
func (p *Pool) InFlight() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.inFlight...)
}

// acquire takes a stream; probe says it is a cold transport's first request.
func (p *Pool) acquire(ctx context.Context) (i int, probe bool, err error) {
	p.mu.Lock()
	if len(p.waiting) == 0 {
		if i, probe := p.takeLocked(); i >= 0 {
			p.mu.Unlock()
			return i, probe, nil
		}
	}
	w := &waiter{granted: make(chan grant, 1)}
	p.waiting = append(p.waiting, w)
	p.mu.Unlock()

	select {
	case g := <-w.granted:
		return g.i, g.probe, nil
	case <-ctx.Done():
		p.mu.Lock()
		for k, o := range p.waiting {
			if o == w {
				p.waiting = append(p.waiting[:k], p.waiting[k+1:]...)
				p.mu.Unlock()
				return -1, false, fmt.Errorf("waiting for a free HTTP/2 stream: %w", context.Cause(ctx))
			}
		}
		p.mu.Unlock()
		// Granted while the context ended: give the stream back.
		g := <-w.granted
		p.release(g.i, g.probe, g.probe) // a probe never sent proves nothing
		return -1, false, fmt.Errorf("waiting for a free HTTP/2 stream: %w", context.Cause(ctx))
	}
}

// takeLocked takes a stream on the least busy transport that can take one,
// -1 if none can. A cold transport can, and becomes probing.
func (p *Pool) takeLocked() (int, bool) {
	now := p.now()
	best := -1
	for i, n := range p.inFlight {
		if n >= p.streams || p.probing[i] {
			continue
		}
		if best < 0 || n < p.inFlight[best] {
			best = i
		}
	}
	if best < 0 {
		return -1, false
	}
	cold := p.inFlight[best] == 0 && (p.idleFrom[best].IsZero() || now.Sub(p.idleFrom[best]) >= ColdAfter)
	p.inFlight[best]++
	p.probing[best] = cold
	return best, cold
}

// probed ends transport i's probe: its connection is up, or failed.
func (p *Pool) probed(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probing[i] = false
	p.dispatchLocked()
}

// release frees a stream on transport i and gives free streams to waiters.
// endsProbe: the request was the transport's probe; stillCold: the probe
// did not show a connection up, so the transport stays cold.
func (p *Pool) release(i int, endsProbe, stillCold bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight[i]--
	if endsProbe {
		p.probing[i] = false
	}
	if p.inFlight[i] == 0 {
		if stillCold {
			p.idleFrom[i] = time.Time{}
		} else {
			p.idleFrom[i] = p.now()
		}
	}
	p.dispatchLocked()
}

func (p *Pool) dispatchLocked() {
	for len(p.waiting) > 0 {
		i, probe := p.takeLocked()
		if i < 0 {
			return
		}
		w := p.waiting[0]
		p.waiting = p.waiting[1:]
		w.granted <- grant{i, probe} // buffered: never blocks
	}
}

// releasingBody frees its stream once, on Close or at the end of the body.
type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.release)
	}
	return n, err
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
