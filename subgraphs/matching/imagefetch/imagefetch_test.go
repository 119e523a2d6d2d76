package imagefetch_test

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

func TestFetchDecodesSupportedFormats(t *testing.T) {
	tan := color.NRGBA{0xc8, 0x9b, 0x6d, 0xff}
	tests := []struct {
		name        string
		contentType string // deliberately wrong: the bytes decide
		data        []byte
		format      string
		w, h        int
	}{
		{"png", "text/html", pngBytes(t, 5, 4), "png", 5, 4},
		{"jpeg", "application/octet-stream", jpegBytes(t, 16, 9), "jpeg", 16, 9},
		{"webp lossless", "image/png", webpSolid(3, 2, tan), "webp", 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := serve(t, body(tt.contentType, tt.data))
			url := s.URL + "/band?sig=abc"
			got, err := imagefetch.New(loopback()).Fetch(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			if got.Format != tt.format || got.Width != tt.w || got.Height != tt.h || got.Bytes != len(tt.data) || got.URL != url {
				t.Errorf("got %s %dx%d, %d bytes, from %s; want %s %dx%d, %d bytes, from %s",
					got.Format, got.Width, got.Height, got.Bytes, got.URL, tt.format, tt.w, tt.h, len(tt.data), url)
			}
			if b := got.Image.Bounds(); b.Dx() != tt.w || b.Dy() != tt.h {
				t.Errorf("decoded bounds %v", b)
			}
			if tt.format == "webp" {
				if c := color.NRGBAModel.Convert(got.Image.At(1, 1)); c != tan {
					t.Errorf("webp pixel = %v, want %v", c, tan)
				}
			}
		})
	}
}

// TestFetchRefusesBlockedAddresses: none of these may be connected to. The
// loopback ones point at a live server, which must see no request; the others
// are refused before the socket connects, so the short timeout is never hit.
func TestFetchRefusesBlockedAddresses(t *testing.T) {
	s, hits := serve(t, body("image/png", pngBytes(t, 1, 1)))
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	tests := []struct {
		url, kind, addr string
	}{
		{"http://127.0.0.1:" + port + "/", "loopback", "127.0.0.1"},
		{"http://localhost:" + port + "/", "loopback", ""},
		{"http://[::1]:" + port + "/", "loopback", "::1"},
		{"http://[::ffff:127.0.0.1]:" + port + "/", "loopback", "::ffff:127.0.0.1"},
		{"http://0.0.0.0:" + port + "/", "unspecified", "0.0.0.0"},
		{"http://[::]:" + port + "/", "unspecified", "::"},
		{"http://169.254.169.254/latest/meta-data/", "link-local", "169.254.169.254"},
		{"http://[::ffff:169.254.169.254]/", "link-local", "::ffff:169.254.169.254"},
		{"http://[::ffff:a9fe:a9fe]/", "link-local", "::ffff:169.254.169.254"},
		{"http://10.0.0.1/", "private", "10.0.0.1"},
		{"http://172.16.5.4/", "private", "172.16.5.4"},
		{"http://192.168.1.1/", "private", "192.168.1.1"},
		{"http://100.64.0.1/", "carrier-grade NAT", "100.64.0.1"},
		{"http://100.100.100.200/", "carrier-grade NAT", "100.100.100.200"},
		{"http://224.0.0.1/", "multicast", "224.0.0.1"},
		{"http://255.255.255.255/", "broadcast", "255.255.255.255"},
		{"http://240.0.0.1/", "reserved", "240.0.0.1"},
		{"http://192.0.0.8/", "IETF", "192.0.0.8"},
		{"http://192.0.2.1/", "documentation", "192.0.2.1"},
		{"http://198.18.0.1/", "benchmarking", "198.18.0.1"},
		{"http://198.51.100.7/", "documentation", "198.51.100.7"},
		{"http://203.0.113.9/", "documentation", "203.0.113.9"},
		{"http://[fd00:ec2::254]/", "unique local", "fd00:ec2::254"},
		{"http://[fe80::1]/", "link-local", "fe80::1"},
		{"http://[fe80::1%25eth0]/", "link-local", "fe80::1%eth0"},
		{"http://[ff02::1]/", "multicast", "ff02::1"},
		{"http://[64:ff9b::7f00:1]/", "NAT64", "64:ff9b::7f00:1"},
		{"http://[2002:7f00:1::1]/", "6to4", "2002:7f00:1::1"},
		{"http://[2001::1]/", "Teredo", "2001::1"},
		{"http://[2001:db8::1]/", "documentation", "2001:db8::1"},
		{"http://[100::1]/", "discard", "100::1"},
		{"http://[::127.0.0.1]/", "IPv4-compatible", "::7f00:1"},
		{"http://[4000::1]/", "reserved IPv6", "4000::1"},
	}
	f := imagefetch.New(imagefetch.Config{Timeout: 2 * time.Second})
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			start := time.Now()
			_, err := f.Fetch(t.Context(), tt.url)
			wantError(t, err, imagefetch.CodeAddressBlocked, tt.kind, tt.addr, "public addresses", "VITOLA_FETCH_ALLOW_CIDRS")
			if d := time.Since(start); d > time.Second {
				t.Errorf("refusal took %v: the address was not refused before connecting", d)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server got %d requests, want none", n)
	}
}

