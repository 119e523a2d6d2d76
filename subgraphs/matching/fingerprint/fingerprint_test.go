package fingerprint

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
)

func photoOf(brand, line string, level bandart.Level, seed int64) *image.RGBA {
	return bandart.Photo(bandart.Render(bandart.DesignFor(brand, line), 800), level, seed)
}

func evidenceFor(brand, line string) (*Fingerprint, error) {
	return NewEvidence(bandart.StudioPhoto(brand, line), Label{Brand: brand, Line: line}, Options{})
}

func TestLab(t *testing.T) {
	for _, c := range []struct {
		r, g, b float64
		L, A, B float64
	}{
		{255, 255, 255, 100, 0, 0},
		{0, 0, 0, 0, 0, 0},
		{255, 0, 0, 53.24, 80.09, 67.20},
		{0, 0, 255, 32.30, 79.19, -107.86},
		{128, 128, 128, 53.59, 0, 0},
	} {
		L, A, B := rgbToLab(c.r, c.g, c.b)
		if math.Abs(L-c.L) > 0.05 || math.Abs(A-c.A) > 0.05 || math.Abs(B-c.B) > 0.05 {
			t.Errorf("rgbToLab(%v,%v,%v) = %.2f %.2f %.2f, want %.2f %.2f %.2f", c.r, c.g, c.b, L, A, B, c.L, c.A, c.B)
		}
		r, g, b := labToRGB(L, A, B)
		if math.Abs(r-c.r) > 0.5 || math.Abs(g-c.g) > 0.5 || math.Abs(b-c.b) > 0.5 {
			t.Errorf("round trip of %v,%v,%v gave %.1f,%.1f,%.1f", c.r, c.g, c.b, r, g, b)
		}
	}
}

func TestDCTAndHashes(t *testing.T) {
	// A constant block has only a DC term.
	in := make([]float64, 32*32)
	for i := range in {
		in[i] = 7
	}
	c := dct2(in)
	if math.Abs(c[0]-7*32*32) > 1e-6 {
		t.Fatalf("DC = %v", c[0])
	}
	for i := 1; i < 64; i++ {
		if math.Abs(c[i]) > 1e-6 {
			t.Fatalf("AC[%d] = %v", i, c[i])
		}
	}
	if s, ok := hashSimilarity("ffffffffffffffff", "ffffffffffffffff"); !ok || s != 1 {
		t.Fatal("identical hashes")
	}
	if s, _ := hashSimilarity("ffffffff00000000", "00000000ffffffff"); s != 0 {
		t.Fatalf("opposite hashes: %v", s)
	}
	if _, ok := hashSimilarity("zz", "00"); ok {
		t.Fatal("bad hex accepted")
	}
}

func TestText(t *testing.T) {
	if got := normText("  Padrón  1964 — Añejo!"); got != "PADRON 1964 ANEJO" {
		t.Fatalf("normText = %q", got)
	}
	if d := substringDistance("FUENTE", "XXARTUROPUENTEHEMNG"); d != 1 {
		t.Fatalf("substringDistance = %d", d)
	}
	hi := textSimilarity("A PUENTE HEMNG", []string{"ARTURO FUENTE HEMINGWAY"})
	lo := textSimilarity("A PUENTE HEMNG", []string{"OLIVA SERIE V"})
	if hi <= lo || hi < 0.4 {
		t.Fatalf("text similarity: right %v, wrong %v", hi, lo)
	}
}

