package reports

import (
	"cmp"
	"slices"
	"strings"
)

// placement is where a laid-out label goes: Row 0 is the row nearest the
// data (or the first line of a key), Left its left edge, in the unit of the
// positions given (points, when drawing).
type placement struct {
	Row  int
	Left float64
}

// stackLabels lays out labels of the given widths, each centred on its
// anchor (a step marker's x) as far as [lo, hi] allows, in rows: each label
// takes the lowest row in which it keeps at least gap from every label
// already there. Labels are taken in order of anchor (ties in the order
// given), so that of several markers at one x the earliest sits nearest the
// data. No two labels of a row come closer than gap; a label wider than
// hi-lo starts at lo. It returns the placements in the order given and the
// number of rows used.
func stackLabels(anchors, widths []float64, gap, lo, hi float64) ([]placement, int) {
	order := make([]int, len(anchors))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(anchors[a], anchors[b]) })

	type span struct{ l, r float64 }
	var rows [][]span
	out := make([]placement, len(anchors))
	for _, i := range order {
		w := widths[i]
		left := min(anchors[i]-w/2, hi-w)
		left = max(left, lo)
		row := 0
		for ; row < len(rows); row++ {
			free := true
			for _, s := range rows[row] {
				if left < s.r+gap && s.l < left+w+gap {
					free = false
					break
				}
			}
			if free {
				break
			}
		}
		if row == len(rows) {
			rows = append(rows, nil)
		}
		rows[row] = append(rows[row], span{left, left + w})
		out[i] = placement{Row: row, Left: left}
	}
	return out, len(rows)
}

// flowLines lays out entries of the given widths left to right in lines no
// wider than width, gap between neighbours, as words in a paragraph; an
// entry wider than a line gets a line of its own. It returns the placements
// (Row is the line) and the number of lines.
func flowLines(widths []float64, gap, width float64) ([]placement, int) {
	out := make([]placement, len(widths))
	line, x := 0, 0.0
	for i, w := range widths {
		if x > 0 && x+gap+w > width {
			line, x = line+1, 0
		}
		if x > 0 {
			x += gap
		}
		out[i] = placement{Row: line, Left: x}
		x += w
	}
	if len(widths) == 0 {
		return out, 0
	}
	return out, line + 1
}

// wrapWords breaks s at spaces into lines of at most width runes where it
// can (a longer word keeps a line of its own), joined by "\n".
func wrapWords(s string, width int) string {
	var lines []string
	var cur []rune
	for _, word := range strings.Fields(s) {
		w := []rune(word)
		if len(cur) > 0 && len(cur)+1+len(w) > width {
			lines = append(lines, string(cur))
			cur = nil
		}
		if len(cur) > 0 {
			cur = append(cur, ' ')
		}
		cur = append(cur, w...)
	}
	if len(cur) > 0 {
		lines = append(lines, string(cur))
	}
	return strings.Join(lines, "\n")
}
