package reports

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"time"

	stdfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// figure is one embedded plot.
type figure struct {
	Kind    string // figureBox, figureCDF or figureTimeline
	Title   string
	Caption string
	PNG     string // base64
}

var (
	colorOurs     = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	colorUpstream = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	colorFloor    = color.RGBA{R: 127, G: 127, B: 127, A: 255}
	colorDesired  = color.RGBA{A: 255}
	colorCurrent  = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	colorReady    = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	colorUpdated  = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	colorMarker   = color.RGBA{R: 120, G: 120, B: 120, A: 255}
	colorKeyText  = color.RGBA{R: 34, G: 34, B: 34, A: 255}
)

// colorOursDirect is ours-direct's colour: purple, apart from ours's blue,
// upstream's orange and the timelines' green and red.
var colorOursDirect = color.RGBA{R: 148, G: 103, B: 189, A: 255}

// colorExternal is the external controller's colour: brown, apart from all
// of the above.
var colorExternal = color.RGBA{R: 140, G: 86, B: 75, A: 255}

// Figure kinds, also the class of a figure's <img> in report.html.
const (
	figureBox      = "box"
	figureCDF      = "cdf"
	figureTimeline = "timeline"
)

const timelineCaption = "Counts observed by the harness (desired from the oracle, not from DaemonSet status) from the first step's start; the setup before it is not shown. " +
	"Dashed verticals mark step starts, numbered above the plot and named in the key below it. " +
	"Where counts coincide every line still shows: current is the widest, ready inside it, updated inside that, desired dashed on top."

func controllerColor(c string) color.Color {
	switch c {
	case ControllerOurs:
		return colorOurs
	case ControllerOursDirect:
		return colorOursDirect
	case ControllerFloor:
		return colorFloor
	case ControllerExternal:
		return colorExternal
	}
	return colorUpstream
}

const (
	figWidth  = 7.5 * vg.Inch
	figHeight = 3.6 * vg.Inch
)

// Timeline styles. Where counts coincide (current and updated through a
// first rollout, all of them once converged) every series must still show:
// they are drawn widest first, so that each narrower line lies inside the
// wider ones beneath it, and desired, the target, is dashed on top.
var timelineSeries = []struct {
	name   string
	col    color.Color
	width  vg.Length
	dashes []vg.Length
	value  func(TimelinePoint) int
}{
	{"current", colorCurrent, vg.Points(6), nil, func(pt TimelinePoint) int { return pt.Current }},
	{"ready", colorReady, vg.Points(3.5), nil, func(pt TimelinePoint) int { return pt.Ready }},
	{"updated", colorUpdated, vg.Points(1.5), nil, func(pt TimelinePoint) int { return pt.Updated }},
	{"desired", colorDesired, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}, func(pt TimelinePoint) int { return pt.Desired }},
}

// timelineLegendOrder lists the series in the legend: the target first.
var timelineLegendOrder = []string{"desired", "current", "ready", "updated"}

// timelineOrigin is time 0 of a run's timelines: the first step's start, so
// that the run's setup (cluster, seed objects, watches) is not drawn. A run
// without steps starts at its first observation.
func timelineOrigin(run *Run, tl Timeline) time.Time {
	if len(run.Steps) > 0 {
		origin := run.Steps[0].Start
		for _, st := range run.Steps[1:] {
			if st.Start.Before(origin) {
				origin = st.Start
			}
		}
		return origin
	}
	if len(tl.Points) > 0 {
		return tl.Points[0].Time
	}
	return run.Start
}

// sinceOrigin returns one count of a timeline against seconds since origin.
// The value in force at origin, the last point at or before it, is drawn
// from x = 0; the points before it are left out. Values are never moved.
func sinceOrigin(points []TimelinePoint, origin time.Time, value func(TimelinePoint) int) plotter.XYs {
	first := 0
	for i, pt := range points {
		if pt.Time.After(origin) {
			break
		}
		first = i
	}
	var xys plotter.XYs
	for _, pt := range points[first:] {
		x := math.Max(pt.Time.Sub(origin).Seconds(), 0)
		xys = append(xys, plotter.XY{X: x, Y: float64(value(pt))})
	}
	return xys
}

// stepMarker is a step's vertical line on a timeline: its x and the label
// of its chip, its number in the run.
type stepMarker struct {
	X     float64
	Label string
	Name  string
}

