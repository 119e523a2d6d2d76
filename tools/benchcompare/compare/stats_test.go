package compare_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/tools/benchcompare/compare"
)

var nan = math.NaN()

func TestSummarize(t *testing.T) {
	tests := []struct {
		name     string
		better   compare.Better
		old, new []float64
		oldMed   float64
		newMed   float64
		lo, hi   float64
		rounds   int
		verdict  compare.Verdict
	}{
		{name: "latency within the noise", better: compare.LowerIsBetter, old: []float64{10, 12, 11}, new: []float64{11, 11, 12},
			oldMed: 11, newMed: 11, lo: 11.0 / 12, hi: 1.1, rounds: 3, verdict: compare.Unchanged},
		{name: "latency worse every round", better: compare.LowerIsBetter, old: []float64{10, 12, 11, 10}, new: []float64{11, 13, 12, 12},
			oldMed: 10.5, newMed: 12, lo: 13.0 / 12, hi: 1.2, rounds: 4, verdict: compare.Regression},
		{name: "latency better every round", better: compare.LowerIsBetter, old: []float64{10, 10, 10}, new: []float64{5, 6, 9},
			oldMed: 10, newMed: 6, lo: 0.5, hi: 0.9, rounds: 3, verdict: compare.Improved},
		{name: "throughput lower every round", better: compare.HigherIsBetter, old: []float64{100, 110, 90}, new: []float64{90, 100, 80},
			oldMed: 100, newMed: 90, lo: 80.0 / 90, hi: 100.0 / 110, rounds: 3, verdict: compare.Regression},
		{name: "throughput higher every round", better: compare.HigherIsBetter, old: []float64{100, 110, 90}, new: []float64{200, 120, 97},
			oldMed: 100, newMed: 120, lo: 97.0 / 90, hi: 2, rounds: 3, verdict: compare.Improved},
		{name: "worse every round, one round by less than the margin", better: compare.HigherIsBetter, old: []float64{100, 100, 100, 100, 100}, new: []float64{90, 91, 93, 96, 90},
			oldMed: 100, newMed: 91, lo: 0.9, hi: 0.96, rounds: 5, verdict: compare.Unchanged},
		{name: "a round either side missed is left out", better: compare.LowerIsBetter, old: []float64{10, nan, 10, 10}, new: []float64{20, 1, nan, 20},
			oldMed: 10, newMed: 20, lo: 2, hi: 2, rounds: 2, verdict: compare.TooFew},
		{name: "two rounds give no verdict", better: compare.LowerIsBetter, old: []float64{1, 1}, new: []float64{2, 2},
			oldMed: 1, newMed: 2, lo: 2, hi: 2, rounds: 2, verdict: compare.TooFew},
		{name: "one side only", better: compare.LowerIsBetter, old: []float64{nan, nan, nan}, new: []float64{3, 4, 5},
			oldMed: nan, newMed: 4, lo: nan, hi: nan, rounds: 0, verdict: compare.Unchanged},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := compare.Summarize(compare.Metric{Bench: "b", Name: "m", Unit: "ms", Better: tc.better, Old: tc.old, New: tc.new})
			if !same(r.OldMedian, tc.oldMed) || !same(r.NewMedian, tc.newMed) || !same(r.SpreadLo, tc.lo) || !same(r.SpreadHi, tc.hi) ||
				r.Rounds != tc.rounds || r.Verdict != tc.verdict || !same(r.Ratio, tc.newMed/tc.oldMed) {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

func same(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-9
}

func TestPercentile(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct{ p, want float64 }{{50, 50}, {99, 99}, {100, 100}, {0, 1}, {0.5, 1}} {
		if got := compare.Percentile(lat, tc.p); got != tc.want {
			t.Errorf("p%v = %v ms, want %v", tc.p, got, tc.want)
		}
	}
	if got := compare.Percentile([]time.Duration{7 * time.Millisecond}, 99); got != 7 {
		t.Errorf("p99 of one = %v", got)
	}
	if got := compare.Percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("p50 of none = %v", got)
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command name holding a space and a parenthesis: fields count from
	// the last ')'. utime 250, stime 50, cutime 30, cstime 20 ticks: 3.5 s.
	stat := "4242 (vitola (x) y) S 1 4242 4242 0 -1 4194304 1000 0 0 0 250 50 30 20 20 0 12 0 100 1000000 5000 18446744073709551615"
	got, err := compare.ParseStatCPU(stat)
	if err != nil || got != 3500*time.Millisecond {
		t.Fatalf("got %s, %v", got, err)
	}
	for _, bad := range []string{"", "4242 vitola S 1", "4242 (vitola) S 1 2 3", "4242 (vitola) S 1 4242 4242 0 -1 4194304 1000 0 0 0 x 50 30 20"} {
		if _, err := compare.ParseStatCPU(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestRedactArgs(t *testing.T) {
	got := compare.RedactArgs([]string{"credits", "add", "--key", "vk_secret", "--amount", "5", "--database-url=postgres://u:p@h/db"})
	for _, a := range got {
		if strings.Contains(a, "vk_secret") || strings.Contains(a, "u:p") {
			t.Fatalf("a secret in %q", got)
		}
	}
	if got[5] != "5" || got[6] != "--database-url=…" {
		t.Fatalf("other values changed: %q", got)
	}
}
