package imagefetch_test

import (
	"bytes"
	"image"
	"image/color"
	_ "image/jpeg" // image.DecodeConfig, the reference
	"image/png"
	"testing"

	_ "golang.org/x/image/webp"

	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

// FuzzImageSniff feeds the image intake (sniffing, header checks, the
// byte-counted decode, reduced decoding) anything: it never panics, never
// accepts an image over the pixel or side limits, hands out at most
// under twice DecodeSide a side, and agrees with image.DecodeConfig about the size of
// anything it accepts. Seeds: small PNGs of every colour model, Adam7, a
// JPEG, a lossless WebP, and headers claiming huge sizes.
//
//	go test -run '^$' -fuzz FuzzImageSniff -fuzztime 60s ./subgraphs/matching/imagefetch/
func FuzzImageSniff(f *testing.F) {
	const maxPixels, side = 1 << 18, 32
	for _, img := range []image.Image{
		gradient(40, 30),
		image.NewGray(image.Rect(0, 0, 50, 3)),
		image.NewGray16(image.Rect(0, 0, 3, 50)),
		image.NewNRGBA64(image.Rect(0, 0, 33, 33)),
		image.NewPaletted(image.Rect(0, 0, 64, 2), color.Palette{color.Black, color.White, color.Transparent}),
	} {
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add(jpegBytes(f, 48, 20))
	f.Add(webpSolid(40, 7, color.NRGBA{1, 2, 3, 4}))
	f.Add(pngHeader(100000, 100000))
	f.Add(pngHeader(512, 512))
	f.Add([]byte("\xff\xd8\xff\xc2\x00\x11\x08\xff\xff\xff\xff\x03\x01\x11\x00\x02\x11\x01\x03\x11\x01"))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x10\x00\x00\x00\xff\xff\xff\xff\xff\xff"))
	cfg := loopback()
	cfg.MaxPixels, cfg.DecodeSide, cfg.DecodeBudget = maxPixels, side, 64<<20
	fetcher := imagefetch.New(cfg)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := fetcher.Decode(data)
		ref, _, refErr := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			if got != nil {
				t.Fatal("a refusal handed out an image")
			}
			return
		}
		if got.Width > imagefetch.MaxSide || got.Height > imagefetch.MaxSide || got.Width*got.Height > maxPixels {
			t.Fatalf("accepted %dx%d, over the limits", got.Width, got.Height)
		}
		if b := got.Image.Bounds(); b.Dx() >= 2*side || b.Dy() >= 2*side || b.Dx() < 1 || b.Dy() < 1 {
			t.Fatalf("handed out %v, %d or more a side", b, 2*side)
		}
		if refErr != nil {
			t.Fatalf("accepted %dx%d %s that image.DecodeConfig refuses: %v", got.Width, got.Height, got.Format, refErr)
		}
		if ref.Width != got.Width || ref.Height != got.Height {
			t.Fatalf("size %dx%d, image.DecodeConfig says %dx%d", got.Width, got.Height, ref.Width, ref.Height)
		}
	})
}
