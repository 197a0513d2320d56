package netfault

import (
	"context"
	"image/color"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// timeline samples acknowledged ops/s every half second.
type timeline struct {
	start time.Time
	acked *ackCounter
	mu    sync.Mutex
	pts   plotter.XYs // seconds since start, ops/s
}

const sampleEvery = 500 * time.Millisecond

func newTimeline(a *ackCounter) *timeline { return &timeline{start: time.Now(), acked: a} }

func (tl *timeline) elapsed() time.Duration { return time.Since(tl.start) }

func (tl *timeline) sample(ctx context.Context) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	last, lastT := tl.acked.Load(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			n := tl.acked.Load()
			tl.mu.Lock()
			tl.pts = append(tl.pts, plotter.XY{X: now.Sub(tl.start).Seconds(), Y: float64(n-last) / now.Sub(lastT).Seconds()})
			tl.mu.Unlock()
			last, lastT = n, now
		}
	}
}

// plot draws throughput against time as an SVG (or PNG, by file's
// extension), each fault a shaded span labelled with its kind, and the
// no-fault baseline dashed.
func (tl *timeline) plot(file string, recs []faultRecord, baseline float64) error {
	tl.mu.Lock()
	pts := append(plotter.XYs(nil), tl.pts...)
	tl.mu.Unlock()
	p := plot.New()
	p.Title.Text = "acknowledged operations per second under the nemesis"
	p.X.Label.Text = "seconds since start"
	p.Y.Label.Text = "acked ops/s (0.5 s bins)"
	top := baseline
	for _, pt := range pts {
		top = max(top, pt.Y)
	}
	top *= 1.15
	shade := color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0x30}
	var labels plotter.XYLabels
	for i, r := range recs {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: r.Start, Y: 0}, {X: r.Start + r.Seconds, Y: 0}, {X: r.Start + r.Seconds, Y: top}, {X: r.Start, Y: top}})
		if err != nil {
			return err
		}
		poly.Color, poly.LineStyle.Width = shade, 0
		p.Add(poly)
		y := top * (0.97 - 0.06*float64(i%4)) // stagger so neighbours do not overlap
		labels.XYs = append(labels.XYs, plotter.XY{X: r.Start, Y: y})
		labels.Labels = append(labels.Labels, r.Kind)
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	line.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	p.Add(line)
	if len(pts) > 0 {
		base, err := plotter.NewLine(plotter.XYs{{X: 0, Y: baseline}, {X: pts[len(pts)-1].X, Y: baseline}})
		if err != nil {
			return err
		}
		base.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		base.Color = color.Gray{Y: 0x60}
		p.Add(base)
		p.Legend.Add("acked ops/s", line)
		p.Legend.Add("no-fault baseline", base)
	}
	if len(labels.Labels) > 0 {
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font.Size = vg.Points(6)
		}
		p.Add(l)
	}
	p.Y.Min, p.Y.Max = 0, top
	width := vg.Length(max(8, len(pts)/40)) * vg.Inch
	return p.Save(min(width, 60*vg.Inch), 4*vg.Inch, file)
}