// TestFetchAllowListIsExact: allowing 127.0.0.1/32 does not allow the rest of
// loopback or other private ranges.
func TestFetchAllowListIsExact(t *testing.T) {
	f := imagefetch.New(loopback())
	for _, url := range []string{"http://127.0.0.2/", "http://[::1]/", "http://10.0.0.1/"} {
		_, err := f.Fetch(t.Context(), url)
		wantError(t, err, imagefetch.CodeAddressBlocked)
	}
}

func TestFetchRefusesInvalidURLs(t *testing.T) {
	tests := []struct {
		name, url, mention string
	}{
		{"ftp", "ftp://example.com/band.png", `"ftp"`},
		{"file", "file:///etc/passwd", `"file"`},
		{"gopher", "gopher://127.0.0.1:70/", `"gopher"`},
		{"javascript", "javascript:alert(1)", `"javascript"`},
		{"userinfo with password", "http://user:s3cret@127.0.0.1/band.png", "user name or password"},
		{"userinfo without password", "https://user@example.com/band.png", "user name or password"},
		{"no host", "http:///band.png", "no host"},
		{"opaque", "http:example.com", "no host"},
		{"relative", "/band.png", "no scheme"},
		{"scheme-relative", "//example.com/band.png", "no scheme"},
		{"empty", "  ", "empty"},
		{"bad host", "http://[::1/", "does not parse"},
		{"too long", "https://example.com/" + strings.Repeat("a", 2048), "2048"},
	}
	f := imagefetch.New(loopback())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.Fetch(t.Context(), tt.url)
			e := wantError(t, err, imagefetch.CodeInvalidURL, tt.mention)
			if strings.Contains(e.Message, "s3cret") {
				t.Errorf("message echoes the password: %s", e.Message)
			}
		})
	}
}

func TestFetchRedirects(t *testing.T) {
	img := pngBytes(t, 2, 2)
	// /hops/N redirects to /hops/N-1; /hops/0 is the image.
	s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hops/")); {
		case strings.HasPrefix(r.URL.Path, "/to/"):
			http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
		case n > 0:
			http.Redirect(w, r, fmt.Sprintf("/hops/%d", n-1), http.StatusMovedPermanently)
		default:
			_, _ = w.Write(img)
		}
	})
	to := func(u string) string { return s.URL + "/to/?u=" + u }
	tests := []struct {
		name         string
		url          string
		maxRedirects int
		wantCode     string // "" for success
		mention      string
	}{
		{"three hops", s.URL + "/hops/3", 0, "", ""},
		{"four hops", s.URL + "/hops/4", 0, imagefetch.CodeTooManyRedirects, "more than 3"},
		{"no redirects allowed", s.URL + "/hops/1", -1, imagefetch.CodeTooManyRedirects, "more than 0"},
		{"to cloud metadata", to("http://169.254.169.254/latest/meta-data/"), 0, imagefetch.CodeAddressBlocked, "169.254.169.254"},
		{"to IPv6 loopback", to("http://[::1]/"), 0, imagefetch.CodeAddressBlocked, "::1"},
		{"to private", to("http://10.0.0.1/"), 0, imagefetch.CodeAddressBlocked, "10.0.0.1"},
		{"to ftp", to("ftp://example.com/band.png"), 0, imagefetch.CodeRedirectRefused, `"ftp"`},
		{"to file", to("file:///etc/passwd"), 0, imagefetch.CodeRedirectRefused, `"file"`},
		{"to userinfo", to("http://u:s3cret@127.0.0.1/"), 0, imagefetch.CodeRedirectRefused, "redirects"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := loopback()
			cfg.MaxRedirects = tt.maxRedirects
			got, err := imagefetch.New(cfg).Fetch(t.Context(), tt.url)
			if tt.wantCode == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got.URL != tt.url || got.Width != 2 {
					t.Errorf("got %dpx from %s", got.Width, got.URL)
				}
				return
			}
			e := wantError(t, err, tt.wantCode, tt.mention)
			if strings.Contains(e.Message, "s3cret") {
				t.Errorf("message echoes the password: %s", e.Message)
			}
		})
	}
}

