package webui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/vitolahq/vitola/webui"
)

// checkoutServer mounts the checkout page as the payments origin does;
// frameOrigins answers from origins and records the sessions asked about.
func checkoutServer(t *testing.T, origins map[string][]string) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	h := webui.CheckoutHandler(func(_ context.Context, id string) []string {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, id)
		return origins[id]
	})
	mux := http.NewServeMux()
	mux.Handle("GET /checkout/{id}", h)
	mux.Handle("GET /checkout/assets/{file}", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

const checkoutBaseCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors "

func TestCheckoutPageHeaders(t *testing.T) {
	srv, asked := checkoutServer(t, map[string][]string{
		"pss_shop":  {"https://shop.example", "http://localhost:3000"},
		"pss_bad":   {"https://shop.example/path", "https://x.example; script-src *", "javascript:alert(1)", "*", "https://ok.example", "https://a.example 'unsafe-inline'"},
		"pss_empty": {},
	})
	for _, tt := range []struct {
		id, ancestors string
	}{
		{"pss_shop", "https://shop.example http://localhost:3000"},
		{"pss_bad", "https://ok.example"}, // anything but an exact origin is dropped
		{"pss_empty", "'none'"},
		{"pss_unknown", "'none'"},
	} {
		t.Run(tt.id, func(t *testing.T) {
			for _, method := range []string{"GET", "HEAD"} {
				res := do(t, srv, method, "/checkout/"+tt.id, nil)
				if res.status != 200 || res.header.Get("Content-Type") != ctHTML {
					t.Fatalf("%s: %d %s", method, res.status, res.header.Get("Content-Type"))
				}
				if got := res.header.Get("Content-Security-Policy"); got != checkoutBaseCSP+tt.ancestors {
					t.Errorf("%s: CSP = %q, want frame-ancestors %s", method, got, tt.ancestors)
				}
				for k, want := range map[string]string{"Referrer-Policy": "no-referrer", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "", "ETag": ""} {
					if got := res.header.Get(k); got != want {
						t.Errorf("%s: %s = %q, want %q", method, k, got, want)
					}
				}
				if method == "HEAD" && len(res.body) != 0 {
					t.Errorf("HEAD answered a %d-byte body", len(res.body))
				}
			}
		})
	}
	if got := asked(); len(got) != 8 || got[0] != "pss_shop" {
		t.Errorf("frameOrigins was asked about %q", got)
	}
}

func TestCheckoutRoutes(t *testing.T) {
	srv, asked := checkoutServer(t, nil)
	// The handler alone, for what the mux's method patterns do not reach.
	bare := httptest.NewServer(webui.CheckoutHandler(func(context.Context, string) []string { return nil }))
	t.Cleanup(bare.Close)
	for _, tt := range []struct {
		srv              *httptest.Server
		method, path     string
		wantStatus       int
		wantErr, wantAll string
	}{
		{bare, "POST", "/checkout/pss_x", 405, "method_not_allowed", "GET, HEAD"},
		{bare, "GET", "/checkout/", 404, "not_found", ""},
		{bare, "GET", "/checkout/a%20b", 404, "not_found", ""},
		{bare, "GET", "/checkout/" + strings.Repeat("x", 65), 404, "not_found", ""},
		{bare, "GET", "/checkout/pss_x/more", 404, "not_found", ""},
		{srv, "GET", "/checkout/assets/nope.js", 404, "not_found", ""},
		{srv, "GET", "/checkout/assets/vitola-docs.0000.js", 404, "not_found", ""},
		{bare, "GET", "/checkout/assets", 404, "not_found", ""},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			res := do(t, tt.srv, tt.method, tt.path, nil)
			var e map[string]string
			json.Unmarshal(res.body, &e)
			if res.status != tt.wantStatus || e["error"] != tt.wantErr || e["message"] == "" || res.header.Get("Allow") != tt.wantAll {
				t.Errorf("%d %s (Allow %q)", res.status, res.body, res.header.Get("Allow"))
			}
		})
	}
	if got := asked(); len(got) != 0 {
		t.Errorf("frameOrigins was asked about %q for no page", got)
	}
}

var (
	inlineStyle = regexp.MustCompile(`(?i)<style|\sstyle=|\son[a-z]+=|javascript:`)
	inputTag    = regexp.MustCompile(`<input id="([^"]+)"[^>]*>`)
)

// The page loads its one script and one stylesheet from this origin, has
// nothing inline (the CSP would refuse it), and labels every input.
func TestCheckoutPageContent(t *testing.T) {
	srv, _ := checkoutServer(t, nil)
	page := do(t, srv, "GET", "/checkout/pss_x", nil)
	html := string(page.body)
	assets := map[string]int{}
	for _, u := range refs(t, srv, "/checkout/pss_x", page.body) {
		if u.Path == "/checkout/pss_x" { // href="#" of links the script fills
			continue
		}
		if u.Scheme+"://"+u.Host != srv.URL {
			t.Errorf("the page refers to another host: %s", u)
			continue
		}
		res := do(t, srv, "GET", u.RequestURI(), nil)
		ext := path.Ext(u.Path)
		if res.status != 200 || !strings.HasPrefix(u.Path, "/checkout/assets/vitola-checkout.") || !strings.Contains(res.header.Get("Cache-Control"), "immutable") {
			t.Errorf("%s: %d %s", u.Path, res.status, res.header.Get("Cache-Control"))
		}
		if want := map[string]string{".js": ctJS, ".css": ctCSS}[ext]; res.header.Get("Content-Type") != want {
			t.Errorf("%s: Content-Type %q", u.Path, res.header.Get("Content-Type"))
		}
		if m := absoluteURL.Find(res.body); m != nil {
			t.Errorf("%s holds an absolute URL: %q", u.Path, m)
		}
		assets[ext]++
	}
	if assets[".js"] != 1 || assets[".css"] != 1 {
		t.Errorf("the page loads %v, want one script and one stylesheet", assets)
	}
	if m := absoluteURL.FindString(html); m != "" {
		t.Errorf("the page holds an absolute URL: %q", m)
	}
	if m := inlineStyle.FindString(html); m != "" {
		t.Errorf("the page has inline style or script: %q", m)
	}
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(html, -1) {
		if !strings.Contains(m, " src=") {
			t.Errorf("an inline script: %q", m)
		}
	}
	inputs := inputTag.FindAllStringSubmatch(html, -1)
	if len(inputs) != 5 {
		t.Fatalf("%d inputs, want 5", len(inputs))
	}
	for _, in := range inputs {
		if !strings.Contains(html, `<label for="`+in[1]+`"`) {
			t.Errorf("input %s has no label", in[1])
		}
	}
	for _, want := range []string{`autocomplete="cc-number"`, `autocomplete="cc-exp"`, `autocomplete="cc-csc"`, `autocomplete="cc-name"`,
		`inputmode="numeric"`, `role="alert"`, `aria-live="polite"`, `<form id="add-card" class="add-card" method="post"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// The card form is hidden until the script shows the checkout: without
	// the script it cannot be submitted.
	if !strings.Contains(html, `<section data-view="checkout" hidden>`) {
		t.Error("the checkout view is not hidden before the script runs")
	}
}
