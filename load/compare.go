package load

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"
)

// Comparison is run B against run A, overall and tool by tool.
type Comparison struct {
	A, B *Report
	// Rows are the overall row first, then each tool of either run by
	// name.
	Rows []ComparisonRow
}

// ComparisonRow compares one tool (Tool "" is every call).
type ComparisonRow struct {
	Tool       string
	A, B       ToolReport
	ErrorRateA float64
	ErrorRateB float64
	// KS is the two-sample Kolmogorov–Smirnov statistic of the two
	// latency distributions (gonum stat.KolmogorovSmirnov over the calls
	// of each histogram bucket), and P its asymptotic p-value: the chance
	// of a difference this large between two runs of the same
	// distribution. Significant is P < 0.05. Both need calls in A and B.
	KS, P       float64
	Significant bool
}

// significance is the p-value under which a difference is significant.
const significance = 0.05

// Compare compares run b with run a.
func Compare(a, b *Report) *Comparison {
	c := &Comparison{A: a, B: b}
	c.Rows = append(c.Rows, row("", overall(a), overall(b)))
	names := map[string]bool{}
	for n := range a.PerTool {
		names[n] = true
	}
	for n := range b.PerTool {
		names[n] = true
	}
	if len(names) > 1 {
		for _, n := range slices.Sorted(maps.Keys(names)) {
			c.Rows = append(c.Rows, row(n, a.PerTool[n], b.PerTool[n]))
		}
	}
	return c
}

// overall is a report's totals as a ToolReport.
func overall(r *Report) ToolReport {
	return ToolReport{Calls: r.Calls, OK: r.OK, Failed: r.Failed, Throughput: r.Throughput, Latency: r.Latency, Histogram: r.Histogram}
}

func row(tool string, a, b ToolReport) ComparisonRow {
	r := ComparisonRow{Tool: tool, A: a, B: b, ErrorRateA: errorRate(a), ErrorRateB: errorRate(b), P: math.NaN(), KS: math.NaN()}
	if a.Calls > 0 && b.Calls > 0 && len(a.Histogram) > 0 && len(b.Histogram) > 0 {
		x, xw, n := samples(a.Histogram)
		y, yw, m := samples(b.Histogram)
		r.KS = stat.KolmogorovSmirnov(x, xw, y, yw)
		r.P = kolmogorovP(math.Sqrt(n*m/(n+m)) * r.KS)
		r.Significant = r.P < significance
	}
	return r
}

func errorRate(t ToolReport) float64 {
	if t.Calls == 0 {
		return 0
	}
	return float64(t.Failed) / float64(t.Calls)
}

// samples are a histogram's calls, each bucket's at its geometric middle,
// weighted by its count, sorted; n is their number.
func samples(h []Bucket) (x, w []float64, n float64) {
	for _, b := range h {
		x = append(x, math.Sqrt(ms(b.From)*ms(b.UpTo)))
		w = append(w, float64(b.Count))
		n += float64(b.Count)
	}
	stat.SortWeighted(x, w)
	return x, w, n
}

// kolmogorovP is the Kolmogorov distribution's survival function at
// lambda: P(K > lambda) = 2 Σ (-1)^(k-1) exp(-2 k² lambda²).
func kolmogorovP(lambda float64) float64 {
	if lambda < 0.2 {
		return 1
	}
	p := 0.0
	for k := 1; k <= 100; k++ {
		term := 2 * math.Exp(-2*float64(k*k)*lambda*lambda)
		if k%2 == 0 {
			term = -term
		}
		p += term
		if math.Abs(term) < 1e-12 {
			break
		}
	}
	return min(max(p, 0), 1)
}

// change is b's change from a, in percent (NaN when a is 0: from nothing,
// any change is infinite, no change is 0).
func change(a, b float64) float64 {
	switch {
	case a == b:
		return 0
	case a == 0:
		return math.Inf(1)
	}
	return (b - a) / a * 100
}

// Regression is one way B is worse than A beyond a budget.
type Regression struct {
	Tool   string  // "" for every call
	What   string  // "p99", "error rate", "throughput"…
	Change float64 // in percent (+Inf from zero)
}

func (r Regression) String() string {
	of := "overall"
	if r.Tool != "" {
		of = r.Tool
	}
	return fmt.Sprintf("%s %s %s", of, r.What, pct(r.Change))
}

