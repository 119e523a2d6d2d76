package compare

import (
	"math"
	"slices"
	"time"
)

// Better says which way a metric improves.
type Better int

const (
	LowerIsBetter Better = iota
	HigherIsBetter
)

// Metric is one measured quantity of a benchmark: a value per round on each
// side. Old[i] and New[i] come from the same round, measured one after the
// other; a round one side could not measure is NaN there.
type Metric struct {
	Bench, Name, Unit string
	Better            Better
	Old, New          []float64
	// Note says why the metric has no figures (a side lacks the route, its
	// setup failed): the row shows it instead.
	Note string
}

// Row is a metric summarized for the table.
type Row struct {
	Bench, Name, Unit  string
	OldMedian          float64
	NewMedian          float64
	Ratio              float64 // NewMedian / OldMedian
	SpreadLo, SpreadHi float64 // the least and greatest per-round ratio
	Rounds             int     // rounds both sides measured
	Verdict            Verdict
	Note               string
}

// Verdict is what a row says about the change.
type Verdict string

const (
	Unchanged  Verdict = ""           // the per-round ratios straddle 1: within the noise
	Regression Verdict = "REGRESSION" // every round says worse
	Improved   Verdict = "better"     // every round says better
	TooFew     Verdict = "-"          // fewer than MinVerdictRounds rounds
)

// MinVerdictRounds is the fewest rounds a verdict is given on.
const MinVerdictRounds = 3

// MinChange is how far from 1 every round's ratio must be for a verdict. On
// the same side of 1 alone, noise would pass for a change in every round with
// probability 2^(1-n) (6% at 5 rounds: one false verdict a run among twenty
// metrics), and two processes of one binary can differ by a few percent for
// a whole run on a shared machine (the same binary on both sides measured
// join's CPU per request 0.92-0.99 new/old, round by round, at load 16 on 2
// cores): a margin leaves that out.
const MinChange = 0.05

// Summarize takes the medians of each side over the rounds both measured,
// their ratio, and the spread of the per-round ratios. A regression is a
// change beyond the spread: every round's ratio worse than 1 by more than
// MinChange, so the rounds' own variation (the machine's noise between old's
// and new's turns) cannot explain it.
func Summarize(m Metric) Row {
	r := Row{Bench: m.Bench, Name: m.Name, Unit: m.Unit, Note: m.Note}
	var olds, news, ratios []float64
	for i := range min(len(m.Old), len(m.New)) {
		o, n := m.Old[i], m.New[i]
		if math.IsNaN(o) || math.IsNaN(n) {
			continue
		}
		olds, news = append(olds, o), append(news, n)
		if o != 0 {
			ratios = append(ratios, n/o)
		}
	}
	r.Rounds = len(olds)
	if r.Rounds == 0 {
		// One side alone (a route only new has): its figures, no ratio.
		r.OldMedian, r.NewMedian = median(finite(m.Old)), median(finite(m.New))
		r.Ratio, r.SpreadLo, r.SpreadHi = math.NaN(), math.NaN(), math.NaN()
		return r
	}
	r.OldMedian, r.NewMedian = median(olds), median(news)
	r.Ratio = math.NaN()
	if r.OldMedian != 0 {
		r.Ratio = r.NewMedian / r.OldMedian
	}
	r.SpreadLo, r.SpreadHi = math.NaN(), math.NaN()
	if len(ratios) > 0 {
		r.SpreadLo, r.SpreadHi = slices.Min(ratios), slices.Max(ratios)
	}
	switch {
	case len(ratios) < MinVerdictRounds:
		r.Verdict = TooFew
	case r.SpreadLo > 1+MinChange && m.Better == LowerIsBetter, r.SpreadHi < 1-MinChange && m.Better == HigherIsBetter:
		r.Verdict = Regression
	case r.SpreadHi < 1-MinChange && m.Better == LowerIsBetter, r.SpreadLo > 1+MinChange && m.Better == HigherIsBetter:
		r.Verdict = Improved
	}
	return r
}

// median of xs (NaN for none); xs is not changed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func finite(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

// percentile is the p-th percentile (0 to 100, nearest rank) of sorted
// latencies, in milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	i = max(0, min(len(sorted)-1, i))
	return float64(sorted[i]) / float64(time.Millisecond)
}