func TestFetchRefusesFailures(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/band.png"
	closed.Close()

	tests := []struct {
		name    string
		handler http.HandlerFunc
		url     string // instead of the server's
		code    string
		mention []string
	}{
		{"not found", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "gone", http.StatusNotFound) }, "", imagefetch.CodeFetchFailed, []string{"404 Not Found"}},
		{"server error", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		}, "", imagefetch.CodeFetchFailed, []string{"500"}},
		{"no content", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }, "", imagefetch.CodeInvalidImage, []string{"empty"}},
		{"connection refused", nil, closedURL, imagefetch.CodeFetchFailed, []string{"127.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if tt.handler != nil {
				s, _ := serve(t, tt.handler)
				url = s.URL + "/band.png?token=secret"
			}
			_, err := imagefetch.New(loopback()).Fetch(t.Context(), url)
			e := wantError(t, err, tt.code, tt.mention...)
			if strings.Contains(e.Message, "token=secret") {
				t.Errorf("message echoes the query string: %s", e.Message)
			}
		})
	}
}

func TestFetchRefusesLargeBodies(t *testing.T) {
	img := pngBytes(t, 8, 8)
	tests := []struct {
		name     string
		maxBytes int64
		handler  http.HandlerFunc
		code     string // "" for success
	}{
		{"content-length over the limit, refused before reading", 1000, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000000")
			_, _ = w.Write(img[:10])
			w.(http.Flusher).Flush()
			stall(r) // a fetcher that read on would time out, not refuse
		}, imagefetch.CodeTooLarge},
		{"chunked over the limit", 1000, func(w http.ResponseWriter, _ *http.Request) {
			for range 4 {
				_, _ = w.Write(make([]byte, 400))
				w.(http.Flusher).Flush()
			}
		}, imagefetch.CodeTooLarge},
		{"chunked exactly at the limit", int64(len(img)), func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write(img[:10])
			w.(http.Flusher).Flush()
			_, _ = w.Write(img[10:])
		}, ""},
		{"one byte over", int64(len(img)) - 1, body("image/png", img), imagefetch.CodeTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := serve(t, tt.handler)
			cfg := loopback()
			cfg.MaxBytes = tt.maxBytes
			_, err := imagefetch.New(cfg).Fetch(t.Context(), s.URL)
			if tt.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, tt.code, "limit", strconv.FormatInt(tt.maxBytes, 10))
		})
	}
}

