package bandart

import (
	"bytes"
	"testing"
)

func TestPhotoDeterministic(t *testing.T) {
	band := Render(DesignFor("Oliva", "Serie V"), 600)
	for _, lv := range []Level{Studio, Mild, Medium, Strong} {
		a, b := Photo(band, lv, 7), Photo(band, lv, 7)
		if !bytes.Equal(a.Pix, b.Pix) {
			t.Fatalf("%v photo is not deterministic", lv)
		}
		if a.Rect.Dx()*a.Rect.Dy() > 1_000_000 {
			t.Fatalf("%v photo too large: %v", lv, a.Rect)
		}
	}
}
