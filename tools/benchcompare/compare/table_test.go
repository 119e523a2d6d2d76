package compare_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/vitolahq/vitola/tools/benchcompare/compare"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the code")

// The table as a closing note quotes it: a row per metric with both medians,
// the ratio, the per-round spread and the verdict; a side that could not run
// a benchmark says so in its rows.
func TestWriteTableGolden(t *testing.T) {
	metrics := []compare.Metric{
		{Bench: "join", Name: "throughput", Unit: "req/s", Better: compare.HigherIsBetter, Old: []float64{1520, 1490, 1610}, New: []float64{1498, 1530, 1580}},
		{Bench: "join", Name: "p99", Unit: "ms", Better: compare.LowerIsBetter, Old: []float64{41.2, 38.9, 44}, New: []float64{52.3, 47.1, 49.9}},
		{Bench: "search", Name: "server CPU", Unit: "µs/req", Better: compare.LowerIsBetter, Old: []float64{180, 171, 175}, New: []float64{120, 118, 131}},
		{Bench: "identify", Name: "p50", Unit: "ms", Better: compare.LowerIsBetter, Old: nans(3), New: []float64{310, 290, 0.52},
			Note: "old: setup: no `vitola credits add`"},
		{Bench: "import", Name: "full: vitola import", Unit: "s", Better: compare.LowerIsBetter, Old: []float64{79.6}, New: []float64{41.3}},
	}
	var rows []compare.Row
	for _, m := range metrics {
		rows = append(rows, compare.Summarize(m))
	}
	var out bytes.Buffer
	if err := compare.WriteTable(&out, "96e9e18", "tree 96e9e18+changes", rows); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "table.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestWriteTableGolden -update writes it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("the table differs from %s (-update rewrites it):\n%s", golden, out.String())
	}
}

func nans(n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = nan
	}
	return xs
}
