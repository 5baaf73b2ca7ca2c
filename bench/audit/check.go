package audit

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Defaults of Config, the daemonset-controller's own.
const (
	DefaultUserAgentPrefix = "daemonset-controller/"
	DefaultLeaseName       = "dsbench-daemonset-controller"
	DefaultLeaseDuration   = 15 * time.Second
)

// Config says whose requests to judge, which Lease elects them, and how long
// a term lasts after its last renewal.
type Config struct {
	// UserAgentPrefix marks the controller's requests; the identity is the
	// user agent's next segment, up to a '/' or a space
	// ("daemonset-controller/<identity>[/leader-election]"). Requests of
	// other user agents are ignored, whoever the user.
	UserAgentPrefix string
	// LeaseNamespace of the leader-election Lease; "" matches any.
	LeaseNamespace string
	// LeaseName of the leader-election Lease.
	LeaseName string
	// LeaseDuration is the controller's --leader-elect-lease-duration;
	// it must be the one the replicas ran with.
	LeaseDuration time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.UserAgentPrefix == "" {
		c.UserAgentPrefix = DefaultUserAgentPrefix
	}
	if c.LeaseName == "" {
		c.LeaseName = DefaultLeaseName
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.LeaseDuration < 0 {
		return c, fmt.Errorf("lease duration %v: must be positive", c.LeaseDuration)
	}
	return c, nil
}

// Write is one mutating call by a replica on pods, daemonsets or
// controllerrevisions (any subresource), whether it succeeded or not: the
// question is when a replica decided to act, and the outcome of a call is
// the server's doing, not the replica's.
type Write struct {
	Replica  string
	Verb     string
	Resource string // with its subresource: "daemonsets/status"
	// Namespace and Name of the object; Name is empty for a create by
	// generateName, which the API server names after auditing it.
	Namespace, Name string
	Code            int       // the response's status code; 0 if none (a Panic)
	At              time.Time // requestReceivedTimestamp
	Done            time.Time // stageTimestamp
	Line            int       // in the log
	// Record is the Lease a Lease write wrote, when the log has its body
	// (Request level); nil otherwise.
	Record *LeaseRecord
}

func (w Write) String() string {
	return fmt.Sprintf("%s %s %s/%s (code %d) at %s, line %d",
		w.Replica, w.Verb, w.Resource, nsName(w.Namespace, w.Name), w.Code, w.At.Format(time.RFC3339Nano), w.Line)
}

func nsName(ns, name string) string {
	if name == "" {
		name = "<generated>"
	}
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// Term is one replica's hold on the Lease.
type Term struct {
	Holder string
	// Start is the receipt of the Lease write that acquired it.
	Start time.Time
	// LastRenewal is the receipt of the term's last successful Lease write
	// (Start if there was none after it). A release looks the same: at
	// Metadata level the log does not show the holder that a Lease update
	// writes.
	LastRenewal time.Time
	// End is LastRenewal + LeaseDuration, or the next term's Start if that
	// is earlier.
	End      time.Time
	Renewals int // successful Lease writes after the acquiring one
	// Seen is the earliest instant at which a standby can have seen the
	// record the holder last wrote for the first time, and so the instant
	// from which it counts the record's lease duration (see Check).
	Seen time.Time
	// Expiry is the earliest instant at which a standby may take the Lease
	// unless the holder released it: Seen + the record's
	// leaseDurationSeconds.
	Expiry time.Time
	// Released: the last write of the term gave the Lease up (an empty
	// holder). Known only from a Request-level log; false otherwise.
	Released bool
	// Exact: the log had the Lease's bodies, so Seen and Released are
	// exact rather than estimated.
	Exact bool
	// Writes counts the holder's writes inside the term; FirstWrite and
	// LastWrite are zero if there are none.
	Writes                int
	FirstWrite, LastWrite time.Time
	Line                  int // of the acquiring Lease write
}

// Handover is the passing of the Lease from one replica to another.
type Handover struct {
	From, To string
	// LastRenewal is From's last successful Lease write (its release, if
	// it released); Acquired is To's acquisition.
	LastRenewal, Acquired time.Time
	// Gap is Acquired - LastRenewal: how long no replica could act.
	Gap time.Duration
	// BeforeExpiry: To acquired before From's Term.Expiry, which client-go
	// does only once From has released the Lease (a graceful shutdown) —
	// or else something is wrong with the election.
	BeforeExpiry bool
	// Released: From's last Lease write released it (Term.Released).
	Released bool
}

// Interval is a stretch of one replica's writes: all its writes in one of
// its terms, or a run of its writes between two of its terms.
type Interval struct {
	First, Last time.Time
	Writes      int
	// Term is the index in Report.Terms of the replica's own term that
	// holds these writes, or -1: the writes fall outside every term of
	// the replica, and each of them is a Violation.
	Term int
}

// Replica sums up one identity's requests.
type Replica struct {
	Identity string
	// Writes to pods, daemonsets and controllerrevisions; Failed of them
	// answered with a code outside 2xx (or none).
	Writes, Failed int
	// LeaseWrites succeeded; LeaseFailures did not (conflicts of a
	// contested acquisition, mostly).
	LeaseWrites, LeaseFailures int
	Terms                      int
	// Acting lists when the replica wrote, in time order.
	Acting     []Interval
	Violations int
}

// Violation is a write that falls outside every term of its replica.
type Violation struct {
	Write Write
	// Leader is the replica whose term holds the write, "" if none did;
	// Term is that term's index in Report.Terms, or -1.
	Leader string
	Term   int
}

func (v Violation) String() string {
	if v.Leader == "" {
		return fmt.Sprintf("%s: no replica held the Lease", v.Write)
	}
	return fmt.Sprintf("%s: while %s held the Lease", v.Write, v.Leader)
}

// Report is what Check finds.
type Report struct {
	Replicas   []Replica // by identity
	Terms      []Term    // in time order; they never overlap
	Handovers  []Handover
	Violations []Violation // in time order
	// Ignored counts final-stage events that are neither a controller
	// write nor a controller Lease write: other users and user agents,
	// other resources. Skipped counts events of non-final stages.
	Ignored, Skipped int
}

// OK says that no replica wrote outside its own terms.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// Check attributes every write of a controller replica to the replica's
// leadership terms, which it derives from the replica's own Lease writes.
//
// What "acting" means here: a replica acts at the instant the API server
// receives a mutating request of it (requestReceivedTimestamp). That instant
// comes after the replica decided to write, precedes the write's effect, and
// is on the API server's clock, the one clock every event shares; failed
// writes count, as the replica did decide them. Lease writes are placed the
// same way: a holder's first write follows its acquisition's response, so
// it is never received before the acquisition was (stageTimestamp, taken
// after the response is sent, could come later by microseconds).
//
// Terms. At Metadata level the log does not say who holds the Lease, but a
// replica writes the Lease only as holder: client-go's elector creates it,
// or updates it when it has expired, was released, or is its own (a
// standby that sees a valid Lease of another writes nothing), and two
// acquisitions cannot both succeed (optimistic concurrency). So the
// successful Lease writes, in order of receipt, are the terms: a term starts
// at a replica's write after another replica's (or after its own term
// expired), and takes in its following writes while each comes within
// LeaseDuration of the one before.
//
// Expiry. client-go lets a standby take the Lease only after it has seen
// the same record unchanged for the record's leaseDurationSeconds on its
// clock, or once the holder released it (an empty holder). The record it
// compares holds renewTime at a second's precision (LeaderElectionRecord's
// metav1.Time), so renewals within one second of renewTime look alike to
// it: it counts from the first of them it saw, which it saw no earlier
// than that write's receipt (Term.Seen), and may acquire up to a second
// before LastRenewal + LeaseDuration (Term.Expiry). A Request-level log
// (kwok.AuditPolicy) has the records, and these instants are exact; from a
// Metadata-level log Seen is estimated as LastRenewal − 1 s, renewTime
// taken for the receipt, and a release cannot be told from a renewal.
//
// The bound. No one else can write as leader before the holder's
// LastRenewal + LeaseDuration unless it took the Lease sooner, and a term
// ends there, or at the next term's start if that comes first. The holder
// itself gives up sooner: its renew loop
// waits RetryPeriod after a success, then retries for RenewDeadline, so it
// stops leading at about LastRenewal + RetryPeriod + RenewDeadline (12 s by
// the controller's defaults, under LeaseDuration's 15 s), plus what in-flight
// requests and a loaded machine's late timers add. The check allows writes
// up to the full LeaseDuration: that is the bound the election's safety
// rests on, and the slack keeps a busy machine from raising false alarms.
// Term.LastWrite shows how close a deposed leader came to it.
//
// The replicas' clocks and the API server's are taken to be one (they share
// a machine here); across machines the bound shrinks by their skew.
//
// A write by replica A is a violation when the term holding its instant is
// B's (A acted while B held the Lease) or no one's (A acted with no Lease).
// Terms are half-open, [Start, End). Said the short way: at any instant the
// leader is the writer of the latest successful Lease write at or before it,
// if that write came less than LeaseDuration before.
func Check(conf Config, events []Event) (Report, error) {
	conf, err := conf.withDefaults()
	if err != nil {
		return Report{}, err
	}
	var rep Report
	replicas := map[string]*Replica{}
	replica := func(id string) *Replica {
		r := replicas[id]
		if r == nil {
			r = &Replica{Identity: id}
			replicas[id] = r
		}
		return r
	}
	var leases []Write // successful Lease writes, in the Write shape
	var writes []Write
	for _, ev := range events {
		if !ev.final() {
			rep.Skipped++
			continue
		}
		id := conf.identity(ev.UserAgent)
		switch {
		case id == "" || ev.ObjectRef == nil:
			rep.Ignored++
		case conf.isLeaseWrite(ev):
			r := replica(id)
			if ok(ev.Code()) {
				r.LeaseWrites++
				leases = append(leases, toWrite(id, ev))
			} else {
				r.LeaseFailures++
			}
		case isControllerWrite(ev):
			r := replica(id)
			r.Writes++
			if !ok(ev.Code()) {
				r.Failed++
			}
			writes = append(writes, toWrite(id, ev))
		default:
			rep.Ignored++
		}
	}
	byTime := func(a, b Write) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Line, b.Line))
	}
	slices.SortStableFunc(leases, byTime)
	slices.SortStableFunc(writes, byTime)

	rep.Terms = terms(leases, conf.LeaseDuration)
	for i := range rep.Terms {
		expire(&rep.Terms[i], leases, conf.LeaseDuration)
	}
	for i, t := range rep.Terms {
		replica(t.Holder).Terms++
		if i > 0 && rep.Terms[i-1].Holder != t.Holder {
			prev := rep.Terms[i-1]
			rep.Handovers = append(rep.Handovers, Handover{
				From: prev.Holder, To: t.Holder,
				LastRenewal: prev.LastRenewal, Acquired: t.Start,
				Gap:          t.Start.Sub(prev.LastRenewal),
				BeforeExpiry: t.Start.Before(prev.Expiry),
				Released:     prev.Released,
			})
		}
	}

	// Each replica's own terms, to number the gaps between them.
	own := map[string][]int{}
	for i, t := range rep.Terms {
		own[t.Holder] = append(own[t.Holder], i)
	}
	lastGap := map[string]int{}
	for _, w := range writes {
		r := replicas[w.Replica]
		at := termAt(rep.Terms, w.At)
		interval := -1
		if at >= 0 && rep.Terms[at].Holder == w.Replica {
			t := &rep.Terms[at]
			t.Writes++
			if t.FirstWrite.IsZero() {
				t.FirstWrite = w.At
			}
			t.LastWrite = w.At
			interval = at
		} else {
			v := Violation{Write: w, Term: at}
			if at >= 0 {
				v.Leader = rep.Terms[at].Holder
			}
			rep.Violations = append(rep.Violations, v)
			r.Violations++
		}
		// Writes outside the replica's terms group by the gap they fall
		// in: the number of its own terms begun before them.
		gap := sort.Search(len(own[w.Replica]), func(k int) bool { return rep.Terms[own[w.Replica][k]].Start.After(w.At) })
		n := len(r.Acting)
		if n > 0 && r.Acting[n-1].Term == interval && (interval >= 0 || lastGap[w.Replica] == gap) {
			r.Acting[n-1].Last = w.At
			r.Acting[n-1].Writes++
		} else {
			r.Acting = append(r.Acting, Interval{First: w.At, Last: w.At, Writes: 1, Term: interval})
		}
		lastGap[w.Replica] = gap
	}

	for _, r := range replicas {
		rep.Replicas = append(rep.Replicas, *r)
	}
	slices.SortFunc(rep.Replicas, func(a, b Replica) int { return strings.Compare(a.Identity, b.Identity) })
	return rep, nil
}

