package load

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteHTML writes rep as one self-contained HTML page: the text report,
// and SVG plots drawn inline (the latency histogram; for a run of 3 s or
// more, calls per second and p99 over time, one above the other on one time
// axis). It loads nothing: no script, style sheet, font or
// image from anywhere, so it opens offline and can be attached to a CI run.
func WriteHTML(w io.Writer, rep *Report) error {
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		return err
	}
	hist, err := svgPlot(histogramPlot(rep))
	if err != nil {
		return err
	}
	plots := []template.HTML{hist}
	timeline, err := timelineSVG(rep)
	if err != nil {
		return err
	}
	if timeline != "" {
		plots = append(plots, timeline)
	}
	return page.Execute(w, map[string]any{
		"Title": fmt.Sprintf("conduit load: %d calls, %.1f calls/s, p99 %s", rep.Calls, rep.Throughput, rep.Latency.P99),
		"Text":  text.String(),
		"Plots": plots,
		"Short": timeline == "",
	})
}

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
pre { background: #f4f4f4; padding: 1em; overflow-x: auto; }
figure { margin: 1em 0; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<pre>{{.Text}}</pre>
{{range .Plots}}<figure>{{.}}</figure>
{{end}}{{if .Short}}<p>The run is too short for a plot over time: calls per second and p99 are plotted for runs of 3 seconds or more.</p>
{{end}}</body>
</html>
`))

func ms(m Millis) float64 { return float64(m) / float64(time.Millisecond) }

// histogramPlot draws the latency distribution: calls per bucket against
// latency on a log scale.
func histogramPlot(rep *Report) *plot.Plot {
	p := plot.New()
	p.Title.Text = "Latency distribution, from the send time"
	if rep.Shape.Rate > 0 {
		p.Title.Text = "Latency distribution, from the intended send time"
	}
	p.X.Label.Text = "latency (ms, log scale)"
	p.Y.Label.Text = "calls"
	if len(rep.Histogram) == 0 {
		return p
	}
	bars := &plotter.Histogram{FillColor: color.Gray{Y: 190}, LineStyle: plotter.DefaultLineStyle}
	for _, b := range rep.Histogram {
		bars.Bins = append(bars.Bins, plotter.HistogramBin{Min: ms(b.From), Max: ms(b.UpTo), Weight: float64(b.Count)})
	}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Add(bars, plotter.NewGrid())
	return p
}

// minTimeline is the shortest run drawn over time: under it, a plot per
// second is a dot or two that says nothing.
const minTimeline = 3 * time.Second

// timelineSVG draws calls per second and p99 per second, one above the
// other on one time axis (plot.Align lines their plot areas up), or ""
// for a run under minTimeline.
func timelineSVG(rep *Report) (template.HTML, error) {
	elapsed := time.Duration(rep.Elapsed).Seconds()
	if time.Duration(rep.Elapsed) < minTimeline {
		return "", nil
	}
	axis := "seconds since the start"
	if rep.Shape.Warmup > 0 {
		axis = "seconds since the warm-up"
	}
	// The last, partial second is not a dive towards zero (callRate).
	rate := timelinePlot(rep, "Calls per second", "calls/s", callRate(elapsed))
	p99 := timelinePlot(rep, "p99 latency per second", "p99 (ms)", func(s Second) float64 { return ms(s.P99) })
	for _, p := range []*plot.Plot{rate, p99} {
		p.X.Label.Text = axis
		p.X.Min, p.X.Max = 0, elapsed
	}
	c := vgsvg.NewWith(vgsvg.UseWH(18*vg.Centimeter, 18*vg.Centimeter), vgsvg.EmbedFonts(false))
	dc := draw.New(c)
	canvases := plot.Align([][]*plot.Plot{{rate}, {p99}}, draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Centimeter}, dc)
	rate.Draw(canvases[0][0])
	p99.Draw(canvases[1][0])
	return svgOf(c)
}

// callRate is the calls per second of a second of a run of elapsed
// seconds: its calls over the part of it the run covered.
func callRate(elapsed float64) func(Second) float64 {
	return func(s Second) float64 { return float64(s.Calls) / min(1, elapsed-float64(s.At)) }
}

// timelinePlot draws one value per second of the measured phase, at the
// middle of each second.
func timelinePlot(rep *Report, title, ylabel string, value func(Second) float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	if pts := timelinePoints(rep, value); len(pts) > 0 {
		addLine(p, pts)
	}
	p.Y.Min = 0
	return p
}

// timelinePoints are the points of a plot over time: value of each second
// that saw calls, at the middle of the second.
func timelinePoints(rep *Report, value func(Second) float64) plotter.XYs {
	pts := make(plotter.XYs, 0, len(rep.Timeline))
	for _, s := range rep.Timeline {
		if s.Calls > 0 {
			pts = append(pts, plotter.XY{X: float64(s.At) + 0.5, Y: value(s)})
		}
	}
	return pts
}

func addLine(p *plot.Plot, pts plotter.XYs) {
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return // NaN or Inf: nothing worth drawing
	}
	points.Radius = vg.Points(2)
	p.Add(line, points, plotter.NewGrid())
}

// svgPlot renders p as an inline <svg> element.
func svgPlot(p *plot.Plot) (template.HTML, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(18*vg.Centimeter, 9*vg.Centimeter), vgsvg.EmbedFonts(false))
	p.Draw(draw.New(c))
	return svgOf(c)
}

// svgOf is c as an inline <svg> element: the fonts are named, not
// embedded or linked, so the browser's own sans-serif draws the text.
func svgOf(c *vgsvg.Canvas) (template.HTML, error) {
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	// Drop the XML prolog: inside HTML the <svg> element stands alone.
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	return template.HTML(s), nil // our own SVG, from gonum's writer
}
