package fingerprint_test

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"sync"
	"testing"

	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

// TestLargePhotosReduced measures what reduced decoding does to recognition:
// the sample's photos (every 8th line, mild and strong) blown up 4x
// (3840x2880), fingerprinted from the whole frame and as the image intake
// hands them out (reduced by 2), top-1 against all studio evidence. About
// two and a half minutes, so only on demand:
//
//	VITOLA_BENCH_LARGE=1 go test -run TestLargePhotosReduced -v ./subgraphs/matching/fingerprint/
//
// Measured: mild 28/28 either way; strong 20/28 reduced, 19/28 whole (20/28
// at the original size).
func TestLargePhotosReduced(t *testing.T) {
	if os.Getenv("VITOLA_BENCH_LARGE") == "" {
		t.Skip("set VITOLA_BENCH_LARGE=1")
	}
	facts, err := catalogdemo.LoadFacts()
	if err != nil {
		t.Fatal(err)
	}
	dec := imagefetch.New(imagefetch.Config{})
	ev := make([]*fingerprint.Fingerprint, len(facts.Lines))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, l := range facts.Lines {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ev[i], _ = fingerprint.NewEvidence(bandart.StudioPhoto(l.Brand, l.Name), fingerprint.Label{Brand: l.Brand, Line: l.Name}, fingerprint.Options{})
		})
	}
	wg.Wait()
	top1 := func(q *fingerprint.Fingerprint) int {
		best, bi := -1.0, -1
		for i, e := range ev {
			if s := fingerprint.Compare(q, e).Total; s > best {
				best, bi = s, i
			}
		}
		return bi
	}
	var whole, reduced, original, n [3]int
	for i, l := range facts.Lines {
		if i%8 != 0 {
			continue
		}
		for _, lv := range []bandart.Level{bandart.Mild, bandart.Strong} {
			small := bandart.Photo(bandart.Render(bandart.DesignFor(l.Brand, l.Name), 800), lv, int64(i)+7)
			b := small.Bounds()
			big := image.NewRGBA(image.Rect(0, 0, b.Dx()*4, b.Dy()*4))
			for y := range big.Bounds().Dy() {
				for x := range big.Bounds().Dx() {
					copy(big.Pix[big.PixOffset(x, y):big.PixOffset(x, y)+4], small.Pix[small.PixOffset(x/4, y/4):])
				}
			}
			var buf bytes.Buffer
			if err := png.Encode(&buf, big); err != nil {
				t.Fatal(err)
			}
			handed, err := dec.Decode(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			n[lv]++
			for _, c := range []struct {
				img   image.Image
				count *[3]int
			}{{big, &whole}, {handed.Image, &reduced}, {small, &original}} {
				fp, err := fingerprint.Compute(c.img, fingerprint.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if top1(fp) == i {
					c.count[lv]++
				}
			}
		}
	}
	for _, lv := range []bandart.Level{bandart.Mild, bandart.Strong} {
		t.Logf("%v: %d photos, top-1: 4x reduced %d, 4x whole %d, original size %d", lv, n[lv], reduced[lv], whole[lv], original[lv])
		if reduced[lv] < whole[lv]-1 {
			t.Errorf("%v: reduced decoding recognises %d, the whole frame %d", lv, reduced[lv], whole[lv])
		}
	}
}