// terms turns successful Lease writes, in time order, into terms.
func terms(leases []Write, leaseDuration time.Duration) []Term {
	var ts []Term
	for _, l := range leases {
		if n := len(ts); n > 0 {
			cur := &ts[n-1]
			if cur.Holder == l.Replica && l.At.Sub(cur.LastRenewal) <= leaseDuration {
				cur.LastRenewal = l.At
				cur.Renewals++
				continue
			}
			cur.End = minTime(cur.LastRenewal.Add(leaseDuration), l.At)
		}
		ts = append(ts, Term{Holder: l.Replica, Start: l.At, LastRenewal: l.At, Line: l.Line})
	}
	if n := len(ts); n > 0 {
		ts[n-1].End = ts[n-1].LastRenewal.Add(leaseDuration)
	}
	return ts
}

// recordGranularity is the precision of the times in client-go's
// LeaderElectionRecord (metav1.Time), the record a standby compares.
const recordGranularity = time.Second

// expire sets t's Seen, Expiry, Released and Exact from the term's Lease
// writes (leases in time order, every term's).
func expire(t *Term, leases []Write, leaseDuration time.Duration) {
	var mine []Write
	for _, l := range leases {
		if l.Replica == t.Holder && !l.At.Before(t.Start) && !l.At.After(t.LastRenewal) {
			mine = append(mine, l)
		}
	}
	duration := leaseDuration.Truncate(time.Second) // int seconds, as client-go writes it
	last := mine[len(mine)-1]
	if last.Record == nil {
		t.Seen = t.LastRenewal.Add(-recordGranularity)
		if t.Seen.Before(t.Start) {
			t.Seen = t.Start
		}
		t.Expiry = t.Seen.Add(duration)
		return
	}
	t.Exact = true
	t.Released = last.Record.Holder == ""
	// Walk back over the writes whose record a standby could not tell
	// from the last one.
	seen := len(mine) - 1
	for seen > 0 && sameRecord(mine[seen-1].Record, last.Record) {
		seen--
	}
	t.Seen = mine[seen].At
	if last.Record.DurationSeconds > 0 {
		duration = time.Duration(last.Record.DurationSeconds) * time.Second
	}
	t.Expiry = t.Seen.Add(duration)
}