// Step chips: a step's number, white on colorStepChip, above the data area
// at the step's marker; the key below the plot repeats each chip with the
// step's name. The colour is used for nothing else, which lets the browser
// test find the chips in a screenshot.
var (
	colorStepChip = color.RGBA{R: 106, G: 61, B: 154, A: 255}
	chipFont      = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: stdfont.WeightBold}
)

const (
	chipPadX  = 3   // points left and right of a chip's number
	chipPadY  = 1   // points above and below it
	chipGap   = 3   // points between the chips of a row
	chipRowUp = 2   // points between rows of chips
	keyGap    = 14  // points between the entries of a key line
	keyIndent = 3   // points between a key's chip and its text
	keyTop    = 6   // points between the plot and the key
	keySize   = 10  // the key's font size
	chipSize  = 8.5 // the chips' font size
)

func chipStyle(h text.Handler) text.Style {
	return text.Style{
		Color:   color.White,
		Font:    font.From(chipFont, chipSize),
		XAlign:  draw.XCenter,
		YAlign:  draw.YCenter,
		Handler: h,
	}
}

func chipSizeOf(sty text.Style, label string) (w, h vg.Length) {
	return sty.Width(label) + 2*chipPadX, sty.FontExtents().Height + 2*chipPadY
}

// drawChip draws a step's chip with its lower left corner at (x, y).
func drawChip(c draw.Canvas, sty text.Style, x, y vg.Length, label string) {
	w, h := chipSizeOf(sty, label)
	c.FillPolygon(colorStepChip, []vg.Point{{X: x, Y: y}, {X: x + w, Y: y}, {X: x + w, Y: y + h}, {X: x, Y: y + h}})
	c.FillText(sty, vg.Point{X: x + w/2, Y: y + h/2}, label)
}

// stepBand lays out the markers' chips in rows above the data area so that
// none overlap (see stackLabels): steps closer than a chip's width stack.
func stepBand(sty text.Style, markers []stepMarker) func(x func(float64) vg.Length, lo, hi vg.Length) section {
	return func(xOf func(float64) vg.Length, lo, hi vg.Length) section {
		if len(markers) == 0 {
			return section{}
		}
		anchors := make([]float64, len(markers))
		widths := make([]float64, len(markers))
		var chipH vg.Length
		for i, m := range markers {
			w, h := chipSizeOf(sty, m.Label)
			anchors[i], widths[i], chipH = float64(xOf(m.X)), float64(w), h
		}
		places, rows := stackLabels(anchors, widths, chipGap, float64(lo), float64(hi))
		rowH := chipH + chipRowUp
		return section{
			height: vg.Length(rows)*rowH - chipRowUp,
			draw: func(c draw.Canvas) {
				for i, pl := range places {
					drawChip(c, sty, vg.Length(pl.Left), c.Min.Y+vg.Length(pl.Row)*rowH, markers[i].Label)
				}
			},
		}
	}
}

// stepKeySection names each chip below the plot: chip, name and start in seconds
// since the first step, flowed into lines (see flowLines).
func stepKeySection(chip, sty text.Style, markers []stepMarker) func(width vg.Length) section {
	return func(width vg.Length) section {
		if len(markers) == 0 {
			return section{}
		}
		texts := make([]string, len(markers))
		widths := make([]float64, len(markers))
		var lineH vg.Length
		for i, m := range markers {
			texts[i] = fmt.Sprintf("%s (%.2f s)", m.Name, m.X)
			cw, ch := chipSizeOf(chip, m.Label)
			widths[i] = float64(cw + keyIndent + sty.Width(texts[i]))
			lineH = max(ch, sty.FontExtents().Height) + chipRowUp
		}
		places, lines := flowLines(widths, keyGap, float64(width))
		return section{
			height: keyTop + vg.Length(lines)*lineH,
			draw: func(c draw.Canvas) {
				for i, pl := range places {
					x := c.Min.X + vg.Length(pl.Left)
					y := c.Max.Y - keyTop - vg.Length(pl.Row+1)*lineH
					cw, ch := chipSizeOf(chip, markers[i].Label)
					drawChip(c, chip, x, y, markers[i].Label)
					c.FillText(sty, vg.Point{X: x + cw + keyIndent, Y: y + ch/2}, texts[i])
				}
			},
		}
	}
}

