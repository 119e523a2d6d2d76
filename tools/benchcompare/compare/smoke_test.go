package compare_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/tools/benchcompare/compare"
)

// TestBenchCompareSmoke runs the whole comparison briefly, HEAD against the
// working tree: two builds, a small large catalog, one short round of every
// benchmark. It takes minutes (two builds of vitola), so it runs only with
// VITOLA_BENCH=1.
func TestBenchCompareSmoke(t *testing.T) {
	if os.Getenv("VITOLA_BENCH") != "1" {
		t.Skip("set VITOLA_BENCH=1 to build two vitolas and compare them briefly (minutes)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var stdout, progress bytes.Buffer
	err := compare.Run(ctx, []string{"-ref", "HEAD", "-rounds", "1", "-seconds", "0.3", "-scale", "2"}, func(string) string { return "" }, &stdout, &progress)
	t.Log(progress.String())
	t.Log(stdout.String())
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(stdout.String(), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !slices.Contains(compare.Benchmarks, f[0]) {
			continue
		}
		rows++
		// benchmark, metric words, old, new, ratio, spread, rounds, verdict
		if len(f) < 7 || f[len(f)-1] != "-" || f[len(f)-2] != "1" || f[len(f)-4] == "-" {
			t.Errorf("a row without both sides' figures: %q", line)
		}
	}
	if rows != 20 || strings.Contains(stdout.String(), "Not measured") {
		t.Fatalf("%d rows, want 20, every benchmark measured", rows)
	}
}
