package audit

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// LeaderChanges is the number of times the Lease passed to another replica.
func (r Report) LeaderChanges() int { return len(r.Handovers) }

// TakeoverGaps are the median (the lower one of an even count) and the
// largest Handover.Gap; zero without handovers.
func (r Report) TakeoverGaps() (p50, max time.Duration) {
	if len(r.Handovers) == 0 {
		return 0, 0
	}
	gaps := make([]time.Duration, len(r.Handovers))
	for i, h := range r.Handovers {
		gaps[i] = h.Gap
	}
	slices.Sort(gaps)
	return gaps[(len(gaps)-1)/2], gaps[len(gaps)-1]
}

// clock prints an instant for a reader comparing it with others of one run.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000000") }

// String is the report for a person: one line of totals, then replicas,
// terms, handovers and violations.
func (r Report) String() string {
	var b strings.Builder
	p50, max := r.TakeoverGaps()
	fmt.Fprintf(&b, "%d replicas, %d terms, %d leader changes (takeover gap p50 %v, max %v), %d violations; %d events ignored, %d of non-final stages skipped\n",
		len(r.Replicas), len(r.Terms), r.LeaderChanges(), p50, max, len(r.Violations), r.Ignored, r.Skipped)
	for _, rp := range r.Replicas {
		fmt.Fprintf(&b, "replica %s: writes %d (failed %d), Lease writes %d (failed %d), terms %d, violations %d\n",
			rp.Identity, rp.Writes, rp.Failed, rp.LeaseWrites, rp.LeaseFailures, rp.Terms, rp.Violations)
		for _, in := range rp.Acting {
			where := fmt.Sprintf("in term %d", in.Term)
			if in.Term < 0 {
				where = "outside its terms"
			}
			fmt.Fprintf(&b, "  acting %s - %s: writes %d, %s\n", clock(in.First), clock(in.Last), in.Writes, where)
		}
	}
	for i, t := range r.Terms {
		fmt.Fprintf(&b, "term %d %s: %s - %s (last renewal %s, renewals %d), writes %d",
			i, t.Holder, clock(t.Start), clock(t.End), clock(t.LastRenewal), t.Renewals, t.Writes)
		if t.Writes > 0 {
			fmt.Fprintf(&b, " %s - %s", clock(t.FirstWrite), clock(t.LastWrite))
		}
		b.WriteString("\n")
	}
	for _, h := range r.Handovers {
		how := "after expiry"
		switch {
		case h.BeforeExpiry && h.Released:
			how = "before expiry (released)"
		case h.BeforeExpiry:
			how = "before expiry (not released, or a Metadata-level log)"
		}
		fmt.Fprintf(&b, "handover %s -> %s at %s: gap %v, %s\n", h.From, h.To, clock(h.Acquired), h.Gap, how)
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "VIOLATION %s\n", v)
	}
	return b.String()
}
