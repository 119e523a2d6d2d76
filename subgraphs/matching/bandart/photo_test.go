package bandart

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestPhotoDeterministic(t *testing.T) {
	band := Render(DesignFor("Oliva", "Serie V"), 600)
	for _, lv := range []Level{Studio, Mild, Strong} {
		a, b := Photo(band, lv, 7), Photo(band, lv, 7)
		if !bytes.Equal(a.Pix, b.Pix) {
			t.Fatalf("%v photo is not deterministic", lv)
		}
		if a.Rect.Dx()*a.Rect.Dy() > 1_000_000 {
			t.Fatalf("%v photo too large: %v", lv, a.Rect)
		}
	}
}

// TestPhotoSamples writes sample photos to the directory VITOLA_BANDART_PHOTOS.
func TestPhotoSamples(t *testing.T) {
	dir := os.Getenv("VITOLA_BANDART_PHOTOS")
	if dir == "" {
		t.Skip("set VITOLA_BANDART_PHOTOS=dir")
	}
	for i, bl := range [][2]string{{"Oliva", "Serie V"}, {"Arturo Fuente", "Hemingway"}, {"Cohiba", "Behike"}} {
		band := Render(DesignFor(bl[0], bl[1]), 800)
		for _, lv := range []Level{Studio, Mild, Strong} {
			for s := range 2 {
				var buf bytes.Buffer
				_ = png.Encode(&buf, Photo(band, lv, int64(s)))
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d-%v-%d.png", i, lv, s)), buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