// timelineFigure draws one DaemonSet's counts against seconds since the
// run's first step, as step lines, with a dashed vertical line per step,
// numbered by a chip above the data area and named in the key below.
func timelineFigure(run *Run, tl Timeline) (*composed, error) {
	origin := timelineOrigin(run, tl)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s — %s, %s, repetition %d", tl.DaemonSet, run.Scenario, run.Controller, run.Repetition)
	p.X.Label.Text = "seconds since the first step (setup not shown)"
	p.X.Tick.Marker = secondsTicks{}
	p.Y.Label.Text = "nodes"
	p.Y.Tick.Marker = integerTicks{}
	p.Legend.TextStyle.Font.Size = keySize
	p.Add(plotter.NewGrid())

	ymax, xmax := 1.0, 0.0
	lines := map[string]*plotter.Line{}
	for _, s := range timelineSeries {
		xys := sinceOrigin(tl.Points, origin, s.value)
		for _, xy := range xys {
			ymax = math.Max(ymax, xy.Y)
			xmax = math.Max(xmax, xy.X)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("timeline of %s: %w", tl.DaemonSet, err)
		}
		l.StepStyle = plotter.PostStep
		l.Color = s.col
		l.Width = s.width
		l.Dashes = s.dashes
		lines[s.name] = l
	}
	top := ymax * 1.08
	var markers []stepMarker
	for i, st := range run.Steps {
		x := st.Start.Sub(origin).Seconds()
		xmax = math.Max(xmax, x)
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
		if err != nil {
			return nil, fmt.Errorf("step marker %s: %w", st.Name, err)
		}
		l.Color = colorMarker
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
		markers = append(markers, stepMarker{X: x, Label: strconv.Itoa(i + 1), Name: StepKey(run.Steps, i)})
	}
	for _, s := range timelineSeries {
		p.Add(lines[s.name])
	}
	for _, name := range timelineLegendOrder {
		p.Legend.Add(name, lines[name])
	}
	p.Y.Min, p.Y.Max = 0, top
	p.X.Min, p.X.Max = 0, math.Max(xmax*1.03, 1)

	chip := chipStyle(p.TextHandler)
	keyText := text.Style{Color: colorKeyText, Font: font.From(plot.DefaultFont, keySize), YAlign: draw.YCenter, Handler: p.TextHandler}
	return &composed{
		plot:   p,
		height: figHeight,
		band:   stepBand(chip, markers),
		key:    stepKeySection(chip, keyText, markers),
	}, nil
}

// maxCDFPoints bounds the drawn points of a CDF; larger samples are drawn at
// evenly spaced probabilities.
const maxCDFPoints = 2000

// ecdf returns the empirical CDF as points (x(i), i/n), to be drawn as a
// post-step line starting from (x(1), 0).
func ecdf(xs []float64) plotter.XYs {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	n := len(sorted)
	if n == 0 {
		return nil
	}
	pts := plotter.XYs{{X: sorted[0], Y: 0}}
	if n <= maxCDFPoints {
		for i, x := range sorted {
			pts = append(pts, plotter.XY{X: x, Y: float64(i+1) / float64(n)})
		}
		return pts
	}
	for k := 1; k <= maxCDFPoints; k++ {
		p := float64(k) / maxCDFPoints
		pts = append(pts, plotter.XY{X: percentileSorted(sorted, p), Y: p})
	}
	return pts
}

// controllerWidth is a controller's line width in the CDFs: the first of
// the order is drawn widest and beneath, the next ones narrower on top, so
// that where the curves coincide each still shows.
func controllerWidth(i int) vg.Length {
	switch i {
	case 0:
		return vg.Points(3.5)
	case 1:
		return vg.Points(1.5)
	}
	return vg.Points(0.75)
}

