package load

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteCompareHTML writes a comparison as one self-contained page, like
// WriteHTML: the table, then both runs on the same axes: the share of calls
// by latency, calls per second and p99 over time (each run's own time since
// its warm-up).
func WriteCompareHTML(w io.Writer, c *Comparison) error {
	var text bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		return err
	}
	colors := []color.Color{okColor, color.RGBA{R: 255, G: 127, B: 14, A: 255}}
	runs := []struct {
		name string
		rep  *Report
	}{{"A", c.A}, {"B", c.B}}

	dist := plot.New()
	dist.Title.Text = "Latency distribution, share of calls"
	dist.X.Label.Text = "latency (ms, log scale)"
	dist.Y.Label.Text = "share of calls"
	dist.X.Scale, dist.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	dist.Add(plotter.NewGrid())
	for i, r := range runs {
		var pts plotter.XYs
		for _, b := range r.rep.Histogram {
			if r.rep.Calls > 0 {
				pts = append(pts, plotter.XY{X: (ms(b.From) + ms(b.UpTo)) / 2, Y: float64(b.Count) / float64(r.rep.Calls)})
			}
		}
		if len(pts) == 0 {
			continue
		}
		if l, err := plotter.NewLine(pts); err == nil {
			l.Color = colors[i]
			dist.Add(l)
			dist.Legend.Add(r.name, l)
		}
	}
	dist.Legend.Top = true
	hist, err := svgPlot(dist)
	if err != nil {
		return err
	}

	rate, p99 := plot.New(), plot.New()
	rate.Title.Text, rate.Y.Label.Text = "Calls per second", "calls/s"
	p99.Title.Text, p99.Y.Label.Text = "p99 latency over time", "p99 (ms)"
	end := 0.0
	for i, r := range runs {
		elapsed := time.Duration(r.rep.Elapsed).Seconds()
		end = max(end, elapsed)
		ws := windows(r.rep, elapsed)
		addSeries(rate, r.name, colors[i], ws, func(w window) float64 { return w.per(w.calls) })
		addSeries(p99, r.name, colors[i], ws, p99Value)
	}
	for _, p := range []*plot.Plot{rate, p99} {
		p.X.Label.Text = "seconds since the start (after the warm-up)"
		p.X.Min, p.X.Max, p.Y.Min = 0, max(end, 1), 0
		p.Add(plotter.NewGrid())
	}
	cv := vgsvg.NewWith(vgsvg.UseWH(18*vg.Centimeter, 18*vg.Centimeter), vgsvg.EmbedFonts(false))
	canvases := plot.Align([][]*plot.Plot{{rate}, {p99}}, draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Centimeter}, draw.New(cv))
	rate.Draw(canvases[0][0])
	p99.Draw(canvases[1][0])
	timeline, err := svgOf(cv)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("conduit load compare: p99 %s → %s (%s)", round(c.A.Latency.P99), round(c.B.Latency.P99),
		pct(change(ms(c.A.Latency.P99), ms(c.B.Latency.P99))))
	return page.Execute(w, map[string]any{"Title": title, "Text": text.String(), "Plots": []template.HTML{hist, timeline}})
}
