package fingerprint

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
)

// TestDebugLocate draws the located band on sample photos into the
// directory VITOLA_FP_DEBUG.
func TestDebugLocate(t *testing.T) {
	dir := os.Getenv("VITOLA_FP_DEBUG")
	if dir == "" {
		t.Skip("set VITOLA_FP_DEBUG=dir")
	}
	sheet := image.NewRGBA(image.Rect(0, 0, 4*320, 6*240))
	pairs := [][2]string{{"Oliva", "Serie V"}, {"Arturo Fuente", "Hemingway"}, {"Cohiba", "Behike"}, {"Padrón", "1964 Anniversary Series"}, {"Ashton", "VSG"}, {"Camacho", "Corojo"}}
	if os.Getenv("VITOLA_FP_DEBUG_SEED") != "" {
		for i := range pairs {
			pairs[i][1] += " " + os.Getenv("VITOLA_FP_DEBUG_SEED")
		}
	}
	for i, bl := range pairs {
		band := bandart.Render(bandart.DesignFor(bl[0], bl[1]), 800)
		for _, lv := range []bandart.Level{bandart.Strong} {
			for s := range 4 {
				ph, tr := bandart.PhotoWithTruth(band, lv, int64(s+10*i))
				rgb, scale := downscale(ph, workSide)
				lab := toLab(rgb)
				locateMode = 1
				b := locate(lab)
				cb, cq := locateCigar(lab)
				out := image.NewRGBA(ph.Rect)
				copy(out.Pix, ph.Pix)
				red := color.RGBA{255, 0, 0, 255}
				for k := 0; k < 400; k++ {
					f := float64(k)/200 - 1
					for _, uv := range [][2]float64{{f * b.halfW, -b.halfH}, {f * b.halfW, b.halfH}, {-b.halfW, f * b.halfH}, {b.halfW, f * b.halfH}} {
						x, y := b.point(uv[0], uv[1])
						for dy := -2; dy <= 2; dy++ {
							for dx := -2; dx <= 2; dx++ {
								out.Set(int(x*scale)+dx, int(y*scale)+dy, red)
							}
						}
					}
				}
				green := color.RGBA{0, 255, 0, 255}
				for k := range 4 {
					a, c := tr.Corners[k], tr.Corners[(k+1)%4]
					for f := 0.0; f <= 1; f += 0.002 {
						out.Set(int(a[0]+(c[0]-a[0])*f), int(a[1]+(c[1]-a[1])*f), green)
						out.Set(int(a[0]+(c[0]-a[0])*f)+1, int(a[1]+(c[1]-a[1])*f), green)
						out.Set(int(a[0]+(c[0]-a[0])*f), int(a[1]+(c[1]-a[1])*f)+1, green)
					}
				}
				col := s
				for y := range 240 {
					for x := range 320 {
						sheet.Set(col*320+x, i*240+y, out.At(x*3+1, y*3+1))
					}
				}
				t.Logf("%d %v %d conf %.2f angle %.1f cigar q %.2f angle %.1f truth %.1f", i, lv, s, b.conf, b.angle*180/3.14159, cq, cb.angle*180/3.14159, tr.Angle)
				_ = cb
			}
		}
	}
	fh, _ := os.Create(filepath.Join(dir, fmt.Sprintf("loc-%s.png", os.Getenv("VITOLA_FP_DEBUG_NAME"))))
	_ = png.Encode(fh, sheet)
	fh.Close()
}

// TestDebugFailures draws the first strong photos whose band is badly
// located (as the accuracy benchmark makes them) into VITOLA_FP_DEBUG.
func TestDebugFailures(t *testing.T) {
	dir := os.Getenv("VITOLA_FP_DEBUG")
	if dir == "" {
		t.Skip("set VITOLA_FP_DEBUG=dir")
	}
	facts, _ := catalogdemo.LoadFacts()
	sheet := image.NewRGBA(image.Rect(0, 0, 4*320, 6*240))
	n := 0
	for li := 0; li < len(facts.Lines) && n < 24; li += 3 {
		l := facts.Lines[li]
		band := bandart.Render(bandart.DesignFor(l.Brand, l.Name), 800)
		for k := range 4 {
			if n >= 24 {
				break
			}
			ph, tr := bandart.PhotoWithTruth(band, bandart.Strong, int64(li*1000+k))
			fp, _ := Compute(ph, Options{})
			e := locError(fp, tr, ph.Rect.Dx(), ph.Rect.Dy())
			if e < 0.25 {
				continue
			}
			out := image.NewRGBA(ph.Rect)
			copy(out.Pix, ph.Pix)
			red, green := color.RGBA{255, 0, 0, 255}, color.RGBA{0, 255, 0, 255}
			line := func(a, c [2]float64, col color.RGBA) {
				for f := 0.0; f <= 1; f += 0.002 {
					for d := -1; d <= 1; d++ {
						out.Set(int(a[0]+(c[0]-a[0])*f)+d, int(a[1]+(c[1]-a[1])*f), col)
						out.Set(int(a[0]+(c[0]-a[0])*f), int(a[1]+(c[1]-a[1])*f)+d, col)
					}
				}
			}
			for i := range 4 {
				line(tr.Corners[i], tr.Corners[(i+1)%4], green)
				a, c := fp.Band.Corners[i], fp.Band.Corners[(i+1)%4]
				line([2]float64{a[0] * 960, a[1] * 720}, [2]float64{c[0] * 960, c[1] * 720}, red)
			}
			for y := range 240 {
				for x := range 320 {
					sheet.Set((n%4)*320+x, (n/4)*240+y, out.At(x*3+1, y*3+1))
				}
			}
			t.Logf("%d: line %d photo %d err %.2f conf %.2f", n, li, k, e, fp.Band.Confidence)
			n++
		}
	}
	fh, _ := os.Create(filepath.Join(dir, "fail.png"))
	_ = png.Encode(fh, sheet)
	fh.Close()
}
