package load

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteHTML writes rep as one self-contained HTML page: the text report,
// and SVG plots drawn inline (the latency histogram, failed calls apart;
// for a run of 3 s or more, ok and failed calls per second, p99 over time
// and, when calls failed, the failures by kind over time, one above the
// other on one time axis, stages marked). It loads nothing: no script,
// style sheet, font or image from anywhere, so it opens offline and can be
// attached to a CI run. The series are downsampled to at most
// maxPlotPoints points, so a long run's page stays small.
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
		"Title": title(rep),
		"Text":  text.String(),
		"Plots": plots,
		"Short": timeline == "",
	})
}

// title is the page's title line: the failure rate first when calls
// failed.
func title(rep *Report) string {
	t := fmt.Sprintf("conduit load: %d calls, %.1f calls/s, p99 %s", rep.Calls, rep.Throughput, rep.Latency.P99)
	if rep.Failed > 0 {
		t = fmt.Sprintf("conduit load: %.1f%% failed (%d of %d calls), %.1f calls/s, p99 %s",
			100*float64(rep.Failed)/float64(rep.Calls), rep.Failed, rep.Calls, rep.Throughput, rep.Latency.P99)
	}
	return t
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
// latency on a log scale, the failed calls in red beside the ok ones.
func histogramPlot(rep *Report) *plot.Plot {
	p := plot.New()
	p.Title.Text = "Latency distribution, from the send time"
	if rep.Shape.Rate > 0 || rep.Shape.Mode == "open loop" {
		p.Title.Text = "Latency distribution, from the intended send time"
	}
	p.X.Label.Text = "latency (ms, log scale)"
	p.Y.Label.Text = "calls"
	if len(rep.Histogram) == 0 {
		return p
	}
	failed := map[Millis]int64{}
	for _, b := range rep.FailedHistogram {
		failed[b.From] = b.Count
	}
	ok := &plotter.Histogram{FillColor: color.Gray{Y: 190}, LineStyle: plotter.DefaultLineStyle}
	bad := &plotter.Histogram{FillColor: failedColor, LineStyle: plotter.DefaultLineStyle}
	for _, b := range rep.Histogram {
		if n := b.Count - failed[b.From]; n > 0 {
			ok.Bins = append(ok.Bins, plotter.HistogramBin{Min: ms(b.From), Max: ms(b.UpTo), Weight: float64(n)})
		}
	}
	for _, b := range rep.FailedHistogram {
		bad.Bins = append(bad.Bins, plotter.HistogramBin{Min: ms(b.From), Max: ms(b.UpTo), Weight: float64(b.Count)})
	}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	if len(ok.Bins) > 0 {
		p.Add(ok)
	}
	if len(bad.Bins) > 0 {
		p.Title.Text += ": ok and failed calls apart"
		p.Add(bad)
		p.Legend.Add("ok", ok)
		p.Legend.Add("failed", bad)
		p.Legend.Top = true
	}
	return p
}

var (
	failedColor = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	okColor     = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	stageColor  = color.RGBA{R: 120, G: 120, B: 120, A: 255}
	// kindColors draw the failure kinds, in order of their counts.
	kindColors = []color.Color{failedColor, color.RGBA{R: 255, G: 127, B: 14, A: 255}, color.RGBA{R: 148, G: 103, B: 189, A: 255},
		color.RGBA{R: 140, G: 86, B: 75, A: 255}, color.RGBA{R: 227, G: 119, B: 194, A: 255}, color.RGBA{R: 188, G: 189, B: 34, A: 255}}
)

// minTimeline is the shortest run drawn over time: under it, a plot per
// second is a dot or two that says nothing.
const minTimeline = 3 * time.Second

// maxPlotPoints bounds the points of a plot over time: a longer timeline
// is drawn in groups of entries.
const maxPlotPoints = 600

// window is a point of a plot over time: a group of timeline entries.
type window struct {
	from, to      float64 // seconds
	calls, errors int64
	p99           Millis // the highest of the group's
	failures      map[string]int64
}

// windows groups rep's timeline into at most maxPlotPoints windows.
func windows(rep *Report, elapsed float64) []window {
	step := max(rep.TimelineStep, 1)
	group := max(1, (len(rep.Timeline)+maxPlotPoints-1)/maxPlotPoints)
	var out []window
	for i := 0; i < len(rep.Timeline); i += group {
		w := window{from: float64(rep.Timeline[i].At)}
		for _, s := range rep.Timeline[i:min(i+group, len(rep.Timeline))] {
			w.to = min(float64(s.At+step), max(elapsed, float64(s.At)+0.001))
			w.calls += s.Calls
			w.errors += s.Errors
			w.p99 = max(w.p99, s.P99)
			for k, n := range s.Failures {
				if w.failures == nil {
					w.failures = map[string]int64{}
				}
				w.failures[k] += n
			}
		}
		out = append(out, w)
	}
	return out
}

// per is the per-second rate of n calls in w: over the part of it the run
// covered, so the last, partial window is not a dive towards zero.
func (w window) per(n int64) float64 { return float64(n) / max(w.to-w.from, 0.001) }

// timelineSVG draws, one above the other on one time axis (plot.Align
// lines their plot areas up), ok and failed calls per second, p99, and the
// failures by kind when calls failed; or "" for a run under minTimeline.
func timelineSVG(rep *Report) (template.HTML, error) {
	elapsed := time.Duration(rep.Elapsed).Seconds()
	if time.Duration(rep.Elapsed) < minTimeline {
		return "", nil
	}
	axis := "seconds since the start"
	if rep.Shape.Warmup > 0 {
		axis = "seconds since the warm-up"
	}
	per := "per second"
	if n := windowSeconds(rep); n > 1 {
		per = fmt.Sprintf("per %d s window", n)
	}
	ws := windows(rep, elapsed)
	rate := plot.New()
	rate.Title.Text = "Calls per second"
	rate.Y.Label.Text = "calls/s"
	if rep.Failed > 0 {
		rate.Title.Text = "Calls per second, ok and failed"
	}
	top := map[*plot.Plot]float64{}
	top[rate] = addSeries(rate, "ok", okColor, ws, func(w window) float64 { return w.per(w.calls - w.errors) })
	if rep.Failed > 0 {
		top[rate] = max(top[rate], addSeries(rate, "failed", failedColor, ws, func(w window) float64 { return w.per(w.errors) }))
	}
	top[rate] = max(top[rate], addTarget(rate, rep))
	p99 := plot.New()
	p99.Title.Text = "p99 latency " + per
	p99.Y.Label.Text = "p99 (ms)"
	top[p99] = addSeries(p99, "", okColor, ws, p99Value)
	rows := [][]*plot.Plot{{rate}, {p99}}
	if rep.Failed > 0 {
		kinds := plot.New()
		kinds.Title.Text = "Failures by kind, per second"
		kinds.Y.Label.Text = "failed calls/s"
		for i, k := range topKinds(rep, len(kindColors)) {
			top[kinds] = max(top[kinds], addSeries(kinds, k, kindColors[i], ws, func(w window) float64 { return w.per(w.failures[k]) }))
		}
		rows = append(rows, []*plot.Plot{kinds})
	}
	for _, r := range rows {
		p := r[0]
		p.X.Label.Text = axis
		p.X.Min, p.X.Max, p.Y.Min = 0, elapsed, 0
		if top[p] > 0 {
			p.Y.Max = top[p] * 1.2 // room for the legend and the stages' labels above the lines
		}
		p.Add(plotter.NewGrid())
		markStages(p, rep, top[p])
	}
	c := vgsvg.NewWith(vgsvg.UseWH(18*vg.Centimeter, vg.Length(len(rows))*9*vg.Centimeter), vgsvg.EmbedFonts(false))
	dc := draw.New(c)
	canvases := plot.Align(rows, draw.Tiles{Rows: len(rows), Cols: 1, PadY: vg.Centimeter}, dc)
	for i, r := range rows {
		r[0].Draw(canvases[i][0])
	}
	return svgOf(c)
}

// p99Value is a window's p99 in milliseconds, NaN (no point) when no
// call ended in it.
func p99Value(w window) float64 {
	if w.calls == 0 {
		return math.NaN()
	}
	return ms(w.p99)
}

// windowSeconds is the seconds a plotted point covers.
func windowSeconds(rep *Report) int {
	return max(rep.TimelineStep, 1) * max(1, (len(rep.Timeline)+maxPlotPoints-1)/maxPlotPoints)
}

// topKinds are the failure outcomes of the run, most frequent first.
func topKinds(rep *Report, n int) []string {
	var kinds []string
	for k, c := range rep.Outcomes {
		if k != OutcomeOK && c > 0 {
			kinds = append(kinds, k)
		}
	}
	slices.SortFunc(kinds, func(a, b string) int {
		return cmp.Or(cmp.Compare(rep.Outcomes[b], rep.Outcomes[a]), strings.Compare(a, b))
	})
	return kinds[:min(n, len(kinds))]
}

// addSeries adds a line of value over the windows (NaN: no point), named in the legend
// unless name is "", and returns its highest value.
func addSeries(p *plot.Plot, name string, c color.Color, ws []window, value func(window) float64) float64 {
	pts := make(plotter.XYs, 0, len(ws))
	top := 0.0
	for _, w := range ws {
		if v := value(w); !math.IsNaN(v) {
			pts = append(pts, plotter.XY{X: (w.from + w.to) / 2, Y: v})
			top = max(top, v)
		}
	}
	if len(pts) == 0 {
		return 0
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return 0 // NaN or Inf: nothing worth drawing
	}
	line.Color, points.Color = c, c
	points.Radius = vg.Points(2)
	if len(pts) > 60 {
		points.Radius = 0
	}
	p.Add(line, points)
	if name != "" {
		p.Legend.Add(name, line)
		p.Legend.Top = true
	}
	return top
}

// addTarget draws a ramp's target rate, dashed, and returns its peak.
func addTarget(p *plot.Plot, rep *Report) float64 {
	if len(rep.Stages) == 0 || rep.Stages[0].Unit != "calls/s" {
		return 0
	}
	var pts plotter.XYs
	top := 0.0
	for _, s := range rep.Stages {
		pts = append(pts, plotter.XY{X: s.From, Y: s.StartTarget}, plotter.XY{X: s.To, Y: s.Target})
		top = max(top, s.Target)
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		return 0
	}
	line.Color, line.Dashes = stageColor, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(line)
	p.Legend.Add("target", line)
	return top
}

// markStages draws a vertical line where each stage after the first
// starts, labelled with its number.
func markStages(p *plot.Plot, rep *Report, top float64) {
	for _, s := range rep.Stages {
		if s.From <= 0 {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: s.From, Y: 0}, {X: s.From, Y: top}})
		if err != nil {
			continue
		}
		l.Color, l.Dashes = stageColor, []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(l)
	}
	if len(rep.Stages) > 0 {
		var labels plotter.XYLabels
		for _, s := range rep.Stages {
			labels.XYs = append(labels.XYs, plotter.XY{X: max(s.From, 0), Y: top})
			labels.Labels = append(labels.Labels, fmt.Sprintf(" stage %d", s.Stage))
		}
		if l, err := plotter.NewLabels(labels); err == nil {
			p.Add(l)
		}
	}
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
