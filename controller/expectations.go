package controller

import (
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dsbench/dsbench/controller/plan"
)

// DefaultExpectationsTTL is how long an unobserved create or delete is
// waited for before the controller stops waiting for it (upstream: 5 min).
const DefaultExpectationsTTL = 5 * time.Minute

// UncertainWriteHold is how long a write whose call failed in a way that
// may have applied it anyway (writeMayHaveLanded) stays in flight, at most
// the TTL: long enough for its watch event to arrive from a loaded API
// server, so that a create that landed is not made twice (a second pod on
// the node) and a delete that landed is not followed by another beyond the
// rollout's budget. Upstream lowers its expectations on any error.
const UncertainWriteHold = 30 * time.Second

// Expectations records, per DaemonSet key, the pod creates and deletes the
// controller has issued but not yet seen in its informer: the creates by
// node, the deletes by pod key. A sync plans on its cache with these laid
// over it (plan.InFlight): a node with a create in flight holds a new pod
// that is not yet available, a pod being deleted is terminating. So a stale
// cache never causes a second pod on a node or a rollout past its budget,
// and, unlike upstream's counters, which hold back the whole DaemonSet until
// every write is seen, a sync may act on the other nodes meanwhile: a node
// whose old pod is gone gets its replacement while the replacements of
// other nodes are still on their way.
//
// Deletes observed twice (the graceful-delete update, then the final delete
// event) count once, and every failed write lowers the expectation at once:
// a failed call is never waited for until the TTL (upstream #72155).
type Expectations struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu sync.Mutex
	m  map[string]*expectation
}

type expectation struct {
	creates map[string]pendingCreate // node name -> create not yet observed
	dels    map[string]time.Time     // "namespace/name" -> when its wait for the deletion ends
}

type pendingCreate struct {
	hash     string    // the pod's template hash
	deadline time.Time // when the wait for it ends: issued + TTL, or an uncertain failure + its hold
}

func (exp *expectation) empty() bool { return len(exp.creates) == 0 && len(exp.dels) == 0 }

// NewExpectations returns an empty store; ttl <= 0 means DefaultExpectationsTTL.
func NewExpectations(clk clock.PassiveClock, ttl time.Duration) *Expectations {
	if ttl <= 0 {
		ttl = DefaultExpectationsTTL
	}
	return &Expectations{clock: clk, ttl: ttl, m: map[string]*expectation{}}
}

// get returns key's expectation, creating it; e.mu must be held.
func (e *Expectations) get(key string) *expectation {
	exp, ok := e.m[key]
	if !ok {
		exp = &expectation{creates: map[string]pendingCreate{}, dels: map[string]time.Time{}}
		e.m[key] = exp
	}
	return exp
}

// expire drops key's writes older than the TTL and returns how many it
// dropped; e.mu must be held.
func (e *Expectations) expire(key string) int {
	exp, ok := e.m[key]
	if !ok {
		return 0
	}
	now, n := e.clock.Now(), 0
	for node, c := range exp.creates {
		if now.After(c.deadline) {
			delete(exp.creates, node)
			n++
		}
	}
	for pod, deadline := range exp.dels {
		if now.After(deadline) {
			delete(exp.dels, pod)
			n++
		}
	}
	if exp.empty() {
		delete(e.m, key)
	}
	return n
}

// ExpectCreates records creates of pods with the template hash on nodes.
// Call it before issuing them.
func (e *Expectations) ExpectCreates(key, hash string, nodes []string) {
	if len(nodes) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, deadline := e.get(key), e.clock.Now().Add(e.ttl)
	for _, node := range nodes {
		exp.creates[node] = pendingCreate{hash: hash, deadline: deadline}
	}
}

// ExpectDeletions records the deletion of the given pod keys. Call it before
// issuing them.
func (e *Expectations) ExpectDeletions(key string, podKeys []string) {
	if len(podKeys) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, deadline := e.get(key), e.clock.Now().Add(e.ttl)
	for _, k := range podKeys {
		exp.dels[k] = deadline
	}
}

// CreationUncertain keeps waiting for the create on node, whose call failed
// in a way that may have applied it, for UncertainWriteHold from now (at
// most the TTL); the informer's sight of the pod ends the wait as usual. If
// the pod was seen already, nothing is waited for.
func (e *Expectations) CreationUncertain(key, node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		if c, ok := exp.creates[node]; ok {
			c.deadline = e.clock.Now().Add(min(UncertainWriteHold, e.ttl))
			exp.creates[node] = c
		}
	}
}

// DeletionUncertain is CreationUncertain for the deletion of podKey.
func (e *Expectations) DeletionUncertain(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		if _, ok := exp.dels[podKey]; ok {
			exp.dels[podKey] = e.clock.Now().Add(min(UncertainWriteHold, e.ttl))
		}
	}
}

// CreationObserved ends the wait for the create on node: the informer saw a
// pod for it, or the call failed or was never sent.
func (e *Expectations) CreationObserved(key, node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		delete(exp.creates, node)
		if exp.empty() {
			delete(e.m, key)
		}
	}
}

// DeletionObserved removes podKey from the expected deletions; it is
// idempotent, so repeated observations of one pod are harmless.
func (e *Expectations) DeletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		delete(exp.dels, podKey)
		if exp.empty() {
			delete(e.m, key)
		}
	}
}

// InFlight returns key's unobserved writes for the planner, after dropping
// those older than the TTL; expired is how many it dropped. Take it before
// reading the cache (see syncDaemonSet).
func (e *Expectations) InFlight(key string) (in plan.InFlight, expired int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	expired = e.expire(key)
	exp, ok := e.m[key]
	if !ok {
		return plan.InFlight{}, expired
	}
	if len(exp.creates) > 0 {
		in.Creates = make(map[string]string, len(exp.creates))
		for node, c := range exp.creates {
			in.Creates[node] = c.hash
		}
	}
	if len(exp.dels) > 0 {
		in.Deletes = make(map[string]struct{}, len(exp.dels))
		for k := range exp.dels {
			// The planner matches pods of the DaemonSet's namespace by name.
			_, name, _ := strings.Cut(k, "/")
			in.Deletes[name] = struct{}{}
		}
	}
	return in, expired
}

// ExpiresIn is how long until the first of key's writes in flight expires;
// 0 if none is in flight.
func (e *Expectations) ExpiresIn(key string) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire(key)
	exp, ok := e.m[key]
	if !ok {
		return 0
	}
	var first time.Time
	for _, c := range exp.creates {
		if first.IsZero() || c.deadline.Before(first) {
			first = c.deadline
		}
	}
	for _, deadline := range exp.dels {
		if first.IsZero() || deadline.Before(first) {
			first = deadline
		}
	}
	// +1ns: a write expires once its deadline is strictly past.
	return max(first.Add(1).Sub(e.clock.Now()), 0)
}

// Delete forgets key, e.g. when its DaemonSet is gone, so that a new
// DaemonSet of the same name starts clean.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
