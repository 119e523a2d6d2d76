package fingerprint

import (
	"encoding/json"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
)

// siblingEvidence renders two lines of one brand sharing a design (only the
// line's name differs) as flat evidence, and a third of another brand.
func siblingEvidence(t *testing.T) (a, b, other *Fingerprint, da, db bandart.Design) {
	t.Helper()
	base := bandart.DesignFor("Casa Quetzal", "")
	da, db = base, base
	da.Line, db.Line = "Reserva", "Lancero Especial"
	ev := func(d bandart.Design) *Fingerprint {
		fp, err := NewEvidence(bandart.Render(d, 800), Label{Brand: d.Brand, Line: d.Line}, Options{Flat: true})
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	o := bandart.DesignFor("Valle Dorado", "Maduro")
	return ev(da), ev(db), ev(o), da, db
}

// TestSiblingKeypoints: a photo of one of two lines sharing a design (only
// the line's name differs) has more inliers with its own line's evidence
// than with the other line's, by the keypoints of the name, and few with
// another brand's.
func TestSiblingKeypoints(t *testing.T) {
	a, b, other, da, db := siblingEvidence(t)
	for i, d := range []bandart.Design{da, db} {
		photo := bandart.Photo(bandart.Render(d, 800), bandart.Mild, int64(11+i))
		q, err := Compute(photo, Options{})
		if err != nil {
			t.Fatal(err)
		}
		own, sib := []*Fingerprint{a, b}[i], []*Fingerprint{a, b}[1-i]
		no, ns, nx := MatchKeypoints(q.Keypoints, own.Keypoints).Inliers, MatchKeypoints(q.Keypoints, sib.Keypoints).Inliers, MatchKeypoints(q.Keypoints, other.Keypoints).Inliers
		t.Logf("%s: inliers %d with its line, %d with the other line, %d with another brand", d.Line, no, ns, nx)
		if no < 30 || no <= ns || nx*3 > no {
			t.Errorf("%s: inliers %d with its line, %d with the other line, %d with another brand", d.Line, no, ns, nx)
		}
	}
}

// TestLineText: the brand's name read on a band reads none of its lines'
// own words; the line's own words tell them apart.
func TestLineText(t *testing.T) {
	a, b, _, _, _ := siblingEvidence(t)
	for _, c := range []struct {
		read           string
		aLine, bLine   float64 // at least / at most
		aAhead, sameAB bool
	}{
		{read: "CASA QUETZAL", sameAB: true},
		{read: "CASA QUETZAL RESERVA", aLine: 1, aAhead: true},
		{read: "QUETZAI RESERVA", aLine: 0.8, aAhead: true},
		{read: "RESERVA", aLine: 1, aAhead: true},
	} {
		q := *a
		q.Label = nil
		q.Typography.Text = c.read
		sa, sb := Compare(&q, a), Compare(&q, b)
		switch {
		case !sa.TextUsed || !sa.LineWords || !sb.LineWords:
			t.Errorf("%q: text not used (%+v, %+v)", c.read, sa, sb)
		case c.sameAB && (sa.LineText != 0 || sb.LineText != 0):
			t.Errorf("%q: the brand alone reads a line: %+v, %+v", c.read, sa, sb)
		case c.aAhead && (sa.LineText < c.aLine || sa.LineText-sb.LineText < 0.3 || sa.Text <= sb.Text):
			t.Errorf("%q: line text %.2f vs %.2f, text %.2f vs %.2f", c.read, sa.LineText, sb.LineText, sa.Text, sb.Text)
		}
	}
	// The evidence's own OCR read the brand (one word at a time, among
	// noise): a photo's reading of the brand, or of the same noise, still
	// reads no line.
	ea, eb := *a, *b
	ea.Typography.Text, eb.Typography.Text = "| fy ; CASA QUETZAL| = ©) wk | wk kt QUETZAL", "QUETZAL ~ CASA | wk"
	for _, read := range []string{"CASA QUETZAL", "QUETZAL", "wk wk QUETZAL"} {
		q := *a
		q.Label = nil
		q.Typography.Text = read
		if sa, sb := Compare(&q, &ea), Compare(&q, &eb); sa.LineText != 0 || sb.LineText != 0 {
			t.Errorf("%q against evidence that read the brand: line text %.2f and %.2f", read, sa.LineText, sb.LineText)
		}
	}
}

// TestKeypointBudget: a photo keeps up to KeypointsMax keypoints and
// evidence up to EvidenceKeypoints, however the scales' rounded shares
// add up (the README's example photos, a studio photo, and scattered
// patches, whose corners are unlike each other and fill the budget), and
// what a fingerprint keeps reads back.
func TestKeypointBudget(t *testing.T) {
	paths, _ := filepath.Glob("../../../examples/bands/*.jpg")
	if len(paths) == 0 {
		t.Fatal("no example photos in examples/bands")
	}
	var imgs []image.Image
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	imgs = append(imgs, photoOf("Casa Quetzal", "Reserva", bandart.Strong, 5), patches(1600, 1200, 3))
	full := 0
	for i, img := range imgs {
		fp, err := Compute(img, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := NewEvidence(img, Label{Brand: "b", Line: "l"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if n, m := fp.Keypoints.Len(), ev.Keypoints.Len(); n > KeypointsMax || m > EvidenceKeypoints {
			t.Errorf("image %d: %d keypoints (at most %d), evidence %d (at most %d)", i, n, KeypointsMax, m, EvidenceKeypoints)
		}
		if fp.Keypoints.Len() > KeypointsMax*9/10 {
			full++
		}
		for _, x := range []*Fingerprint{fp, ev} {
			raw, err := json.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			var back Fingerprint
			if err := json.Unmarshal(raw, &back); err != nil || back.Keypoints.Len() != x.Keypoints.Len() {
				t.Errorf("image %d: %d keypoints read back as %d: %v", i, x.Keypoints.Len(), back.Keypoints.Len(), err)
			}
		}
	}
	if full == 0 {
		t.Error("no image came near the budget: the test checks nothing")
	}
}

// patches is a w x h image of random grey rectangles of random sizes.
func patches(w, h int, seed uint64) *image.Gray {
	r := rand.New(rand.NewPCG(seed, 1))
	img := image.NewGray(image.Rect(0, 0, w, h))
	for range 4000 {
		x, y := r.IntN(w), r.IntN(h)
		rw, rh := 4+r.IntN(60), 4+r.IntN(60)
		v := uint8(r.IntN(256))
		for yy := y; yy < min(h, y+rh); yy++ {
			for xx := x; xx < min(w, x+rw); xx++ {
				img.Pix[yy*img.Stride+xx] = v
			}
		}
	}
	return img
}

// TestRepeatedCorners: a photo's keypoints leave out corners repeated
// across it (a cloth of squares), and keep those unlike the rest;
// evidence keeps both.
func TestRepeatedCorners(t *testing.T) {
	const w, h, sq = 1600, 1200, 40
	img := patches(w, h, 5)
	for y := range h {
		for x := range w * 3 / 4 {
			img.Pix[y*img.Stride+x] = uint8(200 - 160*b2i(x%sq < sq/2 && y%sq < sq/2))
		}
	}
	onCloth := func(k *Keypoints) float64 {
		n := 0
		for _, p := range k.pts {
			if p.x < kpSide*3/4 { // the image is kpSide wide
				n++
			}
		}
		return float64(n) / float64(max(1, k.Len()))
	}
	photo, evidence := keypointsOf(img, false), keypointsOf(img, true)
	// Measured: the photo 6% of 1617 keypoints, evidence 22% of 999.
	if p, e := onCloth(photo), onCloth(evidence); p > 0.1 || e < 0.15 {
		t.Errorf("on the cloth (three quarters of the image): the photo's %.0f%% of %d keypoints (want at most 10%%), evidence's %.0f%% of %d (want at least 15%%)", 100*p, photo.Len(), 100*e, evidence.Len())
	}
}
