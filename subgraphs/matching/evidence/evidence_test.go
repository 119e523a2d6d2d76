package evidence_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/parallel"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	"github.com/vitolahq/vitola/subgraphs/matching/recognize"
	"github.com/vitolahq/vitola/subgraphs/matching/sqlstore"
)

func TestSeedDemoServesEveryRecord(t *testing.T) {
	recs, err := evidence.Demo()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no demo evidence")
	}
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		st := sqlstore.New(db)
		if err := evidence.SeedDemo(context.Background(), st); err != nil {
			t.Fatal(err)
		}
		all, _ := st.AllEvidence(context.Background())
		if snap := recognize.Build(all); snap.Len() != len(recs) || snap.Skipped != 0 {
			t.Fatalf("recognition serves %d of %d demo evidence items (%d skipped)", snap.Len(), len(recs), snap.Skipped)
		}
	})
}

// newBand names the i-th of a set of bands no demo cigar wears: three lines
// for each of a number of brands (a brand's lines share a palette, as real
// ones often do).
func newBand(i int) fingerprint.Label {
	return fingerprint.Label{Brand: fmt.Sprintf("Scanned Brand %d", i/3), Line: fmt.Sprintf("Line %c", 'A'+i%3)}
}

func render(l fingerprint.Label, width int) *image.RGBA {
	return bandart.Render(bandart.DesignFor(l.Brand, l.Line), width)
}

func jpegOf(t *testing.T, img image.Image, quality int) image.Image {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	out, err := jpeg.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A flat scan or render of a band is taken as one without being told.
func TestDescribeDetectsFlatScans(t *testing.T) {
	for i := range 6 {
		l := newBand(i * 4)
		for _, c := range []struct {
			name string
			img  image.Image
		}{
			{"800 px", render(l, 800)},
			{"300 px", render(l, 300)},
			{"2000 px JPEG q40", jpegOf(t, render(l, 2000), 40)},
		} {
			fp, err := evidence.Describe(c.img, l, false, nil)
			if err != nil {
				t.Fatalf("%s %s, %s: %v", l.Brand, l.Line, c.name, err)
			}
			if !fp.Band.Flat || fp.Band.Box != [4]float64{0, 0, 1, 1} {
				t.Errorf("%s %s, %s: flat %v, box %v: want a flat band filling the frame", l.Brand, l.Line, c.name, fp.Band.Flat, fp.Band.Box)
			}
		}
	}
}

// A photo of a band on a cigar is still a photo, and its band is found.
func TestDescribeKeepsPhotosPhotos(t *testing.T) {
	for i := range 6 {
		l := newBand(i*4 + 1)
		for _, c := range []struct {
			level bandart.Level
			seed  int64
		}{{bandart.Studio, 1}, {bandart.Mild, 11}} {
			photo, truth := bandart.PhotoWithTruth(render(l, 800), c.level, c.seed)
			fp, err := evidence.Describe(photo, l, false, nil)
			if err != nil {
				t.Fatalf("%s %s, %v photo: %v", l.Brand, l.Line, c.level, err)
			}
			if fp.Band.Flat {
				t.Errorf("%s %s, %v photo: taken for a flat band", l.Brand, l.Line, c.level)
			}
			// The band's centre is where the truth has it, within a tenth
			// of the band's width.
			var tx, ty float64
			for _, p := range truth.Corners {
				tx, ty = tx+p[0]/4/bandart.PhotoWidth, ty+p[1]/4/bandart.PhotoHeight
			}
			b := fp.Band.Box
			if dx, dy := (b[0]+b[2])/2-tx, (b[1]+b[3])/2-ty; dx*dx+dy*dy > 0.06*0.06 {
				t.Errorf("%s %s, %v photo: band at %v, its centre is at (%.2f, %.2f)", l.Brand, l.Line, c.level, b, tx, ty)
			}
		}
	}
}

func noise(w, h int, grey bool, seed uint64) *image.RGBA {
	r := rand.New(rand.NewPCG(seed, 7))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			if grey {
				v := uint8(max(0, min(255, 128+20*r.NormFloat64())))
				img.SetRGBA(x, y, color.RGBA{v, v, v, 255})
			} else {
				img.SetRGBA(x, y, color.RGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256)), 255})
			}
		}
	}
	return img
}

// An image with no band is refused, and the error says why and what to give
// instead.
func TestDescribeRefusesImagesWithoutABand(t *testing.T) {
	blank := image.NewRGBA(image.Rect(0, 0, 800, 160))
	for i := range blank.Pix {
		blank.Pix[i] = 230
	}
	l := fingerprint.Label{Brand: "Nobody", Line: "Nothing"}
	for _, c := range []struct {
		name string
		img  image.Image
		flat bool
		want string
	}{
		{"blank", blank, false, "the image is blank"},
		{"blank, --flat", blank, true, "the image is blank"},
		{"tiny", image.NewRGBA(image.Rect(0, 0, 8, 2)), false, "too small"},
		{"noise 4:3", noise(640, 480, false, 1), false, "could not be located confidently"},
		{"noise 5:1", noise(800, 160, false, 2), false, "could not be located confidently"},
		{"grey noise 5:1", noise(800, 160, true, 3), false, "could not be located confidently"},
		{"noise 5:1, --flat", noise(800, 160, false, 4), true, "does not look like a printed band"},
	} {
		fp, err := evidence.Describe(c.img, l, c.flat, nil)
		if !errors.Is(err, evidence.ErrNoBand) || !strings.Contains(err.Error(), c.want) {
			var band any
			if fp != nil {
				band = fp.Band
			}
			t.Errorf("%s: %v (band %+v), want ErrNoBand saying %q", c.name, err, band, c.want)
		}
	}
}