// Regressions are the ways B is worse than A by more than budget percent:
// a latency percentile (p50, p90, p99, p99.9) higher, when the rank test
// finds the distributions differ; an error rate higher; a throughput lower
// when both runs were closed loop (in an open loop the rate sets it).
func (c *Comparison) Regressions(budget float64) []Regression {
	var out []Regression
	closed := c.A.Shape.Mode == "closed loop" && c.B.Shape.Mode == "closed loop"
	for _, r := range c.Rows {
		if r.A.Calls == 0 || r.B.Calls == 0 {
			continue
		}
		if r.Significant {
			for _, q := range quantileNames {
				if ch := change(ms(q.of(r.A.Latency)), ms(q.of(r.B.Latency))); ch > budget {
					out = append(out, Regression{Tool: r.Tool, What: q.name, Change: ch})
				}
			}
		}
		if ch := change(r.ErrorRateA, r.ErrorRateB); ch > budget {
			out = append(out, Regression{Tool: r.Tool, What: "error rate", Change: ch})
		}
		if ch := change(r.A.Throughput, r.B.Throughput); closed && -ch > budget {
			out = append(out, Regression{Tool: r.Tool, What: "throughput", Change: ch})
		}
	}
	return out
}

var quantileNames = []struct {
	name string
	of   func(Percentiles) Millis
}{
	{"p50", func(p Percentiles) Millis { return p.P50 }},
	{"p90", func(p Percentiles) Millis { return p.P90 }},
	{"p99", func(p Percentiles) Millis { return p.P99 }},
	{"p99.9", func(p Percentiles) Millis { return p.P999 }},
}

// pct writes a change in percent: "+12.3%", "-4.0%", "0%", "new".
func pct(ch float64) string {
	switch {
	case math.IsInf(ch, 1):
		return "new"
	case ch == 0:
		return "0%"
	}
	return fmt.Sprintf("%+.1f%%", ch)
}

// WriteText prints the comparison as a table per row: A, B and the change.
func (c *Comparison) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "A: %s\nB: %s\n", describe(c.A), describe(c.B))
	for _, r := range c.Rows {
		name := "all calls"
		if r.Tool != "" {
			name = "tool " + r.Tool
		}
		fmt.Fprintf(&b, "\n%-14s %14s %14s %9s\n", name, "A", "B", "change")
		line := func(what, a, bb, ch string) { fmt.Fprintf(&b, "%-14s %14s %14s %9s\n", what, a, bb, ch) }
		line("calls", fmt.Sprint(r.A.Calls), fmt.Sprint(r.B.Calls), pct(change(float64(r.A.Calls), float64(r.B.Calls))))
		line("calls/s", fmt.Sprintf("%.1f", r.A.Throughput), fmt.Sprintf("%.1f", r.B.Throughput), pct(change(r.A.Throughput, r.B.Throughput)))
		for _, q := range quantileNames {
			a, bb := q.of(r.A.Latency), q.of(r.B.Latency)
			line(q.name, round(a), round(bb), pct(change(ms(a), ms(bb))))
		}
		line("error rate", fmt.Sprintf("%.2f%%", 100*r.ErrorRateA), fmt.Sprintf("%.2f%%", 100*r.ErrorRateB), pct(change(r.ErrorRateA, r.ErrorRateB)))
		switch {
		case math.IsNaN(r.P):
			b.WriteString("latency: no test (calls missing on one side)\n")
		case r.Significant:
			fmt.Fprintf(&b, "latency: the distributions differ (Kolmogorov-Smirnov D %.3f, p %.2g)\n", r.KS, r.P)
		default:
			fmt.Fprintf(&b, "latency: no significant difference (Kolmogorov-Smirnov D %.3f, p %.2g)\n", r.KS, r.P)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// round is a latency to 3 significant digits or so.
func round(m Millis) string {
	d := time.Duration(m)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// describe is a report's shape on one line.
func describe(r *Report) string {
	s := fmt.Sprintf("%d calls in %s, %s", r.Calls, time.Duration(r.Elapsed).Round(time.Millisecond), r.Shape.Mode)
	if r.Shape.Rate > 0 {
		s += fmt.Sprintf(" at %g calls/s", r.Shape.Rate)
	}
	if len(r.Stages) > 0 {
		s += fmt.Sprintf(", %d stages", len(r.Stages))
	}
	return s
}
