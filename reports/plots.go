package reports

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// figure is one embedded plot.
type figure struct {
	Title   string
	Caption string
	PNG     string // base64
}

var (
	colorOurs     = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	colorUpstream = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	colorDesired  = color.RGBA{A: 255}
	colorCurrent  = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	colorReady    = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	colorUpdated  = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	colorMarker   = color.RGBA{R: 120, G: 120, B: 120, A: 255}
)

func controllerColor(c string) color.Color {
	if c == ControllerOurs {
		return colorOurs
	}
	return colorUpstream
}

const (
	figWidth  = 7.5 * vg.Inch
	figHeight = 3.6 * vg.Inch
)

// encodePNG draws p and returns it base64-encoded.
func encodePNG(p *plot.Plot, w, h vg.Length) (string, error) {
	wt, err := p.WriterTo(w, h, "png")
	if err != nil {
		return "", fmt.Errorf("drawing plot %q: %w", p.Title.Text, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("encoding plot %q: %w", p.Title.Text, err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// timelinePlot draws one DaemonSet's counts against seconds since the run
// started, as step lines, with a dashed vertical line and label per step.
func timelinePlot(run *Run, tl Timeline) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s — %s, %s, repetition %d", tl.DaemonSet, run.Scenario, run.Controller, run.Repetition)
	p.X.Label.Text = "seconds since run start"
	p.Y.Label.Text = "nodes"
	p.Y.Tick.Marker = integerTicks{}
	// Bottom right: by then every count has risen to desired.
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.YOffs = vg.Points(4)
	p.Legend.XOffs = vg.Points(-4)
	series := []struct {
		name  string
		col   color.Color
		dash  bool
		value func(TimelinePoint) int
	}{
		{"desired", colorDesired, true, func(pt TimelinePoint) int { return pt.Desired }},
		{"current", colorCurrent, false, func(pt TimelinePoint) int { return pt.Current }},
		{"ready", colorReady, false, func(pt TimelinePoint) int { return pt.Ready }},
		{"updated", colorUpdated, false, func(pt TimelinePoint) int { return pt.Updated }},
	}
	ymax := 1.0
	xmax := 0.0
	for _, s := range series {
		xys := make(plotter.XYs, len(tl.Points))
		for i, pt := range tl.Points {
			xys[i].X = pt.Time.Sub(run.Start).Seconds()
			xys[i].Y = float64(s.value(pt))
			ymax = math.Max(ymax, xys[i].Y)
			xmax = math.Max(xmax, xys[i].X)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("timeline of %s: %w", tl.DaemonSet, err)
		}
		l.StepStyle = plotter.PostStep
		l.Color = s.col
		l.Width = vg.Points(1.5)
		if s.dash {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	top := ymax * 1.12
	var labels plotter.XYLabels
	for i, st := range run.Steps {
		x := st.Start.Sub(run.Start).Seconds()
		if x < 0 {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
		if err != nil {
			return nil, fmt.Errorf("step marker %s: %w", st.Name, err)
		}
		l.Color = colorMarker
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
		labels.XYs = append(labels.XYs, plotter.XY{X: x, Y: top})
		labels.Labels = append(labels.Labels, stepKey(run.Steps, i))
	}
	if len(labels.XYs) > 0 {
		lb, err := plotter.NewLabels(labels)
		if err != nil {
			return nil, fmt.Errorf("step labels: %w", err)
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Color = colorMarker
			lb.TextStyle[i].YAlign = draw.YTop
			lb.Offset = vg.Point{X: vg.Points(2)}
		}
		p.Add(lb)
	}
	p.Y.Min, p.Y.Max = 0, top
	p.X.Min, p.X.Max = 0, math.Max(xmax*1.03, 1)
	p.Add(plotter.NewGrid())
	return p, nil
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

// cdfPlot draws the ECDFs of per-node latencies, one line per controller.
func cdfPlot(title string, byController map[string][]float64, order []string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "fraction of nodes"
	p.Y.Min, p.Y.Max = 0, 1
	// Top left: a CDF rises from the bottom left to the top right.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(4)
	p.Add(plotter.NewGrid())
	for _, c := range order {
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
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (n=%d)", c, len(xs)), l)
	}
	return p, nil
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

// boxPlot draws, per category (total convergence, then each step), the
// distribution over repetitions of upstream beside ours.
func boxPlot(title string, categories []string, values map[string]map[string][]float64, order []string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "seconds"
	p.Add(plotter.NewGrid())
	w := vg.Points(18)
	for ci, c := range order {
		offset := (vg.Length(ci) - vg.Length(len(order)-1)/2) * (w + vg.Points(4))
		drawn := false
		for i, cat := range categories {
			xs := values[cat][c]
			if len(xs) == 0 {
				continue
			}
			b, err := plotter.NewBoxPlot(w, float64(i), plotter.Values(xs))
			if err != nil {
				return nil, fmt.Errorf("box plot %s/%s: %w", cat, c, err)
			}
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
	p.NominalX(categories...)
	p.Legend.Top = true
	return p, nil
}

// figures draws every plot of the report: per case a box plot of convergence
// times, CDFs of node-join and per-node rollout latency, and the timelines of
// the first successful repetition of each controller.
func (a *analysis) figures() ([]figure, error) {
	var figs []figure
	add := func(p *plot.Plot, h vg.Length, caption string) error {
		png, err := encodePNG(p, figWidth, h)
		if err != nil {
			return err
		}
		figs = append(figs, figure{Title: p.Title.Text, Caption: caption, PNG: png})
		return nil
	}
	order := []string{ControllerUpstream, ControllerOurs}
	for _, cs := range cases(a.groups) {
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
			p, err := boxPlot("convergence — "+cs.String(), cats, values, order)
			if err != nil {
				return nil, err
			}
			if err := add(p, figHeight, "Convergence seconds over repetitions (box: quartiles, line: median, whiskers: 1.5 IQR)."); err != nil {
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
			p, err := cdfPlot(measure.title+cs.String(), by, order)
			if err != nil {
				return nil, err
			}
			if err := add(p, figHeight, measure.caption); err != nil {
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
				p, err := timelinePlot(run, tl)
				if err != nil {
					return nil, err
				}
				if err := add(p, figHeight, "Counts observed by the harness (desired from the oracle, not from DaemonSet status); dashed verticals mark step starts."); err != nil {
					return nil, err
				}
			}
		}
	}
	return figs, nil
}
