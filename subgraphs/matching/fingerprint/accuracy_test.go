package fingerprint

import (
	"encoding/json"
	"fmt"
	"image"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/parallel"
	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
)

// The accuracy benchmark. By default it runs on a sample (every 8th line as a
// query, 2 photos per line and level; all 224 lines stay evidence: about 20
// seconds) and checks floors that catch regressions. The whole benchmark, with
// its report, takes minutes:
//
//	VITOLA_BENCH_ACCURACY=1 go test -run TestAccuracy -v -timeout 60m ./subgraphs/matching/fingerprint/
//
// Evidence: one fingerprint per demo line, from a clean 800-px rendering
// photographed in studio conditions (bandart.Studio: on a cigar, frontal,
// plain background, no noise), with its Label; VITOLA_BENCH_EVIDENCE=flat
// uses the flat rendering itself (Options.Flat). Queries: VITOLA_BENCH_PHOTOS (default 8)
// synthetic photos per line and level (bandart.Photo, Mild and Strong).
// VITOLA_BENCH_STRIDE=n uses every n-th line as a query (all 224 stay
// evidence). VITOLA_BENCH_OCR=1 also runs tesseract (if installed) on queries
// and evidence and reports both with and without the OCR text.

type benchLine struct{ brand, line string }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

type query struct {
	line   int
	level  bandart.Level
	photo  int
	fp     *Fingerprint
	locErr float64
}

// truthBox turns a photo's truth into a box (source pixels).
func truthBox(tr bandart.Truth) box {
	c := tr.Corners
	cx := (c[0][0] + c[1][0] + c[2][0] + c[3][0]) / 4
	cy := (c[0][1] + c[1][1] + c[2][1] + c[3][1]) / 4
	w := (math.Hypot(c[1][0]-c[0][0], c[1][1]-c[0][1]) + math.Hypot(c[2][0]-c[3][0], c[2][1]-c[3][1])) / 2
	h := (math.Hypot(c[3][0]-c[0][0], c[3][1]-c[0][1]) + math.Hypot(c[2][0]-c[1][0], c[2][1]-c[1][1])) / 2
	return box{cx: cx, cy: cy, angle: tr.Angle * math.Pi / 180, halfW: w / 2, halfH: h / 2, conf: 1}
}

// locError is the mean distance of the found corners from the true ones,
// over the true band's width.
func locError(fp *Fingerprint, tr bandart.Truth, w, h int) float64 {
	c := tr.Corners
	bw := math.Hypot(c[1][0]-c[0][0], c[1][1]-c[0][1])
	var s float64
	for i := range 4 {
		tx, ty := math.Max(0, math.Min(float64(w), c[i][0])), math.Max(0, math.Min(float64(h), c[i][1]))
		s += math.Hypot(fp.Band.Corners[i][0]*float64(w)-tx, fp.Band.Corners[i][1]*float64(h)-ty)
	}
	return s / 4 / bw
}