// cdfFigure draws the ECDFs of per-node latencies, one line per controller,
// from 0 seconds so that the gap between the curves reads as a ratio.
func cdfFigure(title string, byController map[string][]float64, order []string) (*composed, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds"
	p.X.Tick.Marker = secondsTicks{}
	p.Y.Label.Text = "fraction of nodes"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.TextStyle.Font.Size = keySize
	p.Add(plotter.NewGrid())
	for i, c := range order {
		xs := byController[c]
		if len(xs) == 0 {
			continue
		}
		l, err := plotter.NewLine(ecdf(xs))
		if err != nil {
			return nil, fmt.Errorf("CDF %s of %s: %w", title, c, err)
		}
		l.StepStyle = plotter.PostStep
		l.Color = controllerColor(c)
		l.Width = controllerWidth(i)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (n=%d)", c, len(xs)), l)
	}
	// From 0, and past the largest value so that the last rise to 1 does
	// not lie on the frame.
	p.X.Min, p.X.Max = 0, math.Max(p.X.Max*1.03, 1e-3)
	return &composed{plot: p, height: figHeight}, nil
}

// integerTicks keeps the default ticks that fall on whole numbers (node counts).
type integerTicks struct{}

func (integerTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Value != math.Trunc(t.Value) {
			continue
		}
		if t.Label != "" {
			t.Label = strconv.FormatFloat(t.Value, 'f', 0, 64)
		}
		out = append(out, t)
	}
	return out
}

// secondsTicks marks an axis of seconds at a round step (1, 2 or 5 times a
// power of ten) giving at most maxTickIntervals intervals, labelled with as
// few decimals as the step needs, with a minor tick halfway. (gonum's
// DefaultTicks marks 0 to 26 with "0.00" and "25.00" only.)
type secondsTicks struct{}

const maxTickIntervals = 8

func (secondsTicks) Ticks(min, max float64) []plot.Tick {
	step := roundStep(max - min)
	if step == 0 {
		return (plot.DefaultTicks{}).Ticks(min, max)
	}
	decimals := 0
	if step < 1 {
		decimals = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	var out []plot.Tick
	half := step / 2
	for k := math.Ceil(min/half - 1e-9); k*half <= max+half*1e-9; k++ {
		v := k * half
		if v == 0 {
			v = 0 // not -0
		}
		t := plot.Tick{Value: v}
		if math.Mod(k, 2) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', decimals, 64)
		}
		out = append(out, t)
	}
	return out
}

// roundStep returns the smallest of 1, 2 and 5 times a power of ten that
// cuts span into at most maxTickIntervals intervals, 0 for an empty span.
func roundStep(span float64) float64 {
	if !(span > 0) || math.IsInf(span, 0) {
		return 0
	}
	mag := math.Pow(10, math.Floor(math.Log10(span/maxTickIntervals)))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(m*mag) <= maxTickIntervals+1e-9 {
			return m * mag
		}
	}
	return 10 * mag
}

// swatch is a filled-square legend entry.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.c, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

func lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8 + 2*255) / 3) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 255}
}

// Box plots lie on their side: a category's name, which is a step's name
// and may be a sentence, stands on its own line(s) left of its boxes instead
// of sharing the x axis with its neighbours.
const (
	boxWidth     = 14 // points, the thickness of a box
	boxSpacing   = 4  // points between a category's boxes
	boxCatGap    = 14 // points between categories
	boxNameRunes = 26 // a category name wraps beyond this
)

// boxFigure draws, per category (total convergence, then each step, from
// the top), the distribution over repetitions of each controller of order,
// one box beneath the other, on seconds from 0.
func boxFigure(title string, categories []string, values map[string]map[string][]float64, order []string) (*composed, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds"
	p.X.Tick.Marker = secondsTicks{}
	p.Legend.TextStyle.Font.Size = keySize
	p.Add(plotter.NewGrid())
	w := vg.Points(boxWidth)
	n := len(categories)
	for ci, c := range order {
		// The first controller of order on top.
		offset := -(vg.Length(ci) - vg.Length(len(order)-1)/2) * (w + boxSpacing)
		drawn := false
		for i, cat := range categories {
			xs := values[cat][c]
			if len(xs) == 0 {
				continue
			}
			b, err := plotter.NewBoxPlot(w, float64(n-1-i), plotter.Values(xs))
			if err != nil {
				return nil, fmt.Errorf("box plot %s/%s: %w", cat, c, err)
			}
			b.Horizontal = true
			b.Offset = offset
			b.FillColor = lighter(controllerColor(c))
			b.BoxStyle.Color = controllerColor(c)
			b.MedianStyle.Color = controllerColor(c)
			b.MedianStyle.Width = vg.Points(2)
			b.WhiskerStyle.Color = controllerColor(c)
			p.Add(b)
			drawn = true
		}
		if drawn {
			p.Legend.Add(c, swatch{controllerColor(c)})
		}
	}
	names := make([]string, n)
	for i, cat := range categories {
		names[n-1-i] = wrapWords(cat, boxNameRunes)
	}
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	// From 0, and past the largest value so that no outlier lies on the frame.
	p.X.Min, p.X.Max = 0, math.Max(p.X.Max*1.04, 1e-3)
	perCat := vg.Length(len(order))*(w+boxSpacing) + boxCatGap
	return &composed{plot: p, height: max(figHeight*3/4, vg.Points(80)+vg.Length(n)*perCat)}, nil
}