func TestComputeDeterministicJSON(t *testing.T) {
	img := photoOf("Padrón", "1964 Anniversary Series", bandart.Mild, 3)
	a, err := Compute(img, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Compute(img, Options{})
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatal("same image, different JSON")
	}
	if a.Version != Version || a.Seal != "" || a.Label != nil {
		t.Fatalf("header: %+v", a)
	}
	if a.Typography.OCR != "unavailable" || a.Typography.Text != "" {
		t.Fatalf("OCR without an OCR: %+v", a.Typography)
	}
	if len(a.Vector) != VectorLen {
		t.Fatalf("vector length %d", len(a.Vector))
	}
	var n float64
	for _, v := range a.Vector {
		n += float64(v) * float64(v)
	}
	if math.Abs(n-1) > 0.01 {
		t.Fatalf("vector norm² %v", n)
	}
	if len(a.Hashes.DHash) != 16 || len(a.Hashes.PHash) != 16 || len(a.Hashes.ColorLayout) != 384 {
		t.Fatalf("hashes %+v", a.Hashes)
	}
	if len(a.Colors) == 0 || a.Colors[0].Role != "ground" {
		t.Fatalf("colours %+v", a.Colors)
	}
	// The same photo as a decoded JPEG (YCbCr) works too.
	var buf bytes.Buffer
	_ = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
	dec, _ := jpeg.Decode(&buf)
	if _, err := Compute(dec, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Compute(image.NewRGBA(image.Rect(0, 0, 3, 3)), Options{}); err == nil {
		t.Fatal("tiny image accepted")
	}
}

func TestLocateFindsBand(t *testing.T) {
	for _, c := range []struct {
		brand, line string
		level       bandart.Level
		seed        int64
		maxErr      float64
	}{
		{"Arturo Fuente", "Hemingway", bandart.Mild, 1, 0.1},
		// The ground is the wrapper's brown: only the two borders stand
		// out, and the band is found as the pair (once only the top one).
		{"CAO", "Colombia", bandart.Strong, 44000, 0.05},
	} {
		band := bandart.Render(bandart.DesignFor(c.brand, c.line), 800)
		img, truth := bandart.PhotoWithTruth(band, c.level, c.seed)
		fp, err := Compute(img, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e := locError(fp, truth, img.Rect.Dx(), img.Rect.Dy()); e > c.maxErr {
			t.Errorf("%s %s (%v, seed %d): band found %.3f off, want at most %.2f (corners %v, truth %v)",
				c.brand, c.line, c.level, c.seed, e, c.maxErr, fp.Band.Corners, truth.Corners)
		}
	}
}

// TestPairedRuns: two runs along the cigar that look like one band's top
// and bottom borders are also offered joined; others are not.
func TestPairedRuns(t *testing.T) {
	gold, cream, blue := [3]float64{70, 5, 45}, [3]float64{90, 0, 10}, [3]float64{40, 5, -40}
	rows := func(colours map[[2]int][3]float64, n int) [][3]float64 {
		out := make([][3]float64, n)
		for r, c := range colours {
			for i := r[0]; i < r[1]; i++ {
				out[i] = c
			}
		}
		return out
	}
	for _, c := range []struct {
		name string
		runs [][2]int
		cols map[[2]int][3]float64
		half float64
		want [][2]int
	}{
		{"alike borders", [][2]int{{10, 16}, {30, 36}}, map[[2]int][3]float64{{10, 16}: gold, {30, 36}: gold}, 50, [][2]int{{10, 36}}},
		{"borders of another colour", [][2]int{{10, 16}, {30, 36}}, map[[2]int][3]float64{{10, 16}: gold, {30, 36}: blue}, 50, nil},
		{"lengths far apart", [][2]int{{10, 13}, {30, 40}}, map[[2]int][3]float64{{10, 13}: gold, {30, 40}: gold}, 50, nil},
		{"gap too wide", [][2]int{{10, 14}, {30, 34}}, map[[2]int][3]float64{{10, 14}: gold, {30, 34}: gold}, 50, nil},
		{"longer than a band", [][2]int{{10, 16}, {30, 36}}, map[[2]int][3]float64{{10, 16}: gold, {30, 36}: gold}, 15, nil},
		{"neighbours only", [][2]int{{10, 16}, {20, 26}, {30, 36}}, map[[2]int][3]float64{{10, 16}: gold, {20, 26}: cream, {30, 36}: gold}, 50, nil},
	} {
		got := pairedRuns(c.runs, rows(c.cols, 60), c.half)
		if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) {
			t.Errorf("%s: pairedRuns = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRecognisesSmallCatalogue: a mild photo matches its own band among a
// few others.
func TestRecognisesSmallCatalogue(t *testing.T) {
	pairs := [][2]string{{"Oliva", "Serie V"}, {"Oliva", "Serie G"}, {"Arturo Fuente", "Hemingway"}, {"Padrón", "1964 Anniversary Series"}, {"Cohiba", "Behike"}, {"Ashton", "VSG"}}
	var ev []*Fingerprint
	for _, p := range pairs {
		fp, err := evidenceFor(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		ev = append(ev, fp)
	}
	for i, p := range pairs {
		q, _ := Compute(photoOf(p[0], p[1], bandart.Mild, int64(i)), Options{})
		best, bi := -1.0, -1
		for k, e := range ev {
			if s := Similarity(q, e); s > best {
				best, bi = s, k
			}
		}
		if bi != i {
			t.Errorf("%v: matched %v", p, pairs[bi])
		}
	}
}

type fakeOCR struct{ text string }

func (f fakeOCR) Read(context.Context, image.Image) (string, error) { return f.text, nil }

func TestTextEvidence(t *testing.T) {
	e1, _ := evidenceFor("Arturo Fuente", "Hemingway")
	e2, _ := evidenceFor("Arturo Fuente", "Don Carlos")
	q, _ := Compute(photoOf("Arturo Fuente", "Hemingway", bandart.Mild, 5), Options{OCR: fakeOCR{"ARTURO PUENTE HEMNGWAY"}})
	if q.Typography.OCR != "ok" {
		t.Fatalf("ocr status %q", q.Typography.OCR)
	}
	s1, s2 := Compare(q, e1), Compare(q, e2)
	if !s1.TextUsed || s1.Text <= s2.Text {
		t.Fatalf("text scores %+v vs %+v", s1, s2)
	}
}

func TestTesseract(t *testing.T) {
	if testing.Short() || !TesseractAvailable() {
		t.Skip("tesseract not installed, or -short")
	}
	band := bandart.Render(bandart.DesignFor("Padrón", "1964 Anniversary Series"), 800)
	fp, err := Compute(band, Options{Flat: true, OCR: Tesseract{}})
	if err != nil {
		t.Fatal(err)
	}
	if fp.Typography.OCR != "ok" || textSimilarity(normText(fp.Typography.Text), []string{"PADRON 1964 ANNIVERSARY SERIES"}) < 0.7 {
		t.Fatalf("tesseract read %q (%s)", fp.Typography.Text, fp.Typography.OCR)
	}
}

// TestTesseractModes runs Tesseract.Read against a fake tesseract program
// (a shell script answering per page segmentation mode): one run per mode,
// the distinct readings joined in order, a failing run an error.
func TestTesseractModes(t *testing.T) {
	for _, c := range []struct {
		name      string
		psms      []int
		script    string // the body of a case on $4, the mode
		want      string
		wantError bool
	}{
		{"default modes 6 then 11", nil, `6) echo "MACANUDO" ;; 11) echo "INSPIRADO  BLACK" ;;`, "MACANUDO INSPIRADO BLACK", false},
		{"the same reading once", nil, `*) echo "CAO FLATHEAD" ;;`, "CAO FLATHEAD", false},
		{"a mode that reads nothing", nil, `6) echo "" ;; 11) echo "PADRON" ;;`, "PADRON", false},
		{"modes given", []int{7}, `7) echo "ONE LINE" ;; *) echo "WRONG MODE" ;;`, "ONE LINE", false},
		{"a failing run", nil, `11) echo "boom" >&2; exit 3 ;; *) echo "TEXT" ;;`, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			prog := filepath.Join(t.TempDir(), "tesseract")
			// tesseract's arguments: stdin stdout --psm MODE -l LANG.
			script := "#!/bin/sh\n[ \"$1 $2 $3 $5 $6\" = \"stdin stdout --psm -l eng\" ] || { echo \"bad args: $*\" >&2; exit 2; }\ncat >/dev/null\ncase \"$4\" in " + c.script + " esac\n"
			if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			got, err := Tesseract{Path: prog, PSMs: c.psms}.Read(context.Background(), image.NewGray(image.Rect(0, 0, 8, 8)))
			if (err != nil) != c.wantError || got != c.want {
				t.Fatalf("got %q, %v; want %q (error %v)", got, err, c.want, c.wantError)
			}
		})
	}
}

// TestTesseractAmongDecorations: on this band (a black panel across a light
// ground, dotted rows, end panels) tesseract's block mode reads noise; its
// sparse mode reads the words, and Read keeps both.
func TestTesseractAmongDecorations(t *testing.T) {
	if testing.Short() || !TesseractAvailable() {
		t.Skip("tesseract not installed, or -short")
	}
	fp, err := Compute(bandart.StudioPhoto("CAO", "Flathead"), Options{OCR: Tesseract{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := normText(fp.Typography.Text); !strings.Contains(got, "CAO") || !strings.Contains(got, "FLATHEAD") {
		t.Fatalf("tesseract read %q (%s), want CAO and FLATHEAD in it", fp.Typography.Text, fp.Typography.OCR)
	}
}

// TestExample writes testdata/example.json (a documented example of the
// format) when VITOLA_FP_UPDATE=1.
func TestExample(t *testing.T) {
	if os.Getenv("VITOLA_FP_UPDATE") == "" {
		t.Skip("set VITOLA_FP_UPDATE=1 to rewrite testdata/example.json")
	}
	fp, err := Compute(photoOf("Padrón", "1964 Anniversary Series", bandart.Mild, 3), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(fp, "", "  ")
	if err := os.WriteFile(filepath.Join("testdata", "example.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
