package platform_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
)

// TestImageHardening drives the real API on loopback with what an attacker
// (or an unlucky user) sends the image routes: a blank photo is 422
// no_band_found and costs nothing, on fingerprint and identify alike; a host
// that does not exist is named in the user's terms, never with the platform's
// DNS resolver or Go's error text.
func TestImageHardening(t *testing.T) {
	f := openWith(t, sqldb.Config{DataDir: t.TempDir()}, func(o *platform.Options) { o.Logger = zerolog.Nop() })
	key, keyID := f.aiKey(t, 20)

	white := image.NewGray(image.Rect(0, 0, 1000, 1000))
	for i := range white.Pix {
		white.Pix[i] = 0xff
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, white); err != nil {
		t.Fatal(err)
	}
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(buf.Bytes()) }))
	defer host.Close()
	blank := host.URL + "/white.png"

	for _, tt := range []struct {
		name, path, body string
		status           int
		code             string
		mention          []string
	}{
		{"blank photo, fingerprint", "/v1/ai/cigars/fingerprint", fmt.Sprintf(`{"imageUrl": %q}`, blank), 422, "no_band_found", []string{"imageUrl: ", "blank"}},
		{"blank photo among others, identify", "/v1/ai/cigars/identify", fmt.Sprintf(`{"imageUrls": [%q, %q]}`, mysteryBand(t), blank), 422, "no_band_found", []string{"imageUrls[1]: ", "blank"}},
		{"no such host", "/v1/ai/cigars/fingerprint", `{"imageUrl": "http://nosuch.invalid/band.png"}`, 422, "image_fetch_failed", []string{"imageUrl: ", "nosuch.invalid"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := f.postJSON(t, tt.path, key, "k-"+strings.ReplaceAll(tt.name, " ", "-")[:10]+fmt.Sprint(len(tt.body)), tt.body)
			if r.Status != tt.status || r.code() != tt.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tt.status, tt.code)
			}
			for _, s := range tt.mention {
				if !strings.Contains(r.message(), s) {
					t.Errorf("message %q does not mention %q", r.message(), s)
				}
			}
			for _, s := range []string{"lookup ", ":53", "dial ", "tcp", "%!", "*"} {
				if strings.Contains(r.message(), s) {
					t.Errorf("message %q names an internal (%q)", r.message(), s)
				}
			}
			if b := f.balance(t, keyID); b != 20 {
				t.Errorf("balance %d after a refusal, want 20: it must cost nothing", b)
			}
		})
	}
}
