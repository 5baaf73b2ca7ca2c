package oracle

import (
	"sort"
	"time"
)

// revisionClock dates etcd revisions by the oracle's own arrival times. The
// pod, node and DaemonSet watches are separate streams that trail etcd by
// different amounts (under node churn the node watch, which carries every
// node's heartbeats, trails the pod watch by seconds), so the moment the
// oracle saw a write is not when it could first have known of it: any event
// of a higher revision, on any stream, proves the write had happened.
// firstSeen(r) is the arrival of the first event whose revision is r or
// later: no earlier than the write of r (what was written after it cannot
// arrive before it was written), and no later than r's own event.
type revisionClock struct {
	// highs are the events that raised the highest revision seen, in
	// arrival order: revisions and times both increase. Those older than
	// revisionMemory are forgotten.
	highs []revisionSeen
}

// revisionMemory bounds how far back the clock dates a revision: a watch
// trailing another by more is no lag but an outage, and under node churn at
// 5000 nodes the node heartbeats alone raise the revision hundreds of
// times a second. A revision older than every entry kept is dated by the
// oldest: later than it was known, never earlier than it was written.
const revisionMemory = 10 * time.Minute

type revisionSeen struct {
	rv uint64
	at time.Time
}

// see records an event of revision rv that arrived at t (t never earlier
// than the last call's).
func (c *revisionClock) see(rv uint64, t time.Time) {
	if rv == 0 {
		return
	}
	n := len(c.highs)
	switch {
	case n > 0 && rv <= c.highs[n-1].rv:
	case n > 0 && c.highs[n-1].at.Equal(t):
		// Same arrival time: one entry covers both revisions.
		c.highs[n-1].rv = rv
	default:
		c.highs = append(c.highs, revisionSeen{rv: rv, at: t})
	}
	// Forget once half the entries are old: each is copied O(1) times.
	if old := t.Add(-revisionMemory); c.highs[len(c.highs)/2].at.Before(old) {
		i := sort.Search(len(c.highs), func(i int) bool { return !c.highs[i].at.Before(old) })
		c.highs = append(c.highs[:0], c.highs[i:]...)
	}
}

// firstSeen returns when the oracle first saw revision rv or a later one,
// or t if it never did before (rv 0, a test without revisions).
func (c *revisionClock) firstSeen(rv uint64, t time.Time) time.Time {
	if rv == 0 {
		return t
	}
	i := sort.Search(len(c.highs), func(i int) bool { return c.highs[i].rv >= rv })
	if i == len(c.highs) || c.highs[i].at.After(t) {
		return t
	}
	return c.highs[i].at
}
