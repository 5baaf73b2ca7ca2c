package reports

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// fmtNum prints a measurement with about three significant digits, never in
// exponent notation, and integers exactly.
func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "-∞"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return fmtDecimal(v)
	}
}

// fmtDecimal is fmtNum without the exact-integer form, so that a column of
// seconds reads alike (11.00 beside 9.30).
func fmtDecimal(v float64) string {
	switch {
	case !isFinite(v):
		return fmtNum(v)
	case math.Abs(v) >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case math.Abs(v) >= 0.1 || v == 0:
		return strconv.FormatFloat(v, 'f', 3, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// fmtBytes prints a byte count with IEC prefixes.
func fmtBytes(v float64) string {
	if !isFinite(v) {
		return fmtNum(v)
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmtNum(v) + " B"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}

// fmtValue prints v in the metric's unit (bytes get a prefix).
func fmtValue(m Metric, v float64) string {
	switch m.Unit {
	case "B":
		return fmtBytes(v)
	case "":
		return fmtNum(v)
	}
	return fmtDecimal(v)
}

// unitLabel is the unit column of tables.
func unitLabel(m Metric) string {
	switch m.Unit {
	case "":
		return "count"
	case "B":
		return "bytes"
	}
	return m.Unit
}

func fmtPercent(f float64) string {
	return strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
}

func fmtRatio(r float64) string {
	if !isFinite(r) {
		return fmtNum(r)
	}
	return strconv.FormatFloat(r, 'f', 3, 64)
}

func fmtP(c SampleComparison) string {
	if !c.Tested {
		return "—"
	}
	return strconv.FormatFloat(c.Test.P, 'f', 3, 64)
}

// fmtCI prints a median with its CI, "12.3 [11.9, 13.0]", or "12.3 (no CI)".
func fmtMedianCI(m Metric, s Stats) string {
	if s.N == 0 {
		return "—"
	}
	if !s.CI.OK {
		return fmtValue(m, s.Median)
	}
	return fmt.Sprintf("%s [%s, %s]", fmtValue(m, s.Median), fmtValue(m, s.CI.Lo), fmtValue(m, s.CI.Hi))
}

func fmtRatioCI(c SampleComparison) string {
	if !c.RatioCI.OK {
		return fmtRatio(c.Ratio)
	}
	return fmt.Sprintf("%s [%s, %s]", fmtRatio(c.Ratio), fmtRatio(c.RatioCI.Lo), fmtRatio(c.RatioCI.Hi))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// table is a rendered table shared by the markdown and HTML outputs.
type table struct {
	Title  string
	Header []string
	Right  []bool // right-align column i
	Rows   [][]string
	Notes  []string // footnotes, referenced as (1), (2), ... in cells
}

func (t table) markdown(heading string) string {
	var b strings.Builder
	if t.Title != "" {
		fmt.Fprintf(&b, "%s %s\n\n", heading, t.Title)
	}
	b.WriteString("|")
	for _, h := range t.Header {
		fmt.Fprintf(&b, " %s |", mdEscape(h))
	}
	b.WriteString("\n|")
	for i := range t.Header {
		if i < len(t.Right) && t.Right[i] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, row := range t.Rows {
		b.WriteString("|")
		for _, cell := range row {
			fmt.Fprintf(&b, " %s |", mdEscape(cell))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for i, n := range t.Notes {
		fmt.Fprintf(&b, "(%d) %s  \n", i+1, n)
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
