package matcher_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/identify"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
	"github.com/vitolahq/vitola/subgraphs/matching/matcher"
)

// serveImages serves each image at /NAME on loopback.
func serveImages(t testing.TB, images map[string][]byte) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := images[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodeJPEG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 75}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// plain is a w x h image of c, each pixel off by up to ±jitter in each
// channel (sensor noise on a white page).
func plain(w, h int, c color.RGBA, jitter int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(img.Pix); i += 4 {
		for k, v := range []uint8{c.R, c.G, c.B} {
			d := 0
			if jitter > 0 {
				d = rng.IntN(2*jitter+1) - jitter
			}
			img.Pix[i+k] = uint8(min(255, max(0, int(v)+d)))
		}
		img.Pix[i+3] = 255
	}
	return img
}

type noCatalog struct{}

func (noCatalog) Resolve(context.Context, string, int) (*identify.TextResult, error) {
	return &identify.TextResult{}, nil
}
func (noCatalog) Cigars(context.Context, []string) (map[string]identify.Cigar, error) {
	return map[string]identify.Cigar{}, nil
}

// TestBlankPhotoIsNoBand: a photo with no band at all (a white page, a grey
// wall, JPEG noise on white) is ErrNoBand, named by its index, in both
// fingerprint and identify; it used to be fingerprinted as if its noise were
// a band (and charged). A band photo beside it is still described.
func TestBlankPhotoIsNoBand(t *testing.T) {
	white := color.RGBA{255, 255, 255, 255}
	base := serveImages(t, map[string][]byte{
		"band.png":        encodePNG(t, bandart.StudioPhoto("Padrón", "1964 Anniversary")),
		"white.png":       encodePNG(t, plain(1000, 1000, white, 0)),
		"noisy.jpg":       encodeJPEG(t, plain(1000, 1000, white, 3)),
		"grey.png":        encodePNG(t, plain(640, 480, color.RGBA{128, 128, 128, 255}, 1)),
		"transparent.png": encodePNG(t, image.NewNRGBA(image.Rect(0, 0, 800, 600))),
	})
	m := &matcher.Matcher{
		Fetch:   imagefetch.New(imagefetch.Config{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}),
		Sealer:  matching.NewSealer([]byte("0123456789abcdef0123456789abcdef")),
		Catalog: noCatalog{},
	}
	if _, err := m.Fingerprint(t.Context(), []string{base + "/band.png"}); err != nil {
		t.Fatalf("a band photo: %v", err)
	}
	for _, name := range []string{"white.png", "noisy.jpg", "grey.png", "transparent.png"} {
		t.Run(name, func(t *testing.T) {
			urls := []string{base + "/band.png", base + "/" + name}
			_, err := m.Fingerprint(t.Context(), urls)
			wantNoBand(t, err)
			_, err = m.Identify(t.Context(), matcher.IdentifyInput{ImageURLs: urls, Limit: 3, Mode: identify.Auto, Profile: identify.Quick})
			wantNoBand(t, err)
		})
	}
}

func wantNoBand(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, matcher.ErrNoBand) {
		t.Fatalf("error = %v, want ErrNoBand", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "imageUrls[1]: ") || !strings.Contains(msg, "blank") {
		t.Errorf("message %q should name the photo (imageUrls[1]) and say it is blank", msg)
	}
}