// figures draws every plot of the report: per case a box plot of convergence
// times, CDFs of node-join and per-node rollout latency, and the timelines of
// the first successful repetition of each controller.
func (a *analysis) figures() ([]figure, error) {
	var figs []figure
	add := func(kind string, f *composed, caption string) error {
		png, err := f.png(figWidth)
		if err != nil {
			return err
		}
		figs = append(figs, figure{Kind: kind, Title: f.plot.Title.Text, Caption: caption, PNG: png})
		return nil
	}
	for _, cs := range cases(a.groups) {
		// ours-direct, beside ours, only where it ran: the two-controller
		// plots keep their layout.
		order := []string{ControllerUpstream, ControllerOurs}
		cdfCaption := " Where the curves coincide, ours shows inside upstream's wider line."
		if findGroup(a.groups, cs, ControllerOursDirect) != nil {
			order = append(order, ControllerOursDirect)
			cdfCaption = " Where the curves coincide, ours shows inside upstream's wider line and ours-direct inside ours's."
		}
		// The external controller runs alone (bench.External), so its
		// plots are of it alone.
		if findGroup(a.groups, cs, ControllerExternal) != nil {
			order = append(order, ControllerExternal)
		}
		var gs []*Group
		for _, c := range order {
			if g := findGroup(a.groups, cs, c); g != nil {
				gs = append(gs, g)
			}
		}
		// Box plot of convergence: total, then each step.
		var cats []string
		values := map[string]map[string][]float64{}
		for _, m := range unionMetrics(gs...) {
			if m.Key != MetricConverge.Key && metricRank(m.Key) != metricRank(stepPrefix) {
				continue
			}
			cat := "all steps"
			if m.Key != MetricConverge.Key {
				cat = m.Key[len(stepPrefix):]
			}
			cats = append(cats, cat)
			values[cat] = map[string][]float64{}
			for _, g := range gs {
				values[cat][g.Controller] = seriesValues(g, m.Key)
			}
		}
		if len(cats) > 0 {
			f, err := boxFigure("convergence — "+cs.String(), cats, values, order)
			if err != nil {
				return nil, err
			}
			if err := add(figureBox, f, "Convergence seconds over repetitions, all steps then each step (box: quartiles, line: median, whiskers: 1.5 IQR)."); err != nil {
				return nil, err
			}
		}
		for _, measure := range []struct {
			title, caption string
			rollout        bool
		}{
			{"node join latency — ", "Empirical CDF of node-join latency, all nodes of all successful repetitions.", false},
			{"per-node rollout latency — ", "Empirical CDF of per-node rollout latency, all nodes of all successful repetitions.", true},
		} {
			by := map[string][]float64{}
			total := 0
			for _, g := range gs {
				xs := g.NodeJoins
				if measure.rollout {
					xs = g.NodeRollouts
				}
				by[g.Controller] = xs
				total += len(xs)
			}
			if total == 0 {
				continue
			}
			f, err := cdfFigure(measure.title+cs.String(), by, order)
			if err != nil {
				return nil, err
			}
			if err := add(figureCDF, f, measure.caption+cdfCaption); err != nil {
				return nil, err
			}
		}
		for _, g := range gs {
			var run *Run
			for _, r := range g.Runs {
				if r.OK() {
					run = r
					break
				}
			}
			if run == nil {
				continue
			}
			for _, tl := range run.Timelines {
				if len(tl.Points) == 0 {
					continue
				}
				f, err := timelineFigure(run, tl)
				if err != nil {
					return nil, err
				}
				if err := add(figureTimeline, f, timelineCaption); err != nil {
					return nil, err
				}
			}
		}
	}
	return figs, nil
}
