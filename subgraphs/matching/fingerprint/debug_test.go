package fingerprint

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

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
	for i, bl := range pairs {
		band := bandart.Render(bandart.DesignFor(bl[0], bl[1]), 800)
		for _, lv := range []bandart.Level{bandart.Mild, bandart.Strong} {
			for s := range 2 {
				ph := bandart.Photo(band, lv, int64(s+10*i))
				rgb, scale := downscale(ph, workSide)
				b := locate(toLab(rgb))
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
				col := int(lv-1)*2 + s
				for y := range 240 {
					for x := range 320 {
						sheet.Set(col*320+x, i*240+y, out.At(x*3+1, y*3+1))
					}
				}
				t.Logf("%d %v %d conf %.2f angle %.1f", i, lv, s, b.conf, b.angle*180/3.14159)
			}
		}
	}
	fh, _ := os.Create(filepath.Join(dir, fmt.Sprintf("loc-%s.png", os.Getenv("VITOLA_FP_DEBUG_NAME"))))
	_ = png.Encode(fh, sheet)
	fh.Close()
}
