package reports

import (
	"bytes"
	"encoding/base64"
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// composed is a plot with what gonum/plot does not place by itself: the
// legend goes outside the data area, on its right, so that it never hides
// data; a band between the title and the data area holds a timeline's step
// labels; a key below the plot names them.
type composed struct {
	plot *plot.Plot
	// height is that of the title and the plot; the band and the key add theirs.
	height vg.Length
	// band lays out what goes just above the data area, given where a data
	// x falls on the canvas and the data area's extent [lo, hi].
	band func(x func(float64) vg.Length, lo, hi vg.Length) section
	// key lays out what goes below the plot, given the width it may take.
	key func(width vg.Length) section
}

// section is a laid-out part of a figure: its height, and how to draw it on
// a canvas of that height (the band's draw takes x as given to band).
type section struct {
	height vg.Length
	draw   func(c draw.Canvas)
}

// legendPad separates the legend from the plot and the figure's edge;
// leftPad keeps the plot's labels off the figure's left edge.
const (
	legendPad = 8 // points
	leftPad   = 4 // points
)

// png draws the figure w wide and returns it base64-encoded.
func (f *composed) png(w vg.Length) (string, error) {
	data, err := f.pngData(w)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(data), nil
}

// pngData draws the figure w wide as a PNG.
func (f *composed) pngData(w vg.Length) ([]byte, error) {
	p := f.plot
	title, legend := p.Title, p.Legend
	defer func() { p.Title, p.Legend = title, legend }()
	p.Title.Text = ""
	p.Legend = plot.NewLegend()

	var titleH vg.Length
	if title.Text != "" {
		titleH = title.TextStyle.Rectangle(title.Text).Size().Y + title.Padding
	}
	legendW := legend.Rectangle(draw.Canvas{}).Size().X
	if legendW > 0 {
		legendW += 2 * legendPad
	}
	plotW, plotH := w-legendW, f.height-titleH
	if plotW <= 0 || plotH <= 0 {
		return nil, fmt.Errorf("drawing plot %q: %v by %v leaves no room for the data", title.Text, w, f.height)
	}

	// The data area's horizontal extent does not depend on the height, so
	// the band can be laid out before the canvas is made.
	probe := p.DataCanvas(draw.Canvas{Rectangle: vg.Rectangle{Min: vg.Point{X: leftPad}, Max: vg.Point{X: plotW, Y: plotH}}})
	xOf, _ := p.Transforms(&probe)
	var band, key section
	if f.band != nil {
		band = f.band(xOf, probe.Min.X, probe.Max.X)
	}
	if f.key != nil {
		key = f.key(plotW - probe.Min.X)
	}
	bandH := band.height
	if bandH > 0 {
		bandH += 3 // below and above the band
	}

	img := vgimg.New(w, titleH+bandH+plotH+key.height)
	dc := draw.New(img)
	if title.Text != "" {
		descent := title.TextStyle.FontExtents().Descent
		dc.FillText(title.TextStyle, vg.Point{X: plotW / 2, Y: dc.Max.Y + descent}, title.Text)
	}
	plotC := draw.Canvas{Canvas: img, Rectangle: vg.Rectangle{
		Min: vg.Point{X: leftPad, Y: key.height},
		Max: vg.Point{X: plotW, Y: key.height + plotH},
	}}
	p.Draw(plotC)
	dataC := p.DataCanvas(plotC)
	if legendW > 0 {
		legend.Top, legend.Left = true, true
		legend.XOffs, legend.YOffs = 0, 0
		legend.Draw(draw.Canvas{Canvas: img, Rectangle: vg.Rectangle{
			Min: vg.Point{X: plotW + legendPad, Y: dataC.Min.Y},
			Max: vg.Point{X: w - legendPad, Y: dataC.Max.Y},
		}})
	}
	if band.draw != nil {
		band.draw(draw.Canvas{Canvas: img, Rectangle: vg.Rectangle{
			Min: vg.Point{X: dataC.Min.X, Y: dataC.Max.Y + 2},
			Max: vg.Point{X: dataC.Max.X, Y: dataC.Max.Y + 2 + band.height},
		}})
	}
	if key.draw != nil {
		key.draw(draw.Canvas{Canvas: img, Rectangle: vg.Rectangle{
			Min: vg.Point{X: dataC.Min.X},
			Max: vg.Point{X: plotW, Y: key.height},
		}})
	}

	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encoding plot %q: %w", title.Text, err)
	}
	return buf.Bytes(), nil
}