func TestFetchRefusesBadContent(t *testing.T) {
	jpg := jpegBytes(t, 32, 32)
	pngData := pngBytes(t, 32, 32)
	tests := []struct {
		name        string
		contentType string
		data        []byte
		maxPixels   int
		code        string
		mention     []string
	}{
		{"html served as png", "image/png", []byte("<!doctype html><html><body>hello</body></html>"), 0, imagefetch.CodeUnsupportedType, []string{"text/html", "JPEG, PNG or WebP"}},
		{"gif", "image/gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), 0, imagefetch.CodeUnsupportedType, []string{"image/gif"}},
		{"svg", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), 0, imagefetch.CodeUnsupportedType, nil},
		{"empty", "image/png", nil, 0, imagefetch.CodeInvalidImage, []string{"empty"}},
		{"truncated jpeg", "image/jpeg", jpg[:len(jpg)/2], 0, imagefetch.CodeInvalidImage, []string{"JPEG"}},
		{"truncated png", "image/png", pngData[:len(pngData)*2/3], 0, imagefetch.CodeInvalidImage, []string{"PNG"}},
		{"jpeg magic only", "image/jpeg", []byte("\xff\xd8\xff\xe0garbage"), 0, imagefetch.CodeInvalidImage, []string{"JPEG"}},
		{"webp header only", "image/webp", []byte("RIFF\x04\x00\x00\x00WEBP"), 0, imagefetch.CodeInvalidImage, []string{"WEBP"}},
		{"png header claiming 100000x100000", "image/png", pngHeader(100000, 100000), 0, imagefetch.CodeTooManyPixels, []string{"100000x100000"}},
		{"png header with a side over 16384", "image/png", pngHeader(20000, 1), 0, imagefetch.CodeTooManyPixels, []string{"20000x1", "16384"}},
		{"over a configured pixel limit", "image/png", pngData, 1000, imagefetch.CodeTooManyPixels, []string{"32x32", "1000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := serve(t, body(tt.contentType, tt.data))
			cfg := loopback()
			cfg.MaxPixels = tt.maxPixels
			_, err := imagefetch.New(cfg).Fetch(t.Context(), s.URL)
			wantError(t, err, tt.code, tt.mention...)
		})
	}
}

func TestFetchTimesOut(t *testing.T) {
	img := pngBytes(t, 4, 4)
	tests := []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"slow headers", func(_ http.ResponseWriter, r *http.Request) { stall(r) }},
		{"slow body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(img)))
			_, _ = w.Write(img[:20])
			w.(http.Flusher).Flush()
			stall(r)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := serve(t, tt.handler)
			cfg := loopback()
			cfg.Timeout = 200 * time.Millisecond
			start := time.Now()
			_, err := imagefetch.New(cfg).Fetch(t.Context(), s.URL)
			e := wantError(t, err, imagefetch.CodeFetchTimeout, "200ms")
			if !errors.Is(e, context.DeadlineExceeded) {
				t.Error("a timeout does not wrap context.DeadlineExceeded")
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestFetchCanceled(t *testing.T) {
	s, _ := serve(t, func(_ http.ResponseWriter, r *http.Request) { stall(r) })
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := imagefetch.New(loopback()).Fetch(ctx, s.URL)
	e := wantError(t, err, imagefetch.CodeFetchCanceled)
	if !errors.Is(e, context.Canceled) {
		t.Error("a canceled fetch does not wrap context.Canceled")
	}
}

func TestFetchEachKeepsRequestOrder(t *testing.T) {
	// Image i is i+1 pixels wide and answered later the earlier it is asked
	// for, so completion order is the reverse of request order.
	s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(r.URL.Query().Get("i"))
		time.Sleep(time.Duration(imagefetch.MaxURLs-i) * 15 * time.Millisecond)
		_, _ = w.Write(pngBytes(t, i+1, 1))
	})
	var urls []string
	for i := range imagefetch.MaxURLs {
		urls = append(urls, fmt.Sprintf("%s/band.png?i=%d", s.URL, i))
	}
	got := make([]*imagefetch.Image, len(urls))
	if err := imagefetch.New(loopback()).FetchEach(t.Context(), urls, func(i int, img *imagefetch.Image) error {
		got[i] = img
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var widths, wantWidths []int
	for i, img := range got {
		widths = append(widths, img.Width)
		wantWidths = append(wantWidths, i+1)
		if img.URL != urls[i] {
			t.Errorf("result %d is from %s", i, img.URL)
		}
	}
	if !reflect.DeepEqual(widths, wantWidths) {
		t.Errorf("widths = %v, want %v", widths, wantWidths)
	}
}

func TestFetchEachRefusals(t *testing.T) {
	s, hits := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		stall(r) // until FetchEach cancels it
	})
	nine := make([]string, 9)
	for i := range nine {
		nine[i] = s.URL
	}
	tests := []struct {
		name    string
		urls    []string
		code    string
		mention []string
		hits    int32 // requests the server may see; -1: any
	}{
		{"none", nil, imagefetch.CodeInvalidURLs, []string{"is required", "1 to 8"}, 0},
		{"nine", nine, imagefetch.CodeInvalidURLs, []string{"9 images", "at most 8"}, 0},
		{"an invalid URL, checked before any fetch", []string{s.URL, "ftp://example.com/x.png", s.URL}, imagefetch.CodeInvalidURL, []string{"imageUrls[1]: ", `"ftp"`}, 0},
		{"first failure cancels the rest", []string{s.URL + "/slow", s.URL + "/slow", s.URL + "/missing"}, imagefetch.CodeFetchFailed, []string{"imageUrls[2]: ", "404"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			start := time.Now()
			err := imagefetch.New(loopback()).FetchEach(t.Context(), tt.urls, func(int, *imagefetch.Image) error { return nil })
			wantError(t, err, tt.code, tt.mention...)
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v: the other fetches were not canceled", d)
			}
			if n := hits.Load() - before; tt.hits >= 0 && n != tt.hits {
				t.Errorf("server got %d requests, want %d", n, tt.hits)
			}
		})
	}
}

