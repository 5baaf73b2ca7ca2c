package reports

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Glyph shapes tell the controllers apart without colour.
func controllerGlyph(c string) draw.GlyphDrawer {
	switch c {
	case ControllerOurs:
		return draw.CircleGlyph{}
	case ControllerOursDirect:
		return draw.CrossGlyph{}
	case ControllerFloor:
		return draw.SquareGlyph{}
	case ControllerExternal:
		return draw.PlusGlyph{}
	}
	return draw.TriangleGlyph{}
}

// scaleAxis is how a unit is drawn: bytes in MiB, the rest as measured.
func scaleAxis(metric, unit string) (label string, per float64) {
	switch {
	case unit == "B":
		return "MiB", 1 << 20
	case metric == MetricCPU.Key:
		return "CPU seconds", 1
	case unit == "s":
		return "seconds", 1
	case metric == MetricRequests.Key:
		return "API requests", 1
	}
	return "count", 1
}

// errorPoints are medians with their bars, as plotter.YErrorBars wants them.
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}

// plot draws the figure: per controller, the medians with their CI (or,
// with too few repetitions, their range) as bars, and the better fit over
// the node counts measured. Axes start at 0, so that a curve's growth reads
// as a ratio.
func (f *scaleFigure) plot() (*composed, error) {
	p := plot.New()
	p.Title.Text = f.Label + " — " + f.Scenario
	p.X.Label.Text = "nodes"
	p.X.Tick.Marker = integerTicks{}
	yLabel, per := scaleAxis(f.Metric, f.Unit)
	p.Y.Label.Text = yLabel
	if f.Unit == "s" {
		p.Y.Tick.Marker = secondsTicks{}
	}
	p.Legend.TextStyle.Font.Size = keySize
	p.Add(plotter.NewGrid())

	xmax, ymax := 1.0, 0.0
	for _, se := range f.Series {
		var pts errorPoints
		for _, pt := range se.Points {
			sum := pt.Summary
			if sum == nil {
				continue
			}
			lo, hi := sum.Min, sum.Max
			if sum.CI != nil {
				lo, hi = sum.CI.Lo, sum.CI.Hi
			}
			y := sum.Median / per
			pts.XYs = append(pts.XYs, plotter.XY{X: float64(pt.Nodes), Y: y})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{y - lo/per, hi/per - y})
			xmax, ymax = math.Max(xmax, float64(pt.Nodes)), math.Max(ymax, hi/per)
		}
		if len(pts.XYs) == 0 {
			continue
		}
		col := controllerColor(se.Controller)
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, fmt.Errorf("plot %s: error bars of %s: %w", p.Title.Text, se.Controller, err)
		}
		bars.Color = col
		bars.Width = vg.Points(1)
		sc, err := plotter.NewScatter(pts.XYs)
		if err != nil {
			return nil, fmt.Errorf("plot %s: points of %s: %w", p.Title.Text, se.Controller, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3.5), Shape: controllerGlyph(se.Controller)}
		p.Add(bars, sc)

		curve, label := fittedCurve(se, per)
		if curve == nil {
			p.Legend.Add(label, sc)
			continue
		}
		curve.Color = col
		curve.Width = vg.Points(1.5)
		measured := se.MeasuredNodes()
		curve.XMin, curve.XMax = float64(measured[0]), float64(measured[len(measured)-1])
		curve.Samples = 100
		p.Add(curve)
		p.Legend.Add(label, sc, curve)
		// The curve between the points can rise above them (a power law
		// is convex); keep it inside the frame.
		for _, x := range []float64{curve.XMin, curve.XMax} {
			ymax = math.Max(ymax, curve.F(x))
		}
	}
	p.X.Min, p.X.Max = 0, xmax*1.05
	p.Y.Min, p.Y.Max = 0, math.Max(ymax*1.08, 1e-3)
	return &composed{plot: p, height: figHeight}, nil
}

// fittedCurve is a series' better fit, in the plot's units, and its legend
// entry; no curve without a fit.
func fittedCurve(se *ScaleSeries, per float64) (*plotter.Function, string) {
	switch {
	case se.Better == FitPower && se.Power != nil:
		pw := *se.Power
		return plotter.NewFunction(func(x float64) float64 { return pw.At(x) / per }),
			fmt.Sprintf("%s: n^%.2f, R² %s", se.Controller, pw.Exponent, fmtR2(pw.R2))
	case se.Linear != nil:
		ln := *se.Linear
		return plotter.NewFunction(func(x float64) float64 { return ln.At(x) / per }),
			fmt.Sprintf("%s: linear, R² %s", se.Controller, fmtR2(ln.R2))
	}
	return nil, se.Controller + ": no fit"
}
