package plan

import "time"

const (
	// BackoffInitial is the first delay after a failed daemon pod is deleted.
	BackoffInitial = time.Second
	// BackoffMax caps the doubling delay.
	BackoffMax = 15 * time.Minute
	// backoffExpiry is how long an entry must stay untouched before it is
	// forgotten and the delay starts again at BackoffInitial (upstream
	// flowcontrol.Backoff: twice the maximum).
	backoffExpiry = 2 * BackoffMax
)

// BackoffKey identifies one failed-pod backoff: a node under one generation of
// the DaemonSet. The key outlives the pods (each replacement has a new UID) so
// the delay can grow, and a new generation, which may fix the failure, starts
// afresh. Upstream keys by DaemonSet UID, status.observedGeneration and node;
// the caller keeps one Backoff per DaemonSet, so the UID is implied.
type BackoffKey struct {
	Node       string
	Generation int64
}

// BackoffEntry is the state of one key.
type BackoffEntry struct {
	Delay      time.Duration // current delay, BackoffInitial doubling up to BackoffMax
	LastUpdate time.Time     // when the last failed pod was deleted
}

// Backoff is the failed-pod backoff state of one DaemonSet. It is a value:
// Compute never modifies the Entries of its Input, it returns a new Backoff in
// Plan.Backoff, which the caller passes back in on the next sync.
type Backoff struct {
	Entries map[BackoffKey]BackoffEntry
}

// remaining is how long key is still in backoff at now (0: not in backoff).
func (b Backoff) remaining(key BackoffKey, now time.Time) time.Duration {
	e, ok := b.Entries[key]
	if !ok || now.Sub(e.LastUpdate) > backoffExpiry {
		return 0
	}
	if left := e.LastUpdate.Add(e.Delay).Sub(now); left > 0 {
		return left
	}
	return 0
}

// next records a failed pod deletion at now: the delay starts at
// BackoffInitial, or doubles if the previous entry has not expired.
// b.Entries must be owned by the caller (see gc).
func (b *Backoff) next(key BackoffKey, now time.Time) {
	if b.Entries == nil {
		b.Entries = make(map[BackoffKey]BackoffEntry)
	}
	e, ok := b.Entries[key]
	if !ok || now.Sub(e.LastUpdate) > backoffExpiry {
		e.Delay = BackoffInitial
	} else {
		e.Delay = min(2*e.Delay, BackoffMax)
	}
	e.LastUpdate = now
	b.Entries[key] = e
}

// gc returns a copy of b without expired entries, entries of other
// generations and entries of nodes for which keep returns false. An empty
// result has nil Entries.
func (b Backoff) gc(now time.Time, generation int64, keep func(node string) bool) Backoff {
	var out Backoff
	for k, e := range b.Entries {
		if k.Generation != generation || now.Sub(e.LastUpdate) > backoffExpiry || !keep(k.Node) {
			continue
		}
		if out.Entries == nil {
			out.Entries = make(map[BackoffKey]BackoffEntry, len(b.Entries))
		}
		out.Entries[k] = e
	}
	return out
}
