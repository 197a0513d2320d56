package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// DoorGRPC is blockfs's own gRPC ClientService, the default door; a
// sweep through another door (DoorHDFS) labels its Result with that
// door's name.
const DoorGRPC = "grpc"

// modeColors are fixed per mode so plots of different runs compare.
var modeColors = map[string]color.RGBA{
	"per-block":   {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	"per-request": {R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	"cached":      {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
}

var otherColors = []color.RGBA{{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}}

// doorStyle is how a door's series are drawn, so that two doors' series
// of one mode (the same colour) can be told apart: the first door solid
// with dots, the next dashed with triangles, and so on.
type doorStyle struct {
	dashes []vg.Length
	glyph  draw.GlyphDrawer
}

var doorStyles = []doorStyle{
	{nil, draw.CircleGlyph{}},
	{[]vg.Length{vg.Points(7), vg.Points(3)}, draw.TriangleGlyph{}},
	{[]vg.Length{vg.Points(2), vg.Points(2)}, draw.SquareGlyph{}},
}

// point is one block count of a series: the median and the quartiles of
// its GetBlockLocations round trips (ms).
type point struct {
	blocks           int
	median, p25, p75 float64
}

// series is one line of the chart: one door in one token mode.
type series struct {
	door, mode string
	points     []point
	floor      float64 // the health-check floor's median (ms), 0 if none
}

// chart is the sweep plot: every series added, keyed by door and mode.
type chart struct {
	calls, concurrency int
	doors              []string // in the order added, for their styles
	series             []series
}

// newChart is an empty chart for sweeps of calls calls per point at
// concurrency.
func newChart(calls, concurrency int) *chart {
	return &chart{calls: calls, concurrency: concurrency}
}

// addDoor adds one series per token mode of r, measured through door
// ("grpc", "hdfs"): a second door's sweep of the same run is one more
// call, and its lines share the modes' colours in the door's own style.
func (c *chart) addDoor(door string, r *Result) {
	c.doors = append(c.doors, door)
	for _, m := range r.Modes {
		s := series{door: door, mode: m.Mode, floor: m.Floor.Summary.Median}
		for _, cell := range m.Cells {
			if len(cell.GBL.Samples) == 0 {
				continue
			}
			sum := cell.GBL.Summary
			s.points = append(s.points, point{blocks: cell.Blocks, median: sum.Median, p25: sum.P25, p75: sum.P75})
		}
		c.series = append(c.series, s)
	}
}

// Plot writes the chart of a run's sweeps, one per door (r.Door, "grpc"
// when unset), all on one plot. The format follows the file's extension
// (.svg or .png).
func Plot(res []*Result, file string) error {
	if len(res) == 0 {
		return fmt.Errorf("plot %s: no sweep to plot", file)
	}
	c := newChart(res[0].Calls, res[0].Concurrency)
	for _, r := range res {
		door := r.Door
		if door == "" {
			door = DoorGRPC
		}
		c.addDoor(door, r)
	}
	return c.save(file)
}

// save draws the chart: median GetBlockLocations latency against block
// count, both axes logarithmic, one line per series with its p25-p75
// band shaded, each series' health-check floor dashed, and the legend
// beside the axes, where it covers neither the title nor the data.
func (c *chart) save(file string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("GetBlockLocations round trip: median, p25-p75 band (%d calls per point, concurrency %d)", c.calls, c.concurrency)
	p.X.Label.Text = "blocks in file"
	p.Y.Label.Text = "round trip (ms)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.Padding = vg.Points(2)

	minX, maxX := math.Inf(1), math.Inf(-1)
	minY, maxY := math.Inf(1), math.Inf(-1)
	for _, s := range c.series {
		for _, pt := range s.points {
			minX, maxX = math.Min(minX, float64(pt.blocks)), math.Max(maxX, float64(pt.blocks))
			minY, maxY = math.Min(minY, pt.p25), math.Max(maxY, pt.p75)
		}
	}
	if math.IsInf(minY, 1) {
		return fmt.Errorf("plot %s: no successful calls to plot", file)
	}
	for i, s := range c.series {
		col, ok := modeColors[s.mode]
		if !ok {
			col = otherColors[i%len(otherColors)]
		}
		st := doorStyles[c.doorIndex(s.door)%len(doorStyles)]
		label := s.door + " " + s.mode
		if len(s.points) > 0 {
			if band := bandOf(s.points, col); band != nil {
				p.Add(band)
			}
			var pts plotter.XYs
			for _, pt := range s.points {
				pts = append(pts, plotter.XY{X: float64(pt.blocks), Y: pt.median})
			}
			line, dots, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			line.Color, line.Width, line.Dashes = col, vg.Points(2), st.dashes
			dots.Color, dots.Shape, dots.Radius = col, st.glyph, vg.Points(3)
			p.Add(line, dots)
			leg.Add(label+" median", line, dots)
		}
		if s.floor > 0 {
			fl, err := plotter.NewLine(plotter.XYs{{X: minX, Y: s.floor}, {X: maxX, Y: s.floor}})
			if err != nil {
				return err
			}
			fl.Color, fl.Width, fl.Dashes = col, vg.Points(1), []vg.Length{vg.Points(1), vg.Points(3)}
			p.Add(fl)
			leg.Add(label+" floor ("+floorName(s.door)+")", fl)
			minY, maxY = math.Min(minY, s.floor), math.Max(maxY, s.floor)
		}
	}
	// Pad the ranges (in log space) so that points do not sit on the frame.
	p.X.Min, p.X.Max = minX/1.5, maxX*1.5
	p.Y.Min, p.Y.Max = minY/1.5, maxY*1.5
	return drawBeside(p, &leg, file)
}

// doorIndex is the position of door among the chart's doors.
func (c *chart) doorIndex(door string) int {
	for i, d := range c.doors {
		if d == door {
			return i
		}
	}
	return 0
}

// bandOf is the shaded p25-p75 band of pts (nil with fewer than two
// points, where there is no band to draw, or none of any height).
func bandOf(pts []point, col color.RGBA) *plotter.Polygon {
	if len(pts) < 2 {
		return nil
	}
	ring := make(plotter.XYs, 0, 2*len(pts))
	for _, pt := range pts {
		ring = append(ring, plotter.XY{X: float64(pt.blocks), Y: pt.p25})
	}
	for i := len(pts) - 1; i >= 0; i-- {
		ring = append(ring, plotter.XY{X: float64(pts[i].blocks), Y: pts[i].p75})
	}
	band, err := plotter.NewPolygon(ring)
	if err != nil {
		return nil
	}
	band.Color = color.NRGBA{R: col.R, G: col.G, B: col.B, A: 0x38}
	band.LineStyle.Width = 0
	return band
}

// drawBeside draws p with leg to its right, outside the axes, and writes
// the picture to file in the format its extension names.
func drawBeside(p *plot.Plot, leg *plot.Legend, file string) error {
	const w, h = 11 * vg.Inch, 6 * vg.Inch
	format := strings.TrimPrefix(filepath.Ext(file), ".")
	cw, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return fmt.Errorf("plot %s: %w", file, err)
	}
	dc := draw.New(cw)
	dc.SetColor(color.White) // the legend's column too, not only the plot's
	dc.Fill(dc.Rectangle.Path())
	lw := leg.Rectangle(dc).Size().X
	// A margin on the right too: an SVG viewer's font may run a little
	// wider than the metrics the legend was measured with.
	gap := vg.Points(12)
	p.Draw(draw.Crop(dc, 0, -(lw + 4*gap), 0, 0))
	// The legend's column starts below the title, level with the axes' top.
	right := draw.Crop(dc, w-lw-3*gap, -3*gap, 0, -p.Title.TextStyle.Height(p.Title.Text)-p.Title.Padding-vg.Points(4))
	leg.Draw(right)
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := cw.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
