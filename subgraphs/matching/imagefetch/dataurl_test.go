package imagefetch_test

import (
	"context"
	"encoding/base64"
	"image/color"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

func dataURL(media string, b []byte) string {
	return "data:" + media + ";base64," + base64.StdEncoding.EncodeToString(b)
}

// noNetwork is a Config whose every DNS lookup and dial is counted: a data
// URL must never make either.
func noNetwork(dials *atomic.Int32) imagefetch.Config {
	return imagefetch.Config{Resolver: &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		dials.Add(1)
		return nil, &net.OpError{Op: "dial"}
	}}}
}

func TestDataURLsAreDecodedWithoutTheNetwork(t *testing.T) {
	var dials atomic.Int32
	f := imagefetch.New(noNetwork(&dials))
	for _, c := range []struct {
		name, url, format string
		w, h              int
	}{
		{"png", dataURL("image/png", pngBytes(t, 40, 30)), "png", 40, 30},
		{"jpeg", dataURL("image/jpeg", jpegBytes(t, 64, 48)), "jpeg", 64, 48},
		{"webp", dataURL("image/webp", webpSolid(20, 10, color.NRGBA{200, 30, 30, 255})), "webp", 20, 10},
		// Case, parameters and a missing padding are accepted, as RFC 2397 and browsers allow.
		{"parameters and case", "DATA:Image/PNG;name=band.png;BASE64," + base64.RawStdEncoding.EncodeToString(pngBytes(t, 41, 30)), "png", 41, 30},
		// image/jpg is a common misspelling; the bytes decide the format.
		{"image/jpg", dataURL("image/jpg", jpegBytes(t, 16, 16)), "jpeg", 16, 16},
		{"declared png, holds a jpeg", dataURL("image/png", jpegBytes(t, 16, 8)), "jpeg", 16, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			img, err := f.Fetch(t.Context(), c.url)
			if err != nil {
				t.Fatal(err)
			}
			if img.Format != c.format || img.Width != c.w || img.Height != c.h {
				t.Fatalf("got %s %dx%d, want %s %dx%d", img.Format, img.Width, img.Height, c.format, c.w, c.h)
			}
		})
	}
	// In a list, beside others, through the same path as fetched images.
	var seen atomic.Int32
	urls := []string{dataURL("image/png", pngBytes(t, 8, 8)), dataURL("image/jpeg", jpegBytes(t, 8, 8))}
	if err := f.FetchEach(t.Context(), urls, func(int, *imagefetch.Image) error { seen.Add(1); return nil }); err != nil || seen.Load() != 2 {
		t.Fatalf("FetchEach of two data URLs: %v, %d images", err, seen.Load())
	}
	if n := dials.Load(); n != 0 {
		t.Fatalf("data URLs made %d DNS requests", n)
	}
}

func TestDataURLRefusals(t *testing.T) {
	var dials atomic.Int32
	cfg := noNetwork(&dials)
	cfg.MaxInlineBytes = 64 << 10
	f := imagefetch.New(cfg)
	big := make([]byte, 65<<10)
	copy(big, pngBytes(t, 8, 8))
	for _, c := range []struct {
		name, url, code string
		mention         []string
	}{
		{"not base64", "data:image/png," + strings.Repeat("%89PNG", 4), imagefetch.CodeInvalidURL, []string{"not base64-encoded", "data:image/jpeg;base64,"}},
		{"no comma", "data:image/png;base64", imagefetch.CodeInvalidURL, []string{"no comma"}},
		{"URL-safe alphabet", "data:image/png;base64,iVBORw0KGgo-_", imagefetch.CodeInvalidURL, []string{"not valid base64", `'-' at character 11`}},
		{"a space", "data:image/png;base64,iVBO Rw0K", imagefetch.CodeInvalidURL, []string{"not valid base64", "character 4"}},
		{"cut short", "data:image/png;base64,iVBORw0KG", imagefetch.CodeInvalidURL, []string{"cut short"}},
		{"text", dataURL("text/plain", []byte("a band")), imagefetch.CodeUnsupportedType, []string{`"text/plain"`, "image/jpeg, image/png or image/webp"}},
		{"no media type", "data:;base64," + base64.StdEncoding.EncodeToString(pngBytes(t, 8, 8)), imagefetch.CodeUnsupportedType, []string{"none (text/plain by default)"}},
		{"gif", dataURL("image/gif", []byte("GIF89a")), imagefetch.CodeUnsupportedType, []string{`"image/gif"`}},
		{"an image type, other bytes", dataURL("image/png", []byte("<html>a page</html>")), imagefetch.CodeUnsupportedType, []string{"data URL holds text/html"}},
		{"empty", "data:image/png;base64,", imagefetch.CodeInvalidImage, []string{"holds no image"}},
		{"too large", dataURL("image/png", big), imagefetch.CodeTooLarge, []string{"66560 bytes", "65536 bytes (64 KiB)", "http or https URL (up to 10 MiB)"}},
		{"too many pixels", dataURL("image/png", pngHeader(20000, 20000)), imagefetch.CodeTooManyPixels, []string{"20000x20000"}},
		{"truncated image", dataURL("image/png", truncated(pngBytes(t, 256, 256))), imagefetch.CodeInvalidImage, []string{"not a valid PNG"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.Fetch(t.Context(), c.url)
			wantError(t, err, c.code, c.mention...)
			// The same reference in a list names its place, and Check refuses
			// what can be told without decoding, before any work.
			urls := []string{dataURL("image/png", pngBytes(t, 8, 8)), c.url}
			err = f.FetchEach(t.Context(), urls, func(int, *imagefetch.Image) error { return nil })
			wantError(t, err, c.code, "imageUrls[1]: ")
			if cerr := f.Check(urls); cerr != nil {
				wantError(t, cerr, c.code, "imageUrls[1]: ")
			} else if c.code != imagefetch.CodeTooManyPixels && c.code != imagefetch.CodeInvalidImage && c.name != "an image type, other bytes" {
				t.Errorf("Check passed %s: it is refused without decoding", c.name)
			}
		})
	}
	// The decode budget applies to inline images as to fetched ones.
	small := imagefetch.New(imagefetch.Config{DecodeBudget: 1 << 20})
	_, err := small.Fetch(t.Context(), dataURL("image/png", pngBytes(t, 1000, 1000)))
	wantError(t, err, imagefetch.CodeTooManyPixels, "the limit is 1 MB")
	if n := dials.Load(); n != 0 {
		t.Fatalf("data URLs made %d DNS requests", n)
	}
}

func truncated(b []byte) []byte { return b[:len(b)/2] }
