package bandart

import (
	"bytes"
	"testing"
)

func TestRenderDeterministic(t *testing.T) {
	a := Render(DesignFor("Padrón", "1964 Anniversary Series"), 400)
	b := Render(DesignFor("Padrón", "1964 Anniversary Series"), 400)
	if !bytes.Equal(a.Pix, b.Pix) {
		t.Fatal("render is not deterministic")
	}
	if a.Rect.Dx() != 400 || a.Rect.Dy() != 400/Aspect {
		t.Fatalf("size %v", a.Rect)
	}
}

func TestBrandSharesPalette(t *testing.T) {
	a, b := DesignFor("Oliva", "Serie V"), DesignFor("Oliva", "Serie G")
	if a.Palette != b.Palette || a.Font != b.Font {
		t.Fatal("lines of one brand must share palette and typeface")
	}
}