// TestFlatScansAddedWithoutFlagAreRecognized adds flat renders of bands no
// demo cigar wears as evidence, described as `vitola evidence add` does
// without --flat, beside the demo evidence, and recognizes synthetic photos
// of those bands by the rule identify applies to the image (Matched on the
// best two cigars). A match must name the right cigar: wrong matches are
// held to zero in the sample and to the recognition floor (under 2%) in the
// benchmark.
//
// By default it runs on a sample (12 bands, one mild and one careless photo
// each). VITOLA_BENCH_FLAT=1 runs 60 bands with two photos a level and
// reports the table; before flat scans were recognised by themselves, that
// run matched 73 of 120 mild photos right and 12 wrong (23 and 1 of 120
// careless ones); told --flat, 115 and 0 (61 and 0).
func TestFlatScansAddedWithoutFlagAreRecognized(t *testing.T) {
	if testing.Short() {
		t.Skip("fingerprints a few dozen photos; skipped in -short mode")
	}
	bands, photos := 12, 1
	if os.Getenv("VITOLA_BENCH_FLAT") != "" {
		bands, photos = 60, 2
	}
	recs, err := evidence.Demo()
	if err != nil {
		t.Fatal(err)
	}
	var ev []*matching.Evidence
	for _, r := range recs {
		ev = append(ev, &matching.Evidence{ID: ids.Derive(ids.Evidence, "demo\x00"+r.CigarID), CigarID: r.CigarID, Fingerprint: r.Fingerprint})
	}
	cigar := func(i int) string { l := newBand(i); return ids.Derive(ids.Cigar, l.Brand+"\x00"+l.Line) }
	added := make([]*matching.Evidence, bands)
	parallel.Each(bands, func(i int) {
		fp, err := evidence.Describe(render(newBand(i), 800), newBand(i), false, nil)
		if err != nil {
			t.Errorf("%v: %v", newBand(i), err)
			return
		}
		if !fp.Band.Flat {
			t.Errorf("%v: the flat render was not taken as flat (band %+v)", newBand(i), fp.Band)
		}
		raw, _ := json.Marshal(fp)
		added[i] = &matching.Evidence{ID: ids.Derive(ids.Evidence, cigar(i)), CigarID: cigar(i), Fingerprint: raw}
	})
	if t.Failed() {
		t.FailNow()
	}
	snap := recognize.Build(append(ev, added...))

	levels := []bandart.Level{bandart.Mild, bandart.Strong}
	type tally struct{ right, wrong, none int }
	var mu sync.Mutex
	counts := map[bandart.Level]*tally{bandart.Mild: {}, bandart.Strong: {}}
	per := len(levels) * photos
	parallel.Each(bands*per, func(k int) {
		i, lv, seed := k/per, levels[k%per/photos], int64(500+k%photos)
		q, err := fingerprint.Compute(bandart.Photo(render(newBand(i), 800), lv, seed), fingerprint.Options{})
		if err != nil {
			t.Error(err)
			return
		}
		cs, err := snap.Recognize([]*fingerprint.Fingerprint{q}, 2)
		if err != nil || len(cs) == 0 {
			t.Errorf("recognize: %v %v", cs, err)
			return
		}
		second := 0.0
		if len(cs) > 1 {
			second = cs[1].Score
		}
		mu.Lock()
		defer mu.Unlock()
		c := counts[lv]
		switch {
		case !fingerprint.Matched(cs[0].Score, second):
			c.none++
		case cs[0].CigarID == cigar(i):
			c.right++
		default:
			c.wrong++
			t.Logf("%v photo %d of %v matched another cigar (%.3f, second %.3f)", lv, seed, newBand(i), cs[0].Score, second)
		}
	})
	n := bands * photos
	for _, lv := range levels {
		c := counts[lv]
		t.Logf("%-6v %d photos: matched right %d, matched WRONG %d, not matched %d", lv, n, c.right, c.wrong, c.none)
		// No wrong match in the sample; in the benchmark, no more than the
		// recognition floor (fingerprint.MatchThreshold: under 2% of
		// single photos).
		if c.wrong > n/50 {
			t.Errorf("%v photos: %d of %d matched the wrong cigar", lv, c.wrong, n)
		}
	}
	if c := counts[bandart.Mild]; c.right < n*3/4 {
		t.Errorf("mild photos: %d of %d matched, want at least 3/4", c.right, n)
	}
}
