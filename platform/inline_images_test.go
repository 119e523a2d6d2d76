package platform_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// servedBand fetches a demo band photo as anyone can, from /examples/bands/.
func (f *fixture) servedBand(t *testing.T, name string) []byte {
	t.Helper()
	res, err := http.Get(f.srv.URL + "/examples/bands/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("GET /examples/bands/%s: %d %s", name, res.StatusCode, res.Header.Get("Content-Type"))
	}
	return b
}

func dataURL(media string, b []byte) string {
	return "data:" + media + ";base64," + base64.StdEncoding.EncodeToString(b)
}

// Image matching tried offline, as README's example does: a demo band photo
// the platform serves, sent inline as a data URL, is fingerprinted,
// recognized and identified, a match; a bad data URL is refused, for free,
// with a code and a message naming the field.
func (f *fixture) testInlineImages(t *testing.T) {
	key, id := f.aiKey(t, 20)
	padron := f.servedBand(t, "padron-1964-anniversary.jpg")
	exclusivo := catalog.CigarID("Padrón", "1964 Anniversary Series Exclusivo")
	body := fmt.Sprintf(`{"imageUrl": %q}`, dataURL("image/jpeg", padron))

	r := f.postJSON(t, "/v1/ai/cigars/identify", key, "inline-identify", body)
	var got identified
	json.Unmarshal(r.Body, &got)
	if r.Status != 200 || got.Status != "matched" || got.Match == nil || got.Match.ID != exclusivo || got.Metadata.ImageCount != 1 ||
		r.Header.Get("X-Service-Ai-Credits-Remaining") != "18" {
		t.Fatalf("identify of an inline demo band: %d %s", r.Status, r.Body)
	}

	fp := f.postJSON(t, "/v1/ai/cigars/fingerprint", key, "inline-fingerprint", body)
	if fp.Status != 200 || fp.Header.Get("X-Service-Ai-Credits-Remaining") != "17" {
		t.Fatalf("fingerprint of an inline demo band: %d %s", fp.Status, fp.Body)
	}
	rec := f.postJSON(t, "/v1/ai/cigars/fingerprint/recognize", f.key, "", fmt.Sprintf(`{"fingerprint": %s}`, fp.Body))
	var cands struct {
		Candidates []struct{ ID string }
		Meta       struct{ Limit int }
	}
	json.Unmarshal(rec.Body, &cands)
	if rec.Status != 200 || len(cands.Candidates) != 5 || cands.Candidates[0].ID != exclusivo || cands.Meta.Limit != 5 {
		t.Fatalf("recognize of an inline demo band: %d %s", rec.Status, rec.Body)
	}

	// Eight inline photos of the largest size fit one body: these are
	// refused by matching (they are not images), not by the body limit.
	big := base64.StdEncoding.EncodeToString(make([]byte, 1<<20))
	eight := make([]string, 8)
	for i := range eight {
		eight[i] = "data:image/png;base64," + big
	}
	many, _ := json.Marshal(map[string]any{"imageUrls": eight, "prompt": strings.Repeat("é", 2000)})
	if r := f.postJSON(t, "/v1/ai/cigars/identify", key, "inline-eight", string(many)); r.Status != 422 || r.code() != "unsupported_image_type" ||
		!strings.HasPrefix(r.message(), "imageUrls[") {
		t.Errorf("eight inline images of 1 MiB (a %d-byte body): %d %.300s, want 422 unsupported_image_type", len(many), r.Status, r.Body)
	}

	for _, c := range []struct {
		name, url, code, mention string
		status                   int
	}{
		{"not base64", "data:image/jpeg," + strings.Repeat("%FF", 10), "invalid_image_url", "not base64-encoded", 400},
		{"not of the base64 alphabet", "data:image/jpeg;base64,/9j/4AAQ SkZJRg==", "invalid_image_url", "not valid base64", 400},
		{"a media type that is not an image", dataURL("text/html", []byte("<p>a band</p>")), "unsupported_image_type", `"text/html"`, 422},
		{"an image type holding no image", dataURL("image/png", []byte("<p>a band</p>")), "unsupported_image_type", "data URL holds text/html", 422},
		{"too big", dataURL("image/jpeg", append(padron, make([]byte, 1<<20)...)), "image_too_large", "an inline image may have 1048576 bytes (1 MiB)", 422},
		{"too many pixels", dataURL("image/png", pngClaiming(9000, 9000)), "image_too_many_pixels", "9000x9000 pixels", 422},
	} {
		for _, field := range []string{"imageUrl", "imageUrls"} {
			b := fmt.Sprintf(`{"imageUrl": %q}`, c.url)
			prefix := "imageUrl: "
			if field == "imageUrls" {
				b = fmt.Sprintf(`{"imageUrls": [%q, %q]}`, dataURL("image/jpeg", padron), c.url)
				prefix = "imageUrls[1]: "
			}
			for _, path := range []string{"/v1/ai/cigars/fingerprint", "/v1/ai/cigars/identify", "/v1/matches"} {
				idem := fmt.Sprintf("inline-bad-%d", crc32.ChecksumIEEE([]byte(c.name+field+path)))
				r := f.postJSON(t, path, key, idem, b)
				if r.Status != c.status || r.code() != c.code || !strings.HasPrefix(r.message(), prefix) || !strings.Contains(r.message(), c.mention) {
					t.Errorf("%s in %s to %s: %d %.300s, want %d %s naming %s and saying %q", c.name, field, path, r.Status, r.Body, c.status, c.code, prefix, c.mention)
				}
			}
		}
	}
	if b := f.balance(t, id); b != 17 {
		t.Fatalf("balance %d after refused inline images, want 17 (refusals are free)", b)
	}
}

// pngClaiming is a PNG header claiming w x h pixels, and nothing else: the
// size is refused before anything is decoded.
func pngClaiming(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, w), h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0)
	chunk := append([]byte("IHDR"), ihdr...)
	out := binary.BigEndian.AppendUint32([]byte("\x89PNG\r\n\x1a\n"), uint32(len(ihdr)))
	out = append(out, chunk...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(chunk))
}
