package compare

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteTable prints one row per metric: each side's median, the ratio
// new/old, the spread of the per-round ratios, and the verdict; then what the
// columns mean.
func WriteTable(w io.Writer, oldLabel, newLabel string, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "benchmark\tmetric\told %s\tnew %s\tnew/old\tspread\trounds\n", oldLabel, newLabel)
	for _, r := range rows {
		verdict := string(r.Verdict)
		if r.Note != "" {
			verdict = strings.TrimSpace(verdict + " " + r.Note)
		}
		spread := "-"
		if !math.IsNaN(r.SpreadLo) {
			spread = fmt.Sprintf("%.2f-%.2f", r.SpreadLo, r.SpreadHi)
		}
		ratio := "-"
		if !math.IsNaN(r.Ratio) {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		line := fmt.Sprintf("%s\t%s (%s)\t%s\t%s\t%s\t%s\t%d", r.Bench, r.Name, r.Unit,
			formatValue(r.OldMedian), formatValue(r.NewMedian), ratio, spread, r.Rounds)
		if verdict != "" {
			line += "\t" + verdict
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, `
old and new: the median over the rounds; new/old: their ratio; spread: the
least and greatest of the rounds' own ratios (in each round the sides take
turns, in slices of about a second for the load benchmarks, alternating
which goes first). Throughput is better higher, time and CPU lower.
%s: every round's ratio is more than %.0f%% on the worse side of 1, the
whole spread beyond the noise; %s: every round's on the better side;
blank: within the noise; %s: fewer than %d rounds, no verdict.
`, Regression, MinChange*100, Improved, TooFew, MinVerdictRounds)
	return err
}

// formatValue shows three significant digits, at least the units.
func formatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "-"
	case a >= 100 || v == 0:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
