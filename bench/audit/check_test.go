package audit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func off(t time.Time) string { return fmt.Sprintf("%gs", t.Sub(t0).Seconds()) }

// The report, projected onto short strings that a table can spell out.
type digest struct {
	Terms      []string            // "a 0s-25s renewals=5 writes=3"
	Handovers  []string            // "a->b gap=16s expired"
	Violations []string            // "a delete pods/p1 @11s leader=b"
	Acting     map[string][]string // replica -> "1s-9s x3 term=0"
	Counts     map[string]string   // replica -> "writes=3 failed=0 lease=6/1 terms=1 violations=0"
	Ignored    int
	Skipped    int
}

func digestOf(r Report) digest {
	d := digest{Acting: map[string][]string{}, Counts: map[string]string{}, Ignored: r.Ignored, Skipped: r.Skipped}
	for _, t := range r.Terms {
		d.Terms = append(d.Terms, fmt.Sprintf("%s %s-%s renewals=%d writes=%d", t.Holder, off(t.Start), off(t.End), t.Renewals, t.Writes))
	}
	for _, h := range r.Handovers {
		how := "expired"
		switch {
		case h.BeforeExpiry && h.Released:
			how = "released"
		case h.BeforeExpiry:
			how = "before expiry"
		}
		d.Handovers = append(d.Handovers, fmt.Sprintf("%s->%s gap=%v %s", h.From, h.To, h.Gap, how))
	}
	for _, v := range r.Violations {
		w := v.Write
		d.Violations = append(d.Violations, fmt.Sprintf("%s %s %s/%s @%s leader=%s", w.Replica, w.Verb, w.Resource, w.Name, off(w.At), v.Leader))
	}
	for _, rp := range r.Replicas {
		for _, in := range rp.Acting {
			d.Acting[rp.Identity] = append(d.Acting[rp.Identity], fmt.Sprintf("%s-%s x%d term=%d", off(in.First), off(in.Last), in.Writes, in.Term))
		}
		d.Counts[rp.Identity] = fmt.Sprintf("writes=%d failed=%d lease=%d/%d terms=%d violations=%d",
			rp.Writes, rp.Failed, rp.LeaseWrites, rp.LeaseFailures, rp.Terms, rp.Violations)
	}
	return d
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		conf Config
		log  string
		want digest
	}{
		{
			// a leads, dies after its renewal at 10 s; b, which lost the
			// race to create the Lease, waits out the lease duration.
			name: "clean failover after a crash",
			log: logOf(
				evs(lease(0, "a", "create", 201), lease(0.1, "b", "create", 409)),
				renewals("a", 2, 10),
				evs(pod(1, "a", "create", "p1"), pod(5, "a", "create", "p2"), pod(9.5, "a", "delete", "p3")),
				evs(lease(26, "b", "update", 200)), renewals("b", 28, 30),
				evs(pod(26.5, "b", "create", "p3"), pod(29, "b", "create", "p4")),
			),
			want: digest{
				Terms:     []string{"a 0s-25s renewals=5 writes=3", "b 26s-45s renewals=2 writes=2"},
				Handovers: []string{"a->b gap=16s expired"},
				Acting:    map[string][]string{"a": {"1s-9.5s x3 term=0"}, "b": {"26.5s-29s x2 term=1"}},
				Counts: map[string]string{
					"a": "writes=3 failed=0 lease=6/0 terms=1 violations=0",
					"b": "writes=2 failed=0 lease=3/1 terms=1 violations=0",
				},
			},
		},
		{
			// a shuts down gracefully: workers stop, then it releases the
			// Lease (an update like any renewal), and b takes it at once.
			// A Metadata-level log cannot show the release: only that b
			// acquired before a's record expired.
			name: "clean handover after a release",
			log: logOf(
				evs(lease(0, "a", "create", 201)), renewals("a", 2, 10),
				evs(pod(1, "a", "create", "p1"), pod(9, "a", "delete", "p2")),
				evs(lease(11, "b", "update", 200), pod(11.5, "b", "create", "p2")),
			),
			want: digest{
				Terms:     []string{"a 0s-11s renewals=5 writes=2", "b 11s-26s renewals=0 writes=1"},
				Handovers: []string{"a->b gap=1s before expiry"},
				Acting:    map[string][]string{"a": {"1s-9s x2 term=0"}, "b": {"11.5s-11.5s x1 term=1"}},
				Counts: map[string]string{
					"a": "writes=2 failed=0 lease=6/0 terms=1 violations=0",
					"b": "writes=1 failed=0 lease=1/0 terms=1 violations=0",
				},
			},
		},
		{
			// The deposed leader keeps deleting pods after b's acquisition;
			// the failed delete counts too.
			name: "deposed leader writes after the new leader's acquisition",
			log: logOf(
				evs(lease(0, "a", "create", 201)), renewals("a", 2, 10),
				evs(pod(9, "a", "delete", "p1")),
				evs(lease(11, "b", "update", 200)),
				evs(pod(12, "a", "delete", "p2"), ev{sec: 12.5, ua: ctrlUA("a"), verb: "delete", resource: "pods", ns: "default", name: "p3", code: 404}),
				evs(pod(13, "b", "create", "p2")),
			),
			want: digest{
				Terms:      []string{"a 0s-11s renewals=5 writes=1", "b 11s-26s renewals=0 writes=1"},
				Handovers:  []string{"a->b gap=1s before expiry"},
				Violations: []string{"a delete pods/p2 @12s leader=b", "a delete pods/p3 @12.5s leader=b"},
				Acting:     map[string][]string{"a": {"9s-9s x1 term=0", "12s-12.5s x2 term=-1"}, "b": {"13s-13s x1 term=1"}},
				Counts: map[string]string{
					"a": "writes=3 failed=1 lease=6/0 terms=1 violations=2",
					"b": "writes=1 failed=0 lease=1/0 terms=1 violations=0",
				},
			},
		},
		{
			// c never holds the Lease (its acquisition failed); a writes
			// again after its own term expired, with no one leading.
			name: "writes with no term",
			log: logOf(
				evs(pod(-1, "a", "create", "early")),
				evs(lease(0, "a", "create", 201)), renewals("a", 2, 4),
				evs(lease(3, "c", "update", 409), pod(3.5, "c", "create", "p1")),
				evs(pod(4, "a", "create", "p2"), pod(20, "a", "create", "p3"), pod(21, "a", "create", "p4")),
				evs(ev{sec: 22, ua: ctrlUA("a"), verb: "patch", resource: "daemonsets", sub: "status", ns: "default", name: "ds", code: 200, apiGroup: "apps"}),
			),
			want: digest{
				Terms: []string{"a 0s-19s renewals=2 writes=1"},
				Violations: []string{
					"a create pods/early @-1s leader=",
					"c create pods/p1 @3.5s leader=a",
					"a create pods/p3 @20s leader=",
					"a create pods/p4 @21s leader=",
					"a patch daemonsets/status/ds @22s leader=",
				},
				Acting: map[string][]string{
					"a": {"-1s--1s x1 term=-1", "4s-4s x1 term=0", "20s-22s x3 term=-1"},
					"c": {"3.5s-3.5s x1 term=-1"},
				},
				Counts: map[string]string{
					"a": "writes=5 failed=0 lease=3/0 terms=1 violations=4",
					"c": "writes=1 failed=0 lease=0/1 terms=0 violations=1",
				},
			},
		},
		{
			// a's term expires and a takes the Lease again: two terms, and
			// its writes in between are grouped apart from both.
			name: "one replica, two terms",
			log: logOf(
				evs(lease(0, "a", "create", 201), pod(1, "a", "create", "p1")),
				evs(pod(16, "a", "create", "p2"), pod(17, "a", "create", "p3")),
				evs(lease(30, "a", "update", 200), pod(31, "a", "create", "p4")),
			),
			want: digest{
				Terms:      []string{"a 0s-15s renewals=0 writes=1", "a 30s-45s renewals=0 writes=1"},
				Violations: []string{"a create pods/p2 @16s leader=", "a create pods/p3 @17s leader="},
				Acting:     map[string][]string{"a": {"1s-1s x1 term=0", "16s-17s x2 term=-1", "31s-31s x1 term=1"}},
				Counts:     map[string]string{"a": "writes=4 failed=0 lease=2/0 terms=2 violations=2"},
			},
		},
		{
			// Only the controller's user agent counts: kwok deleting pods,
			// kube-controller-manager, an admin editing the Lease, events
			// and another Lease; and stages other than the final one.
			name: "other users, resources and stages are ignored",
			conf: Config{LeaseNamespace: "default", LeaseDuration: 10 * time.Second},
			log: logOf(
				evs(lease(0, "a", "create", 201)),
				evs(ev{sec: 1, ua: "kwok/v0.8.0 (linux/amd64) kwok/v0.8.0", verb: "delete", resource: "pods", ns: "default", name: "p1", code: 200}),
				evs(ev{sec: 2, ua: "kube-controller-manager/v1.36.4 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:daemon-set-controller", verb: "create", resource: "pods", ns: "default", name: "p2", code: 201}),
				evs(ev{sec: 3, ua: "kubectl/v1.36.4 (linux/amd64) kubernetes/abc", verb: "update", resource: "leases", ns: "default", name: DefaultLeaseName, code: 200}),
				evs(ev{sec: 4, ua: ctrlUA("b"), verb: "create", resource: "events", ns: "default", name: "e1", code: 201}),
				evs(ev{sec: 5, ua: leaseUA("b"), verb: "update", resource: "leases", ns: "default", name: "other-lease", code: 200}),
				evs(ev{sec: 6, ua: leaseUA("b"), verb: "update", resource: "leases", ns: "elsewhere", name: DefaultLeaseName, code: 200}),
				evs(ev{sec: 7, ua: ctrlUA("b"), verb: "create", resource: "pods", ns: "default", name: "p3", stage: StageRequestReceived}),
				evs(ev{sec: 8, ua: ctrlUA("a"), verb: "create", resource: "pods", ns: "default", name: "p4", code: 201, noObjRef: true}),
				evs(ev{sec: 9, ua: "daemonset-controller/", verb: "create", resource: "pods", ns: "default", name: "p5", code: 201}),
				evs(pod(9.5, "a", "create", "p6")),
			),
			want: digest{
				Terms:   []string{"a 0s-10s renewals=0 writes=1"},
				Acting:  map[string][]string{"a": {"9.5s-9.5s x1 term=0"}},
				Counts:  map[string]string{"a": "writes=1 failed=0 lease=1/0 terms=1 violations=0"},
				Ignored: 8,
				Skipped: 1,
			},
		},
		{
			// A Request-level log. a renews twice within second 10 of its
			// clock and is killed; to b the two records look alike
			// (renewTime has a second's precision), so b counts the 4 s
			// lease from the first: it may acquire 3.6 s after the last
			// renewal, and does.
			name: "takeover counted from the first renewal of the record's second",
			conf: Config{LeaseNamespace: "default", LeaseDuration: 4 * time.Second},
			log: logOf(
				evs(leaseWithRecord(8, "a", "create", "a", 7.99, 4), leaseWithRecord(9.5, "a", "update", "a", 9.49, 4)),
				evs(leaseWithRecord(10.2, "a", "update", "a", 10.19, 4), leaseWithRecord(10.7, "a", "update", "a", 10.69, 4)),
				evs(pod(10.5, "a", "delete", "p1")),
				evs(leaseWithRecord(14.3, "b", "update", "b", 14.29, 4), pod(14.5, "b", "create", "p1")),
			),
			want: digest{
				Terms:     []string{"a 8s-14.3s renewals=3 writes=1", "b 14.3s-18.3s renewals=0 writes=1"},
				Handovers: []string{"a->b gap=3.6s expired"},
				Acting:    map[string][]string{"a": {"10.5s-10.5s x1 term=0"}, "b": {"14.5s-14.5s x1 term=1"}},
				Counts: map[string]string{
					"a": "writes=1 failed=0 lease=4/0 terms=1 violations=0",
					"b": "writes=1 failed=0 lease=1/0 terms=1 violations=0",
				},
			},
		},
		{
			// The same, but b acquires 3.2 s after a's last renewal: before
			// the record it saw first can have expired, and a did not
			// release. An election that lets that happen is broken.
			name: "takeover before the record can have expired",
			conf: Config{LeaseNamespace: "default", LeaseDuration: 4 * time.Second},
			log: logOf(
				evs(leaseWithRecord(8, "a", "create", "a", 7.99, 4), leaseWithRecord(10.2, "a", "update", "a", 10.19, 4), leaseWithRecord(10.7, "a", "update", "a", 10.69, 4)),
				evs(leaseWithRecord(13.9, "b", "update", "b", 13.89, 4)),
			),
			want: digest{
				Terms:     []string{"a 8s-13.9s renewals=2 writes=0", "b 13.9s-17.9s renewals=0 writes=0"},
				Handovers: []string{"a->b gap=3.2s before expiry"},
				Acting:    map[string][]string{},
				Counts: map[string]string{
					"a": "writes=0 failed=0 lease=3/0 terms=1 violations=0",
					"b": "writes=0 failed=0 lease=1/0 terms=1 violations=0",
				},
			},
		},
		{
			// a releases (an empty holder, as client-go writes it) and b
			// takes the Lease at once: the log says it was a release.
			name: "release seen in a Request-level log",
			conf: Config{LeaseNamespace: "default", LeaseDuration: 4 * time.Second},
			log: logOf(
				evs(leaseWithRecord(8, "a", "create", "a", 7.99, 4), leaseWithRecord(10.2, "a", "update", "", 10.19, 1)),
				evs(leaseWithRecord(10.4, "b", "update", "b", 10.39, 4)),
			),
			want: digest{
				Terms:     []string{"a 8s-10.4s renewals=1 writes=0", "b 10.4s-14.4s renewals=0 writes=0"},
				Handovers: []string{"a->b gap=200ms released"},
				Acting:    map[string][]string{},
				Counts: map[string]string{
					"a": "writes=0 failed=0 lease=2/0 terms=1 violations=0",
					"b": "writes=0 failed=0 lease=1/0 terms=1 violations=0",
				},
			},
		},
		{
			name: "empty log",
			log:  "\n",
			want: digest{Acting: map[string][]string{}, Counts: map[string]string{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, err := Decode("test.log", strings.NewReader(tt.log))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Check(tt.conf, log.Events)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.Acting == nil {
				tt.want.Acting = map[string][]string{}
			}
			if diff := cmp.Diff(tt.want, digestOf(rep)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if rep.OK() != (len(tt.want.Violations) == 0) {
				t.Errorf("OK() = %v with %d violations", rep.OK(), len(rep.Violations))
			}
			checkInvariants(t, rep)
		})
	}
}

func TestCheckRejectsANegativeLeaseDuration(t *testing.T) {
	if _, err := Check(Config{LeaseDuration: -time.Second}, nil); err == nil || !strings.Contains(err.Error(), "lease duration -1s") {
		t.Errorf("Check = %v, want an error naming the lease duration", err)
	}
}

func TestIdentity(t *testing.T) {
	c, _ := Config{}.withDefaults()
	for ua, want := range map[string]string{
		"daemonset-controller/node-1_0a1b2c3d":                  "node-1_0a1b2c3d",
		"daemonset-controller/node-1_0a1b2c3d/leader-election":  "node-1_0a1b2c3d",
		"daemonset-controller/node-1_0a1b2c3d (linux/amd64)":    "node-1_0a1b2c3d",
		"daemonset-controller/":                                 "",
		"kube-controller-manager/v1.36.4 daemonset-controller/": "",
		"": "",
	} {
		if got := c.identity(ua); got != want {
			t.Errorf("identity(%q) = %q, want %q", ua, got, want)
		}
	}
}

func TestTakeoverGaps(t *testing.T) {
	r := Report{Handovers: []Handover{{Gap: 3 * time.Second}, {Gap: time.Second}, {Gap: 16 * time.Second}, {Gap: 2 * time.Second}}}
	if p50, max := r.TakeoverGaps(); p50 != 2*time.Second || max != 16*time.Second || r.LeaderChanges() != 4 {
		t.Errorf("TakeoverGaps = %v, %v; LeaderChanges = %d; want 2s, 16s, 4", p50, max, r.LeaderChanges())
	}
	if p50, max := (Report{}).TakeoverGaps(); p50 != 0 || max != 0 {
		t.Errorf("no handovers: %v, %v", p50, max)
	}
}

// checkInvariants holds for every report: terms are ordered and disjoint,
// and every write is either in its replica's term or a violation, once.
func checkInvariants(t *testing.T, r Report) {
	t.Helper()
	for i, tm := range r.Terms {
		if tm.End.Before(tm.Start) || tm.LastRenewal.Before(tm.Start) {
			t.Errorf("term %d: start %v, last renewal %v, end %v", i, tm.Start, tm.LastRenewal, tm.End)
		}
		if tm.Seen.Before(tm.Start) || tm.Seen.After(tm.LastRenewal) || tm.Expiry.Before(tm.Seen) {
			t.Errorf("term %d: start %v, seen %v, last renewal %v, expiry %v", i, tm.Start, tm.Seen, tm.LastRenewal, tm.Expiry)
		}
		if i > 0 && tm.Start.Before(r.Terms[i-1].End) {
			t.Errorf("term %d starts at %v, before term %d ends at %v", i, tm.Start, i-1, r.Terms[i-1].End)
		}
	}
	writes, inTerms, acting, violations := 0, 0, 0, 0
	for _, rp := range r.Replicas {
		writes += rp.Writes
		violations += rp.Violations
		for _, in := range rp.Acting {
			acting += in.Writes
			if in.Last.Before(in.First) {
				t.Errorf("replica %s: interval %v - %v", rp.Identity, in.First, in.Last)
			}
		}
	}
	for _, tm := range r.Terms {
		inTerms += tm.Writes
	}
	if writes != inTerms+len(r.Violations) || writes != acting || violations != len(r.Violations) {
		t.Errorf("writes %d: %d in terms + %d violations; %d in acting intervals; replicas count %d violations",
			writes, inTerms, len(r.Violations), acting, violations)
	}
	for _, v := range r.Violations {
		if v.Leader == v.Write.Replica {
			t.Errorf("violation in the writer's own term: %v", v)
		}
		if (v.Term < 0) != (v.Leader == "") {
			t.Errorf("violation with term %d and leader %q", v.Term, v.Leader)
		}
	}
}