func TestAccuracy(t *testing.T) {
	full := os.Getenv("VITOLA_BENCH_ACCURACY") != ""
	sampleStride, samplePhotos := 8, 2
	if full {
		sampleStride, samplePhotos = 1, 8
	}
	facts, err := catalogdemo.LoadFacts()
	if err != nil {
		t.Fatal(err)
	}
	lines := make([]benchLine, len(facts.Lines))
	for i, l := range facts.Lines {
		lines[i] = benchLine{l.Brand, l.Name}
	}
	photos := envInt("VITOLA_BENCH_PHOTOS", samplePhotos)
	locateMode = envInt("VITOLA_BENCH_LOCATE", 0) % 3
	if r := strings.Split(os.Getenv("VITOLA_BENCH_RULE"), ","); len(r) == 2 {
		MatchThreshold, _ = strconv.ParseFloat(r[0], 64)
		MatchMargin, _ = strconv.ParseFloat(r[1], 64)
	}
	if ws := strings.Split(os.Getenv("VITOLA_BENCH_WEIGHTS"), ","); len(ws) == 5 {
		ptrs := []*float64{&weightVector, &weightColor, &weightLayout, &weightHash, &weightText}
		for i, w := range ws {
			if v, err := strconv.ParseFloat(w, 64); err == nil {
				*ptrs[i] = v
			}
		}
	}
	if v, err := strconv.ParseFloat(os.Getenv("VITOLA_BENCH_CIGARQ"), 64); err == nil {
		cigarQuality = v
	}
	stride := envInt("VITOLA_BENCH_STRIDE", sampleStride)
	var ocr OCR
	if os.Getenv("VITOLA_BENCH_OCR") != "" && TesseractAvailable() {
		ocr = Tesseract{}
	}

	// VITOLA_BENCH_CACHE=file keeps the fingerprints (JSON): a later run
	// with the same file only re-scores.
	cachePath := os.Getenv("VITOLA_BENCH_CACHE")
	var cache benchCache
	loaded := false
	if cachePath != "" {
		if b, err := os.ReadFile(cachePath); err == nil {
			if err := json.Unmarshal(b, &cache); err != nil {
				t.Fatal(err)
			}
			loaded = true
		}
	}
	evidence := make([]*Fingerprint, len(lines))
	var qs []*query
	if loaded {
		evidence = cache.Evidence
		for _, c := range cache.Queries {
			qs = append(qs, &query{line: c.Line, level: c.Level, photo: c.Photo, locErr: c.LocErr, fp: c.FP})
			photos = max(photos, c.Photo+1)
		}
		if len(qs) > 0 && qs[0].fp.Typography.OCR != "unavailable" {
			ocr = Tesseract{}
		}
		t.Logf("loaded %d evidence and %d query fingerprints from %s", len(evidence), len(qs), cachePath)
	} else {
		qs = computeBench(t, lines, evidence, ocr, stride, photos)
		if cachePath != "" {
			cache.Evidence = evidence
			for _, q := range qs {
				cache.Queries = append(cache.Queries, cachedQuery{q.line, q.level, q.photo, q.locErr, q.fp})
			}
			b, _ := json.Marshal(cache)
			if err := os.WriteFile(cachePath, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	single := reportBench(t, lines, evidence, qs, photos, ocr != nil)
	// Floors on single photos without OCR, below the measured figures (README)
	// with room for the sample's size (56 photos a level): a regression fails
	// here. The whole benchmark is what meets the targets (90% mild, 80%
	// strong); the sample, at 83.9% strong, has too few photos to hold 80%.
	for _, f := range []struct {
		level             bandart.Level
		top1, wrongAtMost float64
	}{
		{bandart.Mild, 0.90, 0.02},
		{bandart.Strong, 0.70, 0.04},
	} {
		got := single[f.level]
		if got.n == 0 {
			t.Fatalf("no %v queries", f.level)
		}
		top1, wrong := float64(got.top1)/float64(got.n), float64(got.wrong)/float64(got.n)
		t.Logf("%v single photos: line top-1 %.1f%% (floor %.0f%%), wrong matched %.1f%% (at most %.0f%%)", f.level, 100*top1, 100*f.top1, 100*wrong, 100*f.wrongAtMost)
		if top1 < f.top1 || wrong > f.wrongAtMost {
			t.Errorf("%v single photos: line top-1 %.1f%%, wrong matched %.1f%%: below the floor", f.level, 100*top1, 100*wrong)
		}
	}
}

// singleStats counts single photos of one level: how many there were, how
// many found their line first, and how many the exported rule matched wrongly.
type singleStats struct{ n, top1, wrong int }

type cachedQuery struct {
	Line   int
	Level  bandart.Level
	Photo  int
	LocErr float64
	FP     *Fingerprint
}

type benchCache struct {
	Evidence []*Fingerprint
	Queries  []cachedQuery
}

func computeBench(t *testing.T, lines []benchLine, evidence []*Fingerprint, ocr OCR, stride, photos int) []*query {
	start := time.Now()
	parallel.Each(len(lines), func(i int) {
		img := bandart.Render(bandart.DesignFor(lines[i].brand, lines[i].line), 800)
		opts := Options{Flat: true, OCR: ocr}
		var src image.Image = img
		if os.Getenv("VITOLA_BENCH_EVIDENCE") != "flat" {
			src, opts.Flat = bandart.StudioPhoto(lines[i].brand, lines[i].line), false
		}
		fp, err := NewEvidence(src, Label{Brand: lines[i].brand, Line: lines[i].line}, opts)
		if err != nil {
			panic(err)
		}
		evidence[i] = fp
	})
	t.Logf("evidence: %d fingerprints in %v", len(evidence), time.Since(start).Round(time.Millisecond))

	var qs []*query
	for li := 0; li < len(lines); li += stride {
		for _, lv := range []bandart.Level{bandart.Mild, bandart.Strong} {
			for k := range photos {
				qs = append(qs, &query{line: li, level: lv, photo: k})
			}
		}
	}
	t0 := time.Now()
	parallel.Each(len(qs), func(i int) {
		q := qs[i]
		band := bandart.Render(bandart.DesignFor(lines[q.line].brand, lines[q.line].line), 800)
		img, truth := bandart.PhotoWithTruth(band, q.level, int64(q.line*1000+q.photo))
		var given *box
		if os.Getenv("VITOLA_BENCH_TRUTH") != "" {
			tb := truthBox(truth)
			given = &tb
		}
		fp, err := compute(img, Options{OCR: ocr}, given, false)
		q.locErr = locError(fp, truth, img.Rect.Dx(), img.Rect.Dy())
		if err != nil {
			panic(err)
		}
		q.fp = fp
	})
	t.Logf("queries: %d photos in %v", len(qs), time.Since(t0).Round(time.Millisecond))
	return qs
}

func reportBench(t *testing.T, lines []benchLine, evidence []*Fingerprint, qs []*query, photos int, withOCR bool) map[bandart.Level]singleStats {
	variants := []bool{false}
	if withOCR {
		variants = []bool{false, true}
	}
	var single map[bandart.Level]singleStats
	for _, withText := range variants {
		if s := report(t, lines, evidence, qs, photos, withText); !withText {
			single = s
		}
	}
	if withOCR {
		reportReading(t, lines, evidence, qs)
	}
	return single
}

// reportReading says how often OCR read the brand's name (its first word)
// on the evidence's studio photos and on the queries of each level.
func reportReading(t *testing.T, lines []benchLine, evidence []*Fingerprint, qs []*query) {
	read := func(fp *Fingerprint, line int) bool {
		return strings.Contains(normText(fp.Typography.Text), normText(strings.Fields(lines[line].brand)[0]))
	}
	queried := map[int]bool{}
	counts := map[bandart.Level][2]int{}
	for _, q := range qs {
		queried[q.line] = true
		c := counts[q.level]
		if read(q.fp, q.line) {
			c[0]++
		}
		c[1]++
		counts[q.level] = c
	}
	for i, e := range evidence {
		if queried[i] {
			c := counts[bandart.Studio]
			if read(e, i) {
				c[0]++
			}
			c[1]++
			counts[bandart.Studio] = c
		}
	}
	for _, lv := range []bandart.Level{bandart.Studio, bandart.Mild, bandart.Strong} {
		c := counts[lv]
		t.Logf("OCR read the brand's name on %d of %d %v photos (%s)", c[0], c[1], lv, pct(c[0], c[1]))
	}
}

// scoresFor compares a query with every evidence fingerprint.
func scoresFor(q *Fingerprint, evidence []*Fingerprint, withText bool) []float64 {
	qq := *q
	if !withText {
		qq.Typography.Text = ""
	}
	ev := evidence
	out := make([]float64, len(ev))
	for i, e := range ev {
		ee := *e
		if !withText {
			ee.Typography.Text = ""
			ee.Label = nil
		}
		out[i] = Similarity(&qq, &ee)
	}
	return out
}

type outcome struct {
	lineTop1, lineTop5, brandTop1, brandTop5 bool
	top, margin                              float64
}

func judge(scores []float64, truth int, lines []benchLine) outcome {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	var o outcome
	o.lineTop1 = idx[0] == truth
	for _, i := range idx[:5] {
		o.lineTop5 = o.lineTop5 || i == truth
	}
	o.top, o.margin = scores[idx[0]], scores[idx[0]]-scores[idx[1]]
	// Brands ranked by their best line.
	var brands []string
	seen := map[string]bool{}
	for _, i := range idx {
		if b := lines[i].brand; !seen[b] {
			seen[b] = true
			brands = append(brands, b)
		}
	}
	tb := lines[truth].brand
	o.brandTop1 = brands[0] == tb
	for _, b := range brands[:5] {
		o.brandTop5 = o.brandTop5 || b == tb
	}
	return o
}

// Decision rule: a query is "matched" to its top line when the top score is
// at least T and leads the second line by at least M.
func matched(o outcome, T, M float64) bool { return o.top >= T && o.margin >= M }

// wrongTarget is the wrong-match rate calibration allows on its half of the
// photos (below 2%, to leave slack for the held-out half).
const wrongTarget = 0.015

// calibrate picks (T, M) maximising the matched rate with wrong matches at
// most wrongTarget of the queries of every group (level).
func calibrate(groups [][]outcome) (T, M float64) {
	bestRate := -1.0
	for t := 0.30; t <= 0.95; t += 0.01 {
		for m := 0.0; m <= 0.15; m += 0.0025 {
			ok, fine := 0, true
			for _, g := range groups {
				wrong := 0
				for _, o := range g {
					if matched(o, t, m) {
						if o.lineTop1 {
							ok++
						} else {
							wrong++
						}
					}
				}
				fine = fine && float64(wrong) <= wrongTarget*float64(len(g))
			}
			if fine && float64(ok) > bestRate {
				bestRate, T, M = float64(ok), t, m
			}
		}
	}
	return T, M
}

func pct(n, d int) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%5.1f%%", 100*float64(n)/float64(d))
}

func report(t *testing.T, lines []benchLine, evidence []*Fingerprint, qs []*query, photos int, withText bool) map[bandart.Level]singleStats {
	scores := make([][]float64, len(qs))
	parallel.Each(len(qs), func(i int) { scores[i] = scoresFor(qs[i].fp, evidence, withText) })
	outs := make([]outcome, len(qs))
	for i, q := range qs {
		outs[i] = judge(scores[i], q.line, lines)
	}
	if os.Getenv("VITOLA_BENCH_KINDS") != "" {
		// Line top-1 by each kind of evidence alone.
		kinds := []string{"vector", "color", "layout", "hash", "text"}
		var b strings.Builder
		for _, lv := range []bandart.Level{bandart.Mild, bandart.Strong} {
			fmt.Fprintf(&b, "%v:", lv)
			for k, name := range kinds {
				n, ok := 0, 0
				for _, q := range qs {
					if q.level != lv {
						continue
					}
					n++
					best, bi := -1.0, -1
					for ei, e := range evidence {
						sc := Compare(q.fp, e)
						v := [...]float64{sc.Vector, sc.Color, sc.Layout, sc.Hash, sc.Text}[k]
						if v > best {
							best, bi = v, ei
						}
					}
					if bi == q.line {
						ok++
					}
				}
				fmt.Fprintf(&b, " %s %s", name, pct(ok, n))
			}
			b.WriteString("\n")
		}
		t.Log(b.String())
	}
	// Calibrate on even photos, evaluate on odd ones (and report all).
	calib := make([][]outcome, 2)
	for i, q := range qs {
		if q.photo%2 == 0 {
			g := 0
			if q.level == bandart.Strong {
				g = 1
			}
			calib[g] = append(calib[g], outs[i])
		}
	}
	T, M := calibrate(calib)
	mode := "without OCR"
	if withText {
		mode = "with OCR"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n=== %s: %d queries, decision rule top >= %.2f and margin >= %.4f (calibrated on even photos) ===\n", mode, len(qs), T, M)
	fmt.Fprintf(&b, "%-7s %-6s %7s %7s %7s %7s %8s %8s %8s\n", "level", "images", "line@1", "line@5", "brand@1", "brand@5", "matched", "wrong", "(odd)wrg")
	for _, lv := range []bandart.Level{bandart.Mild, bandart.Strong} {
		for _, n := range []int{1, 2, 4, 8} {
			if n > photos {
				continue
			}
			var c struct{ n, l1, l5, b1, b5, m, w, oddN, oddW int }
			// Groups of n consecutive photos of one line; scores averaged.
			byLine := map[int][]int{}
			var order []int
			for i, q := range qs {
				if q.level != lv {
					continue
				}
				if _, ok := byLine[q.line]; !ok {
					order = append(order, q.line)
				}
				byLine[q.line] = append(byLine[q.line], i)
			}
			for _, li := range order {
				idx := byLine[li]
				for g := 0; g+n <= len(idx); g += n {
					avg := make([]float64, len(evidence))
					odd := true
					for _, i := range idx[g : g+n] {
						for k, s := range scores[i] {
							avg[k] += s / float64(n)
						}
						odd = odd && qs[i].photo%2 == 1
					}
					o := judge(avg, li, lines)
					c.n++
					if o.lineTop1 {
						c.l1++
					}
					if o.lineTop5 {
						c.l5++
					}
					if o.brandTop1 {
						c.b1++
					}
					if o.brandTop5 {
						c.b5++
					}
					if matched(o, T, M) {
						c.m++
						if !o.lineTop1 {
							c.w++
						}
					}
					if n == 1 && odd {
						c.oddN++
						if matched(o, T, M) && !o.lineTop1 {
							c.oddW++
						}
					}
				}
			}
			fmt.Fprintf(&b, "%-7v %-6d %7s %7s %7s %7s %8s %8s %8s\n", lv, n, pct(c.l1, c.n), pct(c.l5, c.n), pct(c.b1, c.n), pct(c.b5, c.n), pct(c.m, c.n), pct(c.w, c.n), pct(c.oddW, c.oddN))
		}
	}
	// The exported rule, on single photos.
	single := map[bandart.Level]singleStats{}
	for _, lv := range []bandart.Level{bandart.Mild, bandart.Strong} {
		var n, m, wr, top1 int
		for i, q := range qs {
			if q.level != lv {
				continue
			}
			n++
			if outs[i].lineTop1 {
				top1++
			}
			if Matched(outs[i].top, outs[i].top-outs[i].margin) {
				m++
				if !outs[i].lineTop1 {
					wr++
				}
			}
		}
		fmt.Fprintf(&b, "exported rule (T=%.2f, M=%.4f), %v single photos: matched %s, wrong %s\n", MatchThreshold, MatchMargin, lv, pct(m, n), pct(wr, n))
		single[lv] = singleStats{n: n, top1: top1, wrong: wr}
	}
	// Where single photos are lost: line top-1 by how well the band was
	// located (mean corner error over the band's width).
	buckets := []struct {
		name   string
		lo, hi float64
	}{{"under 5%", 0, 0.05}, {"5-10%", 0.05, 0.1}, {"10-25%", 0.1, 0.25}, {"25% or more", 0.25, math.Inf(1)}}
	for _, lv := range []bandart.Level{bandart.Mild, bandart.Strong} {
		fmt.Fprintf(&b, "%v single photos by location error:", lv)
		for _, bk := range buckets {
			var n, top1, all int
			for i, q := range qs {
				if q.level != lv {
					continue
				}
				all++
				if q.locErr >= bk.lo && q.locErr < bk.hi {
					n++
					if outs[i].lineTop1 {
						top1++
					}
				}
			}
			fmt.Fprintf(&b, " %s: %s of photos, line top-1 %s;", bk.name, pct(n, all), pct(top1, n))
		}
		b.WriteString("\n")
	}
	t.Log(b.String())
	return single
}
