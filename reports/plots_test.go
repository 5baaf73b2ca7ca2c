package reports

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/plotter"
)

func TestTimelineOrigin(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 1, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	points := Timeline{Points: []TimelinePoint{{Time: at(0.5)}, {Time: at(3)}}}
	for _, tc := range []struct {
		name string
		run  Run
		tl   Timeline
		want time.Time
	}{
		{"the first step, not the run's start", Run{Start: t0, Steps: []Step{{Start: at(7)}, {Start: at(12)}}}, points, at(7)},
		{"the earliest step, whatever their order", Run{Start: t0, Steps: []Step{{Start: at(12)}, {Start: at(7)}}}, points, at(7)},
		{"no steps: the first observation", Run{Start: t0}, points, at(0.5)},
		{"nothing at all: the run's start", Run{Start: t0}, Timeline{}, t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := timelineOrigin(&tc.run, tc.tl); !got.Equal(tc.want) {
				t.Errorf("timelineOrigin = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSinceOrigin(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 1, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// Setup until 7 s: the DaemonSet exists from 1 s (a seed), its pods
	// come up; the first step starts at 7 s.
	points := []TimelinePoint{
		{Time: at(0), Current: 0},
		{Time: at(1), Current: 2},
		{Time: at(4), Current: 5},
		{Time: at(7), Current: 5},
		{Time: at(8.5), Current: 4},
		{Time: at(10), Current: 5},
	}
	current := func(pt TimelinePoint) int { return pt.Current }
	for _, tc := range []struct {
		name   string
		points []TimelinePoint
		origin time.Time
		want   plotter.XYs
	}{
		{
			name:   "setup left out, a point at the origin kept",
			points: points, origin: at(7),
			want: plotter.XYs{{X: 0, Y: 5}, {X: 1.5, Y: 4}, {X: 3, Y: 5}},
		},
		{
			name:   "the value in force at the origin carried to 0",
			points: points, origin: at(6),
			want: plotter.XYs{{X: 0, Y: 5}, {X: 1, Y: 5}, {X: 2.5, Y: 4}, {X: 4, Y: 5}},
		},
		{
			name:   "nothing observed before the origin",
			points: points[3:], origin: at(5),
			want: plotter.XYs{{X: 2, Y: 5}, {X: 3.5, Y: 4}, {X: 5, Y: 5}},
		},
		{
			name:   "everything before the origin: its last value",
			points: points[:3], origin: at(7),
			want: plotter.XYs{{X: 0, Y: 5}},
		},
		{name: "no points", origin: at(7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sinceOrigin(tc.points, tc.origin, current)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sinceOrigin (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSecondsTicks(t *testing.T) {
	for _, tc := range []struct {
		min, max float64
		want     []string // the labelled ticks
	}{
		{0, 26.1, []string{"0", "5", "10", "15", "20", "25"}},
		{0, 16.5, []string{"0", "5", "10", "15"}},
		{0, 8, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8"}},
		{0, 4.1, []string{"0", "1", "2", "3", "4"}},
		{0, 1.03, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{0, 0.35, []string{"0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30", "0.35"}},
		{3.9, 21.4, []string{"5", "10", "15", "20"}},
		{0, 300, []string{"0", "50", "100", "150", "200", "250", "300"}},
	} {
		var got []string
		for _, tk := range (secondsTicks{}).Ticks(tc.min, tc.max) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ticks of [%g, %g] (-want +got):\n%s", tc.min, tc.max, diff)
		}
	}
}
