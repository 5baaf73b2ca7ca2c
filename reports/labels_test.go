package reports

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkStacked checks what stackLabels promises whatever the input: every
// label lies within [lo, hi] (unless wider), labels of one row keep gap, and
// rows counts the rows used.
func checkStacked(t *testing.T, anchors, widths []float64, gap, lo, hi float64, got []placement, rows int) {
	t.Helper()
	used := map[int]bool{}
	for i, p := range got {
		used[p.Row] = true
		if p.Left < lo || (widths[i] <= hi-lo && p.Left+widths[i] > hi) {
			t.Errorf("label %d at [%g, %g] leaves [%g, %g]", i, p.Left, p.Left+widths[i], lo, hi)
		}
		for j := range i {
			q := got[j]
			if p.Row == q.Row && p.Left < q.Left+widths[j]+gap && q.Left < p.Left+widths[i]+gap {
				t.Errorf("labels %d [%g, %g] and %d [%g, %g] share row %d closer than %g",
					i, p.Left, p.Left+widths[i], j, q.Left, q.Left+widths[j], p.Row, gap)
			}
		}
	}
	if len(used) != rows {
		t.Errorf("rows = %d, but %d rows are used", rows, len(used))
	}
	for r := range rows {
		if !used[r] {
			t.Errorf("row %d is empty", r)
		}
	}
}

func TestStackLabels(t *testing.T) {
	// Anchors of steps within one second on a 24 points-a-second axis: ten
	// markers 2.4 points apart, each label 8 points wide.
	var oneSecond, oneSecondWidths []float64
	for k := range 10 {
		oneSecond = append(oneSecond, 100+2.4*float64(k))
		oneSecondWidths = append(oneSecondWidths, 8)
	}
	// The same ten steps at one instant: one column, one row each.
	sameInstant := []float64{50, 50, 50, 50, 50, 50, 50, 50, 50, 50}

	for _, tc := range []struct {
		name     string
		anchors  []float64
		widths   []float64
		gap      float64
		lo, hi   float64
		want     []placement
		wantRows int
	}{
		{
			name: "none",
			gap:  3, lo: 0, hi: 500,
			want: []placement{},
		},
		{
			name:    "one, centred on its marker",
			anchors: []float64{100}, widths: []float64{10},
			gap: 3, lo: 0, hi: 500,
			want:     []placement{{0, 95}},
			wantRows: 1,
		},
		{
			name:    "far apart share the first row",
			anchors: []float64{20, 200, 400}, widths: []float64{10, 10, 10},
			gap: 3, lo: 0, hi: 500,
			want:     []placement{{0, 15}, {0, 195}, {0, 395}},
			wantRows: 1,
		},
		{
			name:    "closer than a label's width stack",
			anchors: []float64{100, 104}, widths: []float64{10, 10},
			gap: 3, lo: 0, hi: 500,
			want:     []placement{{0, 95}, {1, 99}},
			wantRows: 2,
		},
		{
			name:    "just the gap apart share a row",
			anchors: []float64{100, 113}, widths: []float64{10, 10},
			gap: 3, lo: 0, hi: 500,
			want:     []placement{{0, 95}, {0, 108}},
			wantRows: 1,
		},
		{
			name:    "a third goes back to the first row once it fits there",
			anchors: []float64{100, 104, 114}, widths: []float64{10, 10, 10},
			gap: 3, lo: 0, hi: 500,
			want:     []placement{{0, 95}, {1, 99}, {0, 109}},
			wantRows: 2,
		},
		{
			name:    "clamped at both ends of the axis",
			anchors: []float64{1, 499}, widths: []float64{20, 20},
			gap: 3, lo: 0, hi: 500,
			want:     []placement{{0, 0}, {0, 480}},
			wantRows: 1,
		},
		{
			name:    "a clamped label still keeps its distance",
			anchors: []float64{495, 499}, widths: []float64{20, 20},
			gap: 3, lo: 0, hi: 500,
			want:     []placement{{0, 480}, {1, 480}},
			wantRows: 2,
		},
		{
			name:    "placed by anchor, not by order given",
			anchors: []float64{104, 100}, widths: []float64{10, 10},
			gap: 3, lo: 0, hi: 500,
			want:     []placement{{1, 99}, {0, 95}},
			wantRows: 2,
		},
		{
			name:    "ten steps within one second",
			anchors: oneSecond, widths: oneSecondWidths,
			gap: 3, lo: 0, hi: 500,
			want: []placement{
				// A label and its gap span 11 points, four and a half
				// markers: the sixth marker finds the first row free again.
				{0, 96}, {1, 98.4}, {2, 100.8}, {3, 103.2}, {4, 105.6},
				{0, 108}, {1, 110.4}, {2, 112.8}, {3, 115.2}, {4, 117.6},
			},
			wantRows: 5,
		},
		{
			name:    "ten steps at one instant, earliest nearest the data",
			anchors: sameInstant, widths: oneSecondWidths,
			gap: 3, lo: 0, hi: 500,
			want: []placement{
				{0, 46}, {1, 46}, {2, 46}, {3, 46}, {4, 46},
				{5, 46}, {6, 46}, {7, 46}, {8, 46}, {9, 46},
			},
			wantRows: 10,
		},
		{
			name:    "wider than the axis starts at lo",
			anchors: []float64{50}, widths: []float64{200},
			gap: 3, lo: 0, hi: 100,
			want:     []placement{{0, 0}},
			wantRows: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, rows := stackLabels(tc.anchors, tc.widths, tc.gap, tc.lo, tc.hi)
			approx := cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })
			if diff := cmp.Diff(tc.want, got, approx); diff != "" {
				t.Errorf("placements (-want +got):\n%s", diff)
			}
			if rows != tc.wantRows {
				t.Errorf("rows = %d, want %d", rows, tc.wantRows)
			}
			checkStacked(t, tc.anchors, tc.widths, tc.gap, tc.lo, tc.hi, got, rows)
		})
	}
}

