package imagefetch_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

// TestLargeImagesAreReduced: an image whose longer side is twice DecodeSide
// (1600 by default) or more is handed out reduced by a whole factor (here 3,
// to 1667x334), a PNG while it is read, and keeps its colours; Width and
// Height stay the original's. Smaller images are handed out as decoded.
func TestLargeImagesAreReduced(t *testing.T) {
	tan := color.NRGBA{0xc8, 0x9b, 0x6d, 0xff}
	solid16 := image.NewNRGBA64(image.Rect(0, 0, 5000, 1000))
	for y := range 1000 {
		for x := range 5000 {
			solid16.Set(x, y, tan)
		}
	}
	solid16.SetNRGBA64(0, 0, color.NRGBA64{0, 0, 0, 0}) // one transparent pixel: stored as 16-bit RGBA
	var png16 bytes.Buffer
	if err := png.Encode(&png16, solid16); err != nil {
		t.Fatal(err)
	}
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, solid16, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		data     []byte
		w, h     int // handed out
		origW    int
		tolerate int // per channel (JPEG is lossy)
	}{
		{"16-bit RGBA PNG", png16.Bytes(), 1667, 334, 5000, 0},
		{"JPEG", jpg.Bytes(), 1667, 334, 5000, 3},
		{"WebP", webpSolid(5000, 1000, tan), 1667, 334, 5000, 0},
		{"3199 px, as decoded", pngBytes(t, 3199, 20), 3199, 20, 3199, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := imagefetch.New(loopback()).Decode(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if b := got.Image.Bounds(); b.Dx() != tt.w || b.Dy() != tt.h || got.Width != tt.origW {
				t.Fatalf("handed out %v, original width %d; want %dx%d from %d", b, got.Width, tt.w, tt.h, tt.origW)
			}
			if tt.tolerate < 0 {
				return
			}
			c := color.NRGBAModel.Convert(got.Image.At(tt.w/2, tt.h/2)).(color.NRGBA)
			for i, pair := range [][2]uint8{{c.R, tan.R}, {c.G, tan.G}, {c.B, tan.B}, {c.A, tan.A}} {
				if d := int(pair[0]) - int(pair[1]); d > tt.tolerate || d < -tt.tolerate {
					t.Errorf("channel %d = %d, want %d", i, pair[0], pair[1])
				}
			}
		})
	}
}

// TestDecodeRefusesImagesOverTheBudget: an image whose decoding alone needs
// more bytes than the whole budget is refused, naming what it needs.
func TestDecodeRefusesImagesOverTheBudget(t *testing.T) {
	cfg := loopback()
	cfg.DecodeBudget = 1 << 20
	_, err := imagefetch.New(cfg).Decode(jpegBytes(t, 1200, 1000))
	wantError(t, err, imagefetch.CodeTooManyPixels, "1200x1000", "JPEG", "to decode", "the limit is 1 MB")
}
