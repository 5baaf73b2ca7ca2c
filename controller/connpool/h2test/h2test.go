// Package h2test serves HTTP/2 over TLS with a limit of streams per
// connection, as kube-apiserver does, and counts the connections it accepts
// and the streams in flight on each: what the tests of controller/connpool
// and of the clients built on it measure.
package h2test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Server is a started HTTP/2 test server; it closes when the test ends.
type Server struct {
	*httptest.Server

	mu          sync.Mutex
	conns       int
	inFlight    map[string]int // by client address: one per connection
	maxInFlight map[string]int
}

// NewServer serves handler with at most maxStreams streams per connection.
// A request counts as in flight from its arrival until the handler writes
// its body's first bytes (or returns): the client may reuse the stream as
// soon as it has read the body.
func NewServer(t testing.TB, maxStreams int, handler http.Handler) *Server {
	t.Helper()
	s := &Server{inFlight: map[string]int{}, maxInFlight: map[string]int{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "HTTP/2 only", http.StatusHTTPVersionNotSupported)
			return
		}
		s.mu.Lock()
		s.inFlight[r.RemoteAddr]++
		s.maxInFlight[r.RemoteAddr] = max(s.maxInFlight[r.RemoteAddr], s.inFlight[r.RemoteAddr])
		s.mu.Unlock()
		cw := &countingWriter{ResponseWriter: w, done: func() {
			s.mu.Lock()
			s.inFlight[r.RemoteAddr]--
			s.mu.Unlock()
		}}
		handler.ServeHTTP(cw, r)
		cw.once.Do(cw.done)
	}))
	s.EnableHTTP2 = true
	s.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: maxStreams}
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

// NewTransport is a transport of its own (its own connections) that trusts
// the server.
func (s *Server) NewTransport() http.RoundTripper {
	return s.Client().Transport.(*http.Transport).Clone()
}

// Connections is the number of connections accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// MaxStreamsOnAConnection is the most requests seen in flight at once on
// one connection.
func (s *Server) MaxStreamsOnAConnection() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := 0
	for _, n := range s.maxInFlight {
		m = max(m, n)
	}
	return m
}

// countingWriter ends its request's count at the first body write.
type countingWriter struct {
	http.ResponseWriter
	once sync.Once
	done func()
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.once.Do(w.done)
	return w.ResponseWriter.Write(p)
}

func (w *countingWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }
