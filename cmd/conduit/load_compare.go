package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/conduitmcp/conduit/load"
)

// `conduit load compare A.json B.json`: run B against run A.

func (a *app) loadCompareCommand() *cobra.Command {
	var maxRegression, html string
	c := &cobra.Command{
		Use:   "compare [flags] A.json B.json",
		Short: "Compare two runs of conduit load (their --report files)",
		Long: `Compare run B with run A (two --report files): for every call and for each
tool, calls per second, p50, p90, p99, p99.9 and the error rate side by side,
with B's change in percent, and whether the latency distributions differ: a
two-sample Kolmogorov-Smirnov test over the calls of each report's histogram
(gonum stat), significant at p < 0.05.

With --max-regression P%, exit 1 when B is worse than A by more than P percent:
a latency percentile higher (when the distributions differ significantly), an
error rate higher, or, when both runs are closed loop, a throughput lower (in
an open loop the rate sets the throughput). --html FILE draws both runs on the
same axes.

Exit status: 0 no regression beyond --max-regression (or none given); 1 a
regression; 2 usage error or a file that is not a report.`,
		Example: `  conduit load compare --max-regression 10% yesterday.json today.json
  conduit load compare --html diff.html a.json b.json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("want two reports: conduit load compare A.json B.json")
			}
			budget := math.NaN()
			if cmd.Flags().Changed("max-regression") {
				v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(maxRegression), "%"), 64)
				if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					return usagef("--max-regression %q: want a percentage, as 10%%", maxRegression)
				}
				budget = v
			}
			ra, err := readLoadReport(args[0])
			if err != nil {
				return err
			}
			rb, err := readLoadReport(args[1])
			if err != nil {
				return err
			}
			cmp := load.Compare(ra, rb)
			if html != "" {
				var b bytes.Buffer
				if err := load.WriteCompareHTML(&b, cmp); err != nil {
					return &exitError{code: exitFailed, err: fmt.Errorf("--html: %w", err)}
				}
				if err := os.WriteFile(html, b.Bytes(), 0o644); err != nil {
					return &exitError{code: exitFailed, err: fmt.Errorf("--html: %w", err)}
				}
			}
			if err := cmp.WriteText(a.std.out); err != nil {
				return err
			}
			if math.IsNaN(budget) {
				return nil
			}
			if regs := cmp.Regressions(budget); len(regs) > 0 {
				parts := make([]string, len(regs))
				for i, r := range regs {
					parts[i] = r.String()
				}
				return &exitError{code: exitFailed, err: fmt.Errorf("run B is worse than run A beyond --max-regression %g%%: %s", budget, strings.Join(parts, ", "))}
			}
			return nil
		},
	}
	c.Flags().StringVar(&maxRegression, "max-regression", "", "exit 1 when B is worse than A by more than `P%` (latency percentiles, error rate; throughput in closed loop)")
	c.Flags().StringVar(&html, "html", "", "write both runs' plots, on the same axes, as a self-contained page to `FILE`")
	return c
}

// readLoadReport reads a --report file.
func readLoadReport(path string) (*load.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	var rep load.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, usagef("%s: not a conduit load report: %v", path, err)
	}
	if rep.LatencyFrom == "" || rep.Outcomes == nil {
		return nil, usagef("%s: not a conduit load report (no latency_from, no outcomes)", path)
	}
	return &rep, nil
}
