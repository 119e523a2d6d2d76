package recognize_test

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"slices"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/bandgen"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	"github.com/vitolahq/vitola/subgraphs/matching/identify"
	"github.com/vitolahq/vitola/subgraphs/matching/recognize"
)

// BenchmarkPhoto is what one photo costs identify on one core: describing
// it (fingerprint.Compute; the thorough profile also reads it with
// tesseract) and recognizing it among the demo evidence and a generated
// catalog's (286 lines), next to decoding the JPEG (the baseline). Twelve
// photos of both renderers at the three levels, in turn; it reports the
// median and the 90th percentile of a photo.
//
//	go test ./subgraphs/matching/recognize -run '^$' -bench Photo -cpu 1 -benchtime 48x
func BenchmarkPhoto(b *testing.B) {
	snap, photos := photoBench(b)
	b.Run("decode-baseline", func(b *testing.B) {
		timed(b, photos, func(p []byte) {
			if _, err := jpeg.Decode(bytes.NewReader(p)); err != nil {
				b.Fatal(err)
			}
		})
	})
	profile := func(ocr fingerprint.OCR) func(b *testing.B) {
		return func(b *testing.B) {
			timed(b, photos, func(p []byte) {
				img, err := jpeg.Decode(bytes.NewReader(p))
				if err != nil {
					b.Fatal(err)
				}
				fp, err := fingerprint.Compute(img, fingerprint.Options{OCR: ocr})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := snap.Recognize([]*fingerprint.Fingerprint{fp}, 10); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
	b.Run("quick", profile(nil))
	if fingerprint.TesseractAvailable() {
		b.Run("thorough", profile(fingerprint.Tesseract{}))
	}
	// Quick's two parts apart.
	views := make([]*fingerprint.Fingerprint, len(photos))
	imgs := make([]image.Image, len(photos))
	for i, p := range photos {
		imgs[i], _ = jpeg.Decode(bytes.NewReader(p))
		views[i], _ = fingerprint.Compute(imgs[i], fingerprint.Options{})
	}
	b.Run("quick-describe", func(b *testing.B) {
		timedN(b, len(photos), func(k int) {
			if _, err := fingerprint.Compute(imgs[k], fingerprint.Options{}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("quick-recognize", func(b *testing.B) {
		timedN(b, len(photos), func(k int) {
			if _, err := snap.Recognize(views[k:k+1], 10); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// timed runs f on the photos in turn and reports a photo's median and 90th
// percentile.
func timed(b *testing.B, photos [][]byte, f func([]byte)) {
	timedN(b, len(photos), func(k int) { f(photos[k]) })
}

// timedN runs f on 0..n-1 in turn and reports the median and the 90th
// percentile of a call.
func timedN(b *testing.B, n int, f func(int)) {
	var ds []time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		f(i % n)
		ds = append(ds, time.Since(t0))
		i++
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(ds[len(ds)*9/10].Microseconds())/1000, "ms-p90")
}

func photoBench(b *testing.B) (*recognize.Snapshot, [][]byte) {
	b.Helper()
	ev, cigars, recs := demoEvidence(b)
	lines := bandgen.Lines(bandgen.Catalog(24, 20))
	bands := make([]flatBand, len(lines))
	for i, l := range lines {
		bands[i] = flatBand{identify.Cigar{ID: fmt.Sprintf("cig_gen%03d", i), Brand: l.Brand, Name: l.Name}, func() image.Image { return l.Flat(800) }}
	}
	ev = append(ev, flatEvidence(b, bands, nil, cigars)...)
	var photos [][]byte
	for k, lv := range bandgen.Levels {
		for s := range 2 {
			photos = append(photos, lines[7+13*(2*k+s)%len(lines)].Photo(lv, uint64(100+s)))
		}
	}
	for k, lv := range []bandart.Level{bandart.Mild, bandart.Medium, bandart.Strong} {
		for s := range 2 {
			l := recs[(31+37*(2*k+s))%len(recs)]
			var buf bytes.Buffer
			img := bandart.Photo(bandart.Render(bandart.DesignFor(l.Brand, l.Line), 800), lv, int64(100+s))
			if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
				b.Fatal(err)
			}
			photos = append(photos, buf.Bytes())
		}
	}
	return recognize.Build(ev), photos
}
