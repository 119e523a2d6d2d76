package bandgen_test

import (
	"bytes"
	"image"
	"image/jpeg"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/bandgen"
)

// sameShare is the share of pixels two flat designs of one size have alike
// (every channel within 8).
func sameShare(a, b *image.RGBA) float64 {
	if a.Rect != b.Rect {
		return 0
	}
	same := 0
	for i := 0; i < len(a.Pix); i += 4 {
		d := 0
		for k := range 3 {
			d = max(d, int(a.Pix[i+k])-int(b.Pix[i+k]), int(b.Pix[i+k])-int(a.Pix[i+k]))
		}
		if d <= 8 {
			same++
		}
	}
	return float64(same) / float64(len(a.Pix)/4)
}

// The catalog is the benchmark's ground truth: the same seed must give the
// same brands, lines and pictures, and a brand's lines must share their
// design (what makes them hard to tell apart) while brands differ.
func TestCatalogSharesDesignsWithinBrands(t *testing.T) {
	brands := bandgen.Catalog(7, 20)
	again := bandgen.Catalog(7, 20)
	if len(brands) != 20 {
		t.Fatalf("%d brands, want 20", len(brands))
	}
	names := map[string]bool{}
	for i, b := range brands {
		if names[b.Name] {
			t.Errorf("brand %q twice", b.Name)
		}
		names[b.Name] = true
		if n := len(b.Lines); n < 2 || n > 4 {
			t.Errorf("%s has %d lines, want 2-4", b.Name, n)
		}
		if again[i].Name != b.Name || len(again[i].Lines) != len(b.Lines) {
			t.Fatalf("the same seed gave %q, then %q", b.Name, again[i].Name)
		}
	}
	var within, across float64
	for i, b := range brands[:6] {
		first := b.Lines[0].Flat(400)
		if !bytes.Equal(first.Pix, again[i].Lines[0].Flat(400).Pix) {
			t.Errorf("%s: two renderings differ", b.Lines[0])
		}
		within += sameShare(first, b.Lines[1].Flat(400)) / 6
		other := brands[(i+1)%len(brands)].Lines[0]
		across += sameShare(first, other.Flat(400)) / 6
	}
	t.Logf("pixels alike: %.0f%% between sibling lines, %.0f%% between brands", 100*within, 100*across)
	if within < 0.6 || across > 0.3 {
		t.Errorf("pixels alike: %.0f%% between sibling lines (want at least 60%%), %.0f%% between brands (want at most 30%%)", 100*within, 100*across)
	}
}

// Photos are phone-sized JPEG files, the same for the same seed and
// different for another.
func TestPhotoIsDeterministicJPEG(t *testing.T) {
	l := bandgen.Catalog(3, 1)[0].Lines[0]
	var sizes []int
	for _, lv := range bandgen.Levels {
		a, b := l.Photo(lv, 11), l.Photo(lv, 11)
		if !bytes.Equal(a, b) {
			t.Errorf("%v: the same seed gave two photos", lv)
		}
		img, err := jpeg.Decode(bytes.NewReader(a))
		if err != nil {
			t.Fatalf("%v: %v", lv, err)
		}
		if px := img.Bounds().Dx() * img.Bounds().Dy(); px < 400_000 || px > 1_000_000 {
			t.Errorf("%v: %v, want a phone-sized photo under 1 MP", lv, img.Bounds())
		}
		sizes = append(sizes, len(a))
	}
	if bytes.Equal(l.Photo(bandgen.Mild, 11), l.Photo(bandgen.Mild, 12)) {
		t.Error("two seeds gave the same photo")
	}
	t.Logf("JPEG sizes by level: %v", sizes)
}
