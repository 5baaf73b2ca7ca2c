package oracle

import (
	"testing"
	"time"
)

func TestRevisionClock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var c revisionClock
	// Arrivals: a node event of revision 10 at 1, pod events of 30 and 20
	// at 2 and 3 (20 lower: another stream), 40 and 45 both at 4, and the
	// node event of revision 25 only at 5.
	for _, e := range []struct {
		rv uint64
		at float64
	}{{10, 1}, {30, 2}, {20, 3}, {0, 3.5}, {40, 4}, {45, 4}, {25, 5}} {
		c.see(e.rv, at(e.at))
	}
	tests := []struct {
		name   string
		rv     uint64
		now    float64
		wantAt float64
	}{
		{name: "its own arrival when nothing later came first", rv: 10, now: 1, wantAt: 1},
		{name: "an earlier revision: the first arrival at or above it", rv: 5, now: 5, wantAt: 1},
		{name: "a revision between two arrivals: the higher one's", rv: 11, now: 5, wantAt: 2},
		{name: "the late node event: known since revision 30 arrived", rv: 25, now: 5, wantAt: 2},
		{name: "two revisions that arrived together", rv: 41, now: 5, wantAt: 4},
		{name: "never seen before now: now", rv: 46, now: 6, wantAt: 6},
		{name: "never earlier than now's bound", rv: 40, now: 3.8, wantAt: 3.8},
		{name: "no revision: now", rv: 0, now: 5, wantAt: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.firstSeen(tt.rv, at(tt.now)); !got.Equal(at(tt.wantAt)) {
				t.Errorf("firstSeen(%d, %v) = %v, want %v", tt.rv, tt.now, got.Sub(t0), tt.wantAt)
			}
		})
	}
	if len(c.highs) != 3 {
		t.Errorf("kept %d record revisions %+v, want 3 (10, 30, 45)", len(c.highs), c.highs)
	}
}

// Arrivals older than revisionMemory are forgotten, half at a time; a
// revision older than every entry kept is dated by the oldest kept, never
// before its own write.
func TestRevisionClockForgets(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var c revisionClock
	for i := range 1500 {
		c.see(uint64(i+1), t0.Add(time.Duration(i)*time.Second))
	}
	now := t0.Add(1499 * time.Second)
	window := int(revisionMemory / time.Second) // entries a second apart
	if n := len(c.highs); n >= 1500 || n < window {
		t.Errorf("kept %d of 1500 entries, want some forgotten and the last %d kept", n, window)
	}
	if oldest := c.highs[0].at; now.Sub(oldest) > 2*revisionMemory {
		t.Errorf("oldest kept entry %v before now, want at most %v", now.Sub(oldest), 2*revisionMemory)
	}
	// Revision 1 arrived at t0, long forgotten: dated by the oldest kept.
	if got, want := c.firstSeen(1, now), c.highs[0].at; !got.Equal(want) {
		t.Errorf("firstSeen(1) = %v, want the oldest kept %v", got.Sub(t0), want.Sub(t0))
	}
	// A recent revision keeps its own date.
	if got, want := c.firstSeen(1400, now), t0.Add(1399*time.Second); !got.Equal(want) {
		t.Errorf("firstSeen(1400) = %v, want %v", got.Sub(t0), want.Sub(t0))
	}
}
