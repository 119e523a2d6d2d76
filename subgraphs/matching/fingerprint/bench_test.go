package fingerprint

import (
	"bytes"
	"image"
	"image/jpeg"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
)

// onePhoto is a one-megapixel (1155x866) JPEG of a strong synthetic photo.
func onePhoto(b *testing.B) []byte {
	b.Helper()
	src := photoOf("Arturo Fuente", "Hemingway", bandart.Strong, 2)
	const w, h = 1155, 866
	big := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			o := src.PixOffset(x*src.Rect.Dx()/w, y*src.Rect.Dy()/h)
			copy(big.Pix[big.PixOffset(x, y):big.PixOffset(x, y)+4], src.Pix[o:o+4])
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, big, &jpeg.Options{Quality: 85}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkCompute: Compute on a decoded 1-MP JPEG (no OCR). Compare with
// BenchmarkBaselineDownscale (reading the decoded image into the working
// raster, the first step of Compute) and BenchmarkBaselineDecode.
func BenchmarkCompute(b *testing.B) {
	img, err := jpeg.Decode(bytes.NewReader(onePhoto(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Compute(img, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineDownscale(b *testing.B) {
	img, err := jpeg.Decode(bytes.NewReader(onePhoto(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		downscale(img, workSide)
	}
}

func BenchmarkBaselineDecode(b *testing.B) {
	data := onePhoto(b)
	b.ResetTimer()
	for b.Loop() {
		if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompare: one query photo against one evidence, all kinds of
// evidence (what recognize does for each shortlisted item). Compare with
// BenchmarkBaselineCosine, the index vectors' cosine alone.
func BenchmarkCompare(b *testing.B) {
	q, e := comparePair(b)
	for b.Loop() {
		Compare(q, e)
	}
}

func BenchmarkBaselineCosine(b *testing.B) {
	q, e := comparePair(b)
	for b.Loop() {
		cosine(q.Vector, e.Vector)
	}
}

func comparePair(b *testing.B) (query, evidence *Fingerprint) {
	b.Helper()
	e, err := evidenceFor("Arturo Fuente", "Hemingway")
	if err != nil {
		b.Fatal(err)
	}
	q, err := Compute(photoOf("Arturo Fuente", "Hemingway", bandart.Strong, 2), Options{})
	if err != nil {
		b.Fatal(err)
	}
	return q, e
}

// BenchmarkLight: evening the light along a normalised band and white-
// balancing a copy (flatten and grayWorld, part of Compute). Compare with
// BenchmarkBaselineToLab, converting the same band to Lab once.
func BenchmarkLight(b *testing.B) {
	band := normBand(b)
	work := newRaster(band.w, band.h)
	for b.Loop() {
		copy(work.p, band.p)
		flatten(work)
		grayWorld(work)
	}
}

func BenchmarkBaselineToLab(b *testing.B) {
	band := normBand(b)
	for b.Loop() {
		toLab(band)
	}
}

func normBand(b *testing.B) *raster {
	b.Helper()
	rgb, _ := downscale(photoOf("Arturo Fuente", "Hemingway", bandart.Strong, 2), workSide)
	return rectify(rgb, locate(toLab(rgb)), false, NormWidth, NormHeight)
}
