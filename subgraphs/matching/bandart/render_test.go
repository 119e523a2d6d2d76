package bandart

import (
	"bytes"
	"image"
	"image/draw"
	"image/png"
	"os"
	"testing"

	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
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

// TestSheet writes a contact sheet of all demo bands when VITOLA_BANDART_SHEET
// names a PNG file.
func TestSheet(t *testing.T) {
	out := os.Getenv("VITOLA_BANDART_SHEET")
	if out == "" {
		t.Skip("set VITOLA_BANDART_SHEET=file.png")
	}
	f, err := catalogdemo.LoadFacts()
	if err != nil {
		t.Fatal(err)
	}
	const w, cols = 300, 4
	if len(f.Lines) > 48 && os.Getenv("VITOLA_BANDART_SHEET_ALL") == "" {
		f.Lines = f.Lines[:48]
	}
	rows := (len(f.Lines) + cols - 1) / cols
	sheet := image.NewRGBA(image.Rect(0, 0, cols*(w+6), rows*(w/Aspect+6)))
	for i, l := range f.Lines {
		img := Render(DesignFor(l.Brand, l.Name), w)
		at := image.Pt((i%cols)*(w+6), (i/cols)*(w/Aspect+6))
		draw.Draw(sheet, img.Rect.Add(at), img, image.Point{}, draw.Src)
	}
	fh, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := png.Encode(fh, sheet); err != nil {
		t.Fatal(err)
	}
}
