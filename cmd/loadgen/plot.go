package main

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// modeColors are fixed per mode so plots of different runs compare.
var modeColors = map[string]color.RGBA{
	"per-block":   {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	"per-request": {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	"cached":      {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
}

var otherColors = []color.RGBA{{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}}

// Plot writes the median GetBlockLocations latency against block count,
// both axes logarithmic, one line per mode, and each mode's health-check
// floor as a dashed line. The format follows the file's extension (.svg or
// .png).
func Plot(r *Result, file string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("GetBlockLocations median latency (%d calls per point, concurrency %d)", r.Calls, r.Concurrency)
	p.X.Label.Text = "blocks in file"
	p.Y.Label.Text = "median round trip (ms)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())

	minX, maxX := math.Inf(1), math.Inf(-1)
	minY, maxY := math.Inf(1), math.Inf(-1)
	for _, n := range r.Blocks {
		minX, maxX = math.Min(minX, float64(n)), math.Max(maxX, float64(n))
	}
	for i, m := range r.Modes {
		c, ok := modeColors[m.Mode]
		if !ok {
			c = otherColors[i%len(otherColors)]
		}
		var pts plotter.XYs
		for _, cell := range m.Cells {
			if len(cell.GBL.Samples) == 0 {
				continue
			}
			y := cell.GBL.Summary.Median
			pts = append(pts, plotter.XY{X: float64(cell.Blocks), Y: y})
			minY, maxY = math.Min(minY, y), math.Max(maxY, y)
		}
		if len(pts) > 0 {
			line, points, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			line.Color, line.Width = c, vg.Points(2)
			points.Color, points.Shape, points.Radius = c, draw.CircleGlyph{}, vg.Points(3)
			p.Add(line, points)
			p.Legend.Add(m.Mode, line, points)
		}
		if f := m.Floor.Summary.Median; f > 0 && maxX >= minX {
			fl, err := plotter.NewLine(plotter.XYs{{X: minX, Y: f}, {X: maxX, Y: f}})
			if err != nil {
				return err
			}
			fl.Color, fl.Width, fl.Dashes = c, vg.Points(1), []vg.Length{vg.Points(5), vg.Points(4)}
			p.Add(fl)
			p.Legend.Add(m.Mode+" floor (health check)", fl)
			minY, maxY = math.Min(minY, f), math.Max(maxY, f)
		}
	}
	if math.IsInf(minY, 1) {
		return fmt.Errorf("plot %s: no successful calls to plot", file)
	}
	// Pad the ranges (in log space) so points do not sit on the frame, and
	// leave room at the top for the legend.
	p.X.Min, p.X.Max = minX/1.5, maxX*1.5
	if p.X.Min == p.X.Max {
		p.X.Min, p.X.Max = minX/10, maxX*10
	}
	p.Y.Min, p.Y.Max = minY/2, maxY*8
	return p.Save(9*vg.Inch, 6*vg.Inch, file)
}