// sameRecord: a and b look alike to client-go's comparison of records.
func sameRecord(a, b *LeaseRecord) bool {
	return a != nil && b != nil && a.Holder == b.Holder && a.DurationSeconds == b.DurationSeconds &&
		a.RenewTime.Truncate(recordGranularity).Equal(b.RenewTime.Truncate(recordGranularity))
}

// termAt is the index of the term that holds t, or -1.
func termAt(ts []Term, t time.Time) int {
	i := sort.Search(len(ts), func(i int) bool { return ts[i].Start.After(t) }) - 1
	if i >= 0 && t.Before(ts[i].End) {
		return i
	}
	return -1
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// identity is the segment after the prefix, up to a '/' or a space; "" if
// the user agent is not the controller's.
func (c Config) identity(userAgent string) string {
	rest, found := strings.CutPrefix(userAgent, c.UserAgentPrefix)
	if !found {
		return ""
	}
	if i := strings.IndexAny(rest, "/ "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// isLeaseWrite: a create, update or patch of the controller's Lease. A
// delete is none of the elector's doing and neither starts nor extends a
// term.
func (c Config) isLeaseWrite(ev Event) bool {
	o := ev.ObjectRef
	if o.Resource != "leases" || o.Subresource != "" || o.Name != c.LeaseName || c.LeaseNamespace != "" && o.Namespace != c.LeaseNamespace {
		return false
	}
	switch ev.Verb {
	case "create", "update", "patch":
		return true
	}
	return false
}

func isControllerWrite(ev Event) bool {
	switch ev.ObjectRef.Resource {
	case "pods", "daemonsets", "controllerrevisions":
	default:
		return false
	}
	switch ev.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

func ok(code int) bool { return code >= 200 && code < 300 }

func toWrite(id string, ev Event) Write {
	o := ev.ObjectRef
	res := o.Resource
	if o.Subresource != "" {
		res += "/" + o.Subresource
	}
	w := Write{
		Replica: id, Verb: ev.Verb, Resource: res, Namespace: o.Namespace, Name: o.Name,
		Code: ev.Code(), At: ev.RequestReceivedTimestamp, Done: ev.StageTimestamp, Line: ev.Line,
	}
	if rec, ok := ev.leaseRecord(); ok && res == "leases" {
		w.Record = &rec
	}
	return w
}