// The decode budget bounds the bytes held at once: a 100x100 opaque PNG
// decodes to 4 bytes a pixel and its body is held while it decodes; with room
// for one, eight are handled one after another; with room for two, at most
// two at once. An image whose share is over the whole budget is refused.
func TestDecodeBudgetBoundsHeldImages(t *testing.T) {
	s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		side, _ := strconv.Atoi(r.URL.Query().Get("side"))
		_, _ = w.Write(pngBytes(t, side, side))
	})
	one := int64(4*100*100 + len(pngBytes(t, 100, 100)))
	for _, tt := range []struct {
		name    string
		budget  int64
		side    int
		maxHeld int32 // -1: refused
	}{
		{"room for one", one + one/2, 100, 1},
		{"room for two", 2*one + one/2, 100, 2},
		{"larger than the budget", one + one/2, 200, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := loopback()
			cfg.DecodeBudget = tt.budget
			urls := make([]string, imagefetch.MaxURLs)
			for i := range urls {
				urls[i] = fmt.Sprintf("%s/band.png?side=%d&i=%d", s.URL, tt.side, i)
			}
			var held, most, done atomic.Int32
			err := imagefetch.New(cfg).FetchEach(t.Context(), urls, func(i int, img *imagefetch.Image) error {
				n := held.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(10 * time.Millisecond) // the work on the image
				held.Add(-1)
				done.Add(1)
				return nil
			})
			if tt.maxHeld < 0 {
				wantError(t, err, imagefetch.CodeTooManyPixels, "200x200", "to decode", "the limit is")
				return
			}
			if err != nil || done.Load() != imagefetch.MaxURLs {
				t.Fatalf("%d of %d images, %v", done.Load(), imagefetch.MaxURLs, err)
			}
			if most.Load() > tt.maxHeld {
				t.Errorf("%d images held at once, want at most %d", most.Load(), tt.maxHeld)
			}
		})
	}
}

func TestParseCIDRs(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"", nil, false},
		{"127.0.0.1/32, 10.0.0.0/8", []string{"127.0.0.1/32", "10.0.0.0/8"}, false},
		{" 192.168.0.0/16,,fd00::/8 ", []string{"192.168.0.0/16", "fd00::/8"}, false},
		{"127.0.0.1 ::1", []string{"127.0.0.1/32", "::1/128"}, false},
		{"10.1.2.3/8", []string{"10.0.0.0/8"}, false},
		{"::ffff:10.0.0.0/104", []string{"10.0.0.0/8"}, false},
		{"10.0.0.0/33", nil, true},
		{"localhost", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := imagefetch.ParseCIDRs(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			var gotS []string
			for _, p := range got {
				gotS = append(gotS, p.String())
			}
			if !reflect.DeepEqual(gotS, tt.want) {
				t.Errorf("got %v, want %v", gotS, tt.want)
			}
		})
	}
}

// TestFetchAllowsMappedAllowList: an allow-list written as IPv4-mapped IPv6
// still admits the IPv4 server.
func TestFetchAllowsMappedAllowList(t *testing.T) {
	s, _ := serve(t, body("image/png", pngBytes(t, 1, 1)))
	cfg := loopback()
	cfg.AllowCIDRs = []netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.0/104")}
	if _, err := imagefetch.New(cfg).Fetch(t.Context(), s.URL); err != nil {
		t.Fatal(err)
	}
}
