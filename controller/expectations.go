package controller

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultExpectationsTTL is how long unobserved creates or deletes hold back
// a DaemonSet before the controller stops waiting for them (upstream: 5 min).
const DefaultExpectationsTTL = 5 * time.Minute

// Expectations records, per DaemonSet key, the pod creates and deletes the
// controller has issued but not yet seen in its informer. While any are
// outstanding, a sync computes status only, so that a stale cache never
// causes a second pod on a node.
//
// Unlike upstream, deletes are tracked by pod key, so observing the same
// deletion twice (the graceful-delete update, then the final delete event)
// counts once, and every failed write lowers the expectation at once: a
// failed call is never waited for until the TTL (upstream #72155).
type Expectations struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu sync.Mutex
	m  map[string]*expectation
}

type expectation struct {
	adds      int                 // creates issued and not yet observed
	dels      map[string]struct{} // "namespace/name" of pods whose deletion is not yet observed
	timestamp time.Time           // when the expectation was set
}

// NewExpectations returns an empty store; ttl <= 0 means DefaultExpectationsTTL.
func NewExpectations(clk clock.PassiveClock, ttl time.Duration) *Expectations {
	if ttl <= 0 {
		ttl = DefaultExpectationsTTL
	}
	return &Expectations{clock: clk, ttl: ttl, m: map[string]*expectation{}}
}

// Satisfied reports whether the DaemonSet may act: nothing is outstanding,
// nothing was ever expected, or the expectation is older than the TTL.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.m[key]
	if !ok {
		return true
	}
	if exp.adds <= 0 && len(exp.dels) == 0 {
		return true
	}
	return e.clock.Since(exp.timestamp) > e.ttl
}

// Expired reports whether key has outstanding expectations older than the
// TTL; it is for logging why a sync proceeded anyway.
func (e *Expectations) Expired(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.m[key]
	if !ok || (exp.adds <= 0 && len(exp.dels) == 0) {
		return false
	}
	return e.clock.Since(exp.timestamp) > e.ttl
}

// Expect replaces key's expectation: adds creates and the deletion of the
// given pod keys. Call it before issuing the writes.
func (e *Expectations) Expect(key string, adds int, podKeys []string) {
	dels := make(map[string]struct{}, len(podKeys))
	for _, k := range podKeys {
		dels[k] = struct{}{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{adds: adds, dels: dels, timestamp: e.clock.Now()}
}

// CreationObserved lowers the expected creates by n: the informer saw n new
// pods, or n create calls failed or were skipped.
func (e *Expectations) CreationObserved(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		exp.adds = max(exp.adds-n, 0)
	}
}

// DeletionObserved removes podKey from the expected deletions; it is
// idempotent, so repeated observations of one pod are harmless.
func (e *Expectations) DeletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		delete(exp.dels, podKey)
	}
}

// ExpiresIn is how long until key's outstanding expectation expires; 0 if
// nothing is outstanding or it has expired already.
func (e *Expectations) ExpiresIn(key string) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.m[key]
	if !ok || (exp.adds <= 0 && len(exp.dels) == 0) {
		return 0
	}
	// +1ns: Satisfied needs strictly more than the TTL to have passed.
	return max(exp.timestamp.Add(e.ttl+1).Sub(e.clock.Now()), 0)
}

// Pending returns the outstanding creates and deletes for key.
func (e *Expectations) Pending(key string) (adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		return exp.adds, len(exp.dels)
	}
	return 0, 0
}

// Delete forgets key, e.g. when its DaemonSet is gone, so that a new
// DaemonSet of the same name starts clean.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
