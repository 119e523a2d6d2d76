package imagefetch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

// loopback allows the httptest servers (127.0.0.1) and nothing else.
func loopback() imagefetch.Config {
	return imagefetch.Config{
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Timeout:    3 * time.Second,
	}
}

// serve starts a loopback server and counts the requests it gets.
func serve(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s, &hits
}

// body answers with b under the given Content-Type.
func body(contentType string, b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(b)
	}
}

// stall waits until the client gives up (or 5 s, so a broken test ends).
func stall(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
	}
}

// wantError checks err is an *imagefetch.Error with code whose message holds
// every string in contains.
func wantError(t *testing.T, err error, code string, contains ...string) *imagefetch.Error {
	t.Helper()
	var e *imagefetch.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *imagefetch.Error with code %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("code = %s (%s), want %s", e.Code, e.Message, code)
	}
	for _, s := range contains {
		if !strings.Contains(e.Message, s) {
			t.Errorf("message %q does not mention %q", e.Message, s)
		}
	}
	return e
}

func gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x * 7), uint8(y * 11), 0x80, 0xff})
		}
	}
	return img
}

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, gradient(w, h)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func jpegBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, gradient(w, h), &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pngHeader is a PNG that is nothing but its signature and an IHDR chunk
// claiming w x h RGB pixels: image.DecodeConfig reads it, a full decode fails
// (there is no IDAT), so a size refusal proves the size was checked first.
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8] = 8  // bit depth
	ihdr[9] = 2  // colour type: truecolour
	ihdr[10] = 0 // compression
	ihdr[11] = 0 // filter
	ihdr[12] = 0 // interlace
	out := []byte("\x89PNG\r\n\x1a\n")
	out = binary.BigEndian.AppendUint32(out, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	out = append(out, chunk...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(chunk)) // CRC covers type and data
}

// webpSolid hand-writes a lossless WebP (VP8L) of one colour: no transforms,
// no colour cache, and five "simple" prefix codes of one symbol each (green,
// red, blue, alpha, distance), so that every pixel takes zero bits.
func webpSolid(w, h int, c color.NRGBA) []byte {
	var bits bitWriter
	bits.write(0x2f, 8) // VP8L signature
	bits.write(uint32(w-1), 14)
	bits.write(uint32(h-1), 14)
	alpha := uint32(0)
	if c.A != 0xff {
		alpha = 1
	}
	bits.write(alpha, 1)
	bits.write(0, 3) // version
	bits.write(0, 1) // no transform
	bits.write(0, 1) // no colour cache
	bits.write(0, 1) // no meta prefix codes
	for _, sym := range []uint8{c.G, c.R, c.B, c.A, 0} {
		bits.write(1, 1) // simple code
		bits.write(0, 1) // one symbol
		bits.write(1, 1) // written in 8 bits
		bits.write(uint32(sym), 8)
	}
	payload := bits.buf
	if bits.n > 0 {
		payload = append(payload, bits.cur)
	}
	pad := len(payload) % 2
	out := []byte("RIFF")
	out = binary.LittleEndian.AppendUint32(out, uint32(4+8+len(payload)+pad))
	out = append(out, "WEBPVP8L"...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(payload)))
	out = append(out, payload...)
	if pad == 1 {
		out = append(out, 0)
	}
	return out
}

// bitWriter writes least significant bit first, as VP8L reads.
type bitWriter struct {
	buf []byte
	cur byte
	n   uint
}

func (b *bitWriter) write(v uint32, n uint) {
	for i := range n {
		b.cur |= byte((v>>i)&1) << b.n
		b.n++
		if b.n == 8 {
			b.buf = append(b.buf, b.cur)
			b.cur, b.n = 0, 0
		}
	}
}