// TestStackLabelsNeverOverlap lays out bursts of steps, many within one
// second, with labels of mixed widths, and checks the promises on each.
func TestStackLabelsNeverOverlap(t *testing.T) {
	for n := 1; n <= 40; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var anchors, widths []float64
			for k := range n {
				// Bursts of five markers a tenth of a second apart, every
				// 1.3 s, on an axis of 20 points a second.
				s := float64(k/5)*1.3 + float64(k%5)*0.1
				anchors = append(anchors, 10+20*s)
				widths = append(widths, 6+float64(k%3)*5)
			}
			got, rows := stackLabels(anchors, widths, 3, 0, 300)
			checkStacked(t, anchors, widths, 3, 0, 300, got, rows)
		})
	}
}

func TestFlowLines(t *testing.T) {
	for _, tc := range []struct {
		name      string
		widths    []float64
		gap       float64
		width     float64
		want      []placement
		wantLines int
	}{
		{name: "none", gap: 10, width: 100, want: []placement{}},
		{
			name:   "all on one line",
			widths: []float64{20, 30, 20}, gap: 10, width: 100,
			want:      []placement{{0, 0}, {0, 30}, {0, 70}},
			wantLines: 1,
		},
		{
			name:   "wraps when the next does not fit",
			widths: []float64{40, 40, 40}, gap: 10, width: 100,
			want:      []placement{{0, 0}, {0, 50}, {1, 0}},
			wantLines: 2,
		},
		{
			name:   "one wider than a line gets its own",
			widths: []float64{20, 150, 20}, gap: 10, width: 100,
			want:      []placement{{0, 0}, {1, 0}, {2, 0}},
			wantLines: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, lines := flowLines(tc.widths, tc.gap, tc.width)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placements (-want +got):\n%s", diff)
			}
			if lines != tc.wantLines {
				t.Errorf("lines = %d, want %d", lines, tc.wantLines)
			}
		})
	}
}

func TestWrapWords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"create", "create"},
		{"update-image", "update-image"},
		{"evict with NoExecute (fluentd and node-exporter pods must go)", "evict with NoExecute\n(fluentd and\nnode-exporter pods\nmust go)"},
		{"a-very-long-single-word-that-does-not-fit", "a-very-long-single-word-that-does-not-fit"},
		{"  spaces   collapse  ", "spaces collapse"},
	} {
		if got := wrapWords(tc.in, 20); got != tc.want {
			t.Errorf("wrapWords(%q, 20) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
