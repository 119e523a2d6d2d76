package recognize_test

import (
	"bytes"
	"fmt"
	"image"
	_ "image/jpeg"
	"image/png"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/parallel"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/bandgen"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	"github.com/vitolahq/vitola/subgraphs/matching/identify"
	"github.com/vitolahq/vitola/subgraphs/matching/recognize"
)

// TestKeypointRule calibrates identify's decision on keypoints
// (identify.MatchInliers, BrandRatio, LineRatio, Sigmas) on held-out bands:
// photos that TestIdentifyAccuracy never shows. They are bandgen's brands of
// another seed (7, not 24; flat designs as evidence) and demo lines it does
// not photograph (from the 5th, every 7th; it takes from the 3rd), with
// other photo seeds, recognized among the demo evidence and those brands'.
// Each photo is decided with the package's rule and with looser ones; the
// test fails on a wrong match with the package's rule, and reports the
// loosest values that made none, which the package's must not be looser
// than. By default it runs on a sample (every 4th generated line, every
// 28th demo line, one photo a level, quick); VITOLA_BENCH_CALIBRATE=1 runs
// every generated line and every 7th demo line, two photos a level
// (VITOLA_BENCH_PHOTOS), and with tesseract the thorough profile too
// (a few minutes on two cores):
//
//	VITOLA_BENCH_CALIBRATE=1 go test ./subgraphs/matching/recognize -run TestKeypointRule -v -timeout 60m
func TestKeypointRule(t *testing.T) {
	full := os.Getenv("VITOLA_BENCH_CALIBRATE") != ""
	genStride, demoStride, photos := 4, 28, 1
	var ocr fingerprint.OCR
	if full {
		genStride, demoStride, photos = 1, 7, 2
		if n, err := strconv.Atoi(os.Getenv("VITOLA_BENCH_PHOTOS")); err == nil && n > 0 {
			photos = n
		}
		if fingerprint.TesseractAvailable() {
			ocr = fingerprint.Tesseract{}
		}
	}
	ev, cigars, recs := demoEvidence(t)
	lines := bandgen.Lines(bandgen.Catalog(7, 20))
	bands := make([]flatBand, len(lines))
	for i, l := range lines {
		bands[i] = flatBand{identify.Cigar{ID: fmt.Sprintf("cig_gen%03d", i), Brand: l.Brand, Name: l.Name}, func() image.Image { return l.Flat(800) }}
	}
	gen := flatEvidence(t, bands, ocr, cigars)
	snap := recognize.Build(append(ev, gen...))

	type query struct {
		bench, level, want string
		photo              func() ([]byte, error)
		views              map[bool]*fingerprint.Fingerprint // by thorough
	}
	var qs []*query
	levels := []string{"mild", "medium", "strong"}
	for i := genStride - 1; i < len(lines); i += genStride {
		for k, lv := range bandgen.Levels {
			for s := range photos {
				l := lines[i]
				qs = append(qs, &query{bench: "bandgen", level: levels[k], want: gen[i].CigarID,
					photo: func() ([]byte, error) { return l.Photo(lv, uint64(7000+100*i+s)), nil }})
			}
		}
	}
	for i := 5; i < len(recs); i += demoStride {
		for k, lv := range []bandart.Level{bandart.Mild, bandart.Medium, bandart.Strong} {
			for s := range photos {
				r := recs[i]
				qs = append(qs, &query{bench: "bandart", level: levels[k], want: r.CigarID, photo: func() ([]byte, error) {
					var buf bytes.Buffer
					err := png.Encode(&buf, bandart.Photo(bandart.Render(bandart.DesignFor(r.Brand, r.Line), 800), lv, int64(7000+100*i+s)))
					return buf.Bytes(), err
				}})
			}
		}
	}
	profiles := []bool{false}
	if ocr != nil {
		profiles = append(profiles, true)
	}
	parallel.Each(len(qs), func(i int) {
		q := qs[i]
		raw, err := q.photo()
		if err != nil {
			panic(err)
		}
		img, _, err := image.Decode(bytes.NewReader(raw))
		if err != nil {
			panic(err)
		}
		q.views = map[bool]*fingerprint.Fingerprint{}
		for _, th := range profiles {
			opts := fingerprint.Options{}
			if th {
				opts.OCR = ocr
			}
			if q.views[th], err = fingerprint.Compute(img, opts); err != nil {
				panic(err)
			}
		}
	})
	// Every query's candidates, once: the rule's values only change the
	// decision.
	type decided struct {
		q   *query
		th  bool
		img []identify.ImageCandidate
	}
	var all []decided
	for _, q := range qs {
		for _, th := range profiles {
			cands, err := snap.Recognize([]*fingerprint.Fingerprint{q.views[th]}, 10)
			if err != nil {
				t.Fatal(err)
			}
			d := decided{q: q, th: th}
			for _, c := range cands {
				d.img = append(d.img, identify.ImageCandidate{CigarID: c.CigarID, Score: c.Score, LineText: c.Scores.LineText, LineWords: c.Scores.LineWords, Inliers: c.Scores.Inliers, Keyed: c.Keyed})
			}
			all = append(all, d)
		}
	}
	type tally struct{ n, matched, wrong int }
	decide := func() (map[string]*tally, []string) {
		out := map[string]*tally{}
		var wrongs []string
		for _, d := range all {
			k := fmt.Sprintf("%s %s %s", d.q.bench, map[bool]string{false: "quick", true: "thorough"}[d.th], d.q.level)
			if out[k] == nil {
				out[k] = &tally{}
			}
			s := out[k]
			s.n++
			r := identify.Decide(identify.Request{Mode: identify.Auto, Limit: 5, Image: d.img, Cigars: cigars})
			if r.Status != identify.Matched {
				continue
			}
			s.matched++
			if r.Match.ID != d.q.want {
				s.wrong++
				wrongs = append(wrongs, fmt.Sprintf("%s: a photo of %s / %s matched %s / %s", k, cigars[d.q.want].Brand, cigars[d.q.want].Name, r.Match.Brand, r.Match.Name))
			}
		}
		return out, wrongs
	}
	wrongCount := func() int {
		tab, _ := decide()
		n := 0
		for _, s := range tab {
			n += s.wrong
		}
		return n
	}

	tab, wrongs := decide()
	for _, k := range slices.Sorted(maps.Keys(tab)) {
		s := tab[k]
		t.Logf("package's rule, %-26s %3d photos: matched %5.1f%%, wrong %d", k, s.n, 100*float64(s.matched)/float64(s.n), s.wrong)
	}
	if len(wrongs) > 0 {
		t.Errorf("the package's rule made wrong matches on held-out photos:\n%s", strings.Join(wrongs, "\n"))
	}

	// The loosest value of each, the others at the package's, with no
	// wrong match; the package's must not be looser.
	pkg := struct{ inliers, brand, line, sigmas float64 }{identify.MatchInliers, identify.BrandRatio, identify.LineRatio, identify.Sigmas}
	defer func() {
		identify.MatchInliers, identify.BrandRatio, identify.LineRatio, identify.Sigmas = pkg.inliers, pkg.brand, pkg.line, pkg.sigmas
	}()
	for _, knob := range []struct {
		name string
		v    *float64
		from []float64 // loosest first
	}{
		{"MatchInliers", &identify.MatchInliers, []float64{6, 8, 10, 12, 14, 16, 18, 20, 25, 30}},
		{"BrandRatio", &identify.BrandRatio, []float64{1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3}},
		{"LineRatio", &identify.LineRatio, []float64{1, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.4, 1.6}},
		{"Sigmas", &identify.Sigmas, []float64{0, 0.5, 1, 1.5, 2, 2.5, 3}},
	} {
		orig := *knob.v
		loosest := -1.0
		for _, v := range knob.from {
			*knob.v = v
			if wrongCount() == 0 {
				loosest = v
				break
			}
		}
		*knob.v = orig
		t.Logf("calibration: the loosest %s with no wrong match is %v (-1: none); the package has %v", knob.name, loosest, orig)
		if loosest < 0 || orig < loosest { // each is stricter the larger
			t.Errorf("identify.%s is %v, looser than the %v these photos allow", knob.name, orig, loosest)
		}
	}
}
