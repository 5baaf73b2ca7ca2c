package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgressStatusComputesOnlyTheLinesItWrites(t *testing.T) {
	for _, tc := range []struct {
		interactive bool
		every       time.Duration
	}{{false, 10 * time.Second}, {true, time.Second}} {
		var out bytes.Buffer
		p := NewProgress(&out, tc.interactive)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		p.now = func() time.Time { return now }
		calls := 0
		msg := func() string { calls++; return "status" }
		// Four ticks a second, as the runner's, for three periods.
		for range 3 * 4 * int(tc.every/time.Second) {
			p.Status(msg)
			now = now.Add(250 * time.Millisecond)
		}
		if calls != 3 {
			t.Errorf("interactive=%v: the line was computed %d times in three periods of %v, want 3 (once a period)", tc.interactive, calls, tc.every)
		}
		if got := strings.Count(out.String(), "status"); got != 3 {
			t.Errorf("interactive=%v: %d status lines written, want 3:\n%q", tc.interactive, got, out.String())
		}
	}
}
