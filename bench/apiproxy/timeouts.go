package apiproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WriteTimeouts makes the proxy answer some pod writes as kube-apiserver
// does when its request deadline passes while the handler still runs: 504
// with a Status of reason Timeout, at once. The write is applied all the
// same, LandAfter later, as the abandoned handler would apply it.
type WriteTimeouts struct {
	// Every: one pod create or pod delete in Every is answered Timeout (1:
	// all); 0 switches the fault off.
	Every int
	// LandAfter is how long after the answer the write reaches the API
	// server.
	LandAfter time.Duration
}

// LateWriteTimeout bounds a timed-out write's trip to the API server once
// it is sent (kube-apiserver's own default request timeout): a write still
// unanswered then counts as not landed. Config.LateWriteTimeout overrides
// it.
const LateWriteTimeout = time.Minute

// timeoutMessage is kube-apiserver's own text for a request whose deadline
// passed while its handler ran on (its request finisher's).
const timeoutMessage = "Timeout: request did not complete within requested timeout - context deadline exceeded"

// timeoutBody is the Status kube-apiserver answers with then.
var timeoutBody = func() []byte {
	b, err := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: timeoutMessage,
		Reason: metav1.StatusReasonTimeout, Details: &metav1.StatusDetails{}, Code: http.StatusGatewayTimeout,
	})
	if err != nil {
		panic(err) // a constant value: cannot fail
	}
	return b
}()

// SetWriteTimeouts sets the fault for the pod writes that arrive from now on.
func (p *Proxy) SetWriteTimeouts(w WriteTimeouts) {
	p.timeouts.Store(&w)
	p.podWrites.Store(0)
}

// IsPodWrite says whether a request creates a pod or deletes one: a POST to
// a namespace's pods, or a DELETE of one pod (no subresource, no
// collection delete).
func IsPodWrite(method, path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// api/v1/namespaces/NS/pods[/NAME]
	if len(parts) < 5 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "namespaces" || parts[4] != "pods" {
		return false
	}
	switch method {
	case http.MethodPost:
		return len(parts) == 5
	case http.MethodDelete:
		return len(parts) == 6
	}
	return false
}

// timeOut answers r Timeout and applies it later, if the fault picks it;
// it says whether it did.
func (p *Proxy) timeOut(w http.ResponseWriter, r *http.Request) bool {
	f := p.timeouts.Load()
	if f == nil || f.Every <= 0 || !IsPodWrite(r.Method, r.URL.Path) {
		return false
	}
	if n := p.podWrites.Add(1); n%int64(f.Every) != 0 {
		return false
	}
	// Counted as landing from the pick on, so that whoever lifts the fault
	// and waits for Landing to reach 0 cannot miss a write picked before.
	p.landing.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		p.landing.Add(-1)
		p.failed.Add(1)
		http.Error(w, "apiproxy: reading the request: "+err.Error(), http.StatusBadRequest)
		return true
	}
	p.timedOut.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusGatewayTimeout)
	_, _ = w.Write(timeoutBody)
	// The answer goes out before the write can land, even at LandAfter 0.
	_ = http.NewResponseController(w).Flush()
	if !p.enter() {
		// Counted before it stops landing: whoever waits for Landing 0 then
		// reads the failure.
		p.landFailedAs(r.Method, "not sent") // closed meanwhile: the write never lands
		p.landing.Add(-1)
		return true
	}
	// Cloned now: the server's request is not to be used once the handler
	// has returned.
	late := r.Clone(p.ctx)
	late.Body = io.NopCloser(bytes.NewReader(body))
	late.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	late.ContentLength = int64(len(body))
	go func() {
		defer p.inflight.Done()
		defer p.landing.Add(-1)
		t := p.clock.NewTimer(f.LandAfter)
		select {
		case <-t.C():
		case <-p.ctx.Done():
			t.Stop()
			p.landFailedAs(late.Method, "not sent")
			return
		}
		ctx, cancel := context.WithTimeout(p.ctx, p.lateWriteTimeout)
		defer cancel()
		rec := &statusRecorder{header: http.Header{}}
		p.rp.ServeHTTP(rec, late.WithContext(ctx))
		switch {
		case rec.code >= 200 && rec.code < 300:
			p.landed.Add(1)
		case rec.code == 0 || ctx.Err() != nil:
			// No answer, or one cut off by the deadline or by Close.
			p.landFailedAs(late.Method, "no answer")
		default:
			p.landFailedAs(late.Method, strconv.Itoa(rec.code))
		}
	}()
	return true
}

// landFailedAs counts a timed-out write that did not land, and why.
func (p *Proxy) landFailedAs(method, why string) {
	p.landFailedByMu.Lock()
	p.landFailedBy[method+" "+why]++
	p.landFailedByMu.Unlock()
}

// statusRecorder is the ResponseWriter of a write whose client was already
// answered: it keeps the status code and drops the body.
type statusRecorder struct {
	header http.Header
	code   int
}

func (s *statusRecorder) Header() http.Header { return s.header }

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 && code >= 200 { // 1xx are interim
		s.code = code
	}
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return len(b), nil
}
