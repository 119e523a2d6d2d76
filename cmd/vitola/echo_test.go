package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/apierr"
)

// TestEchoedInputIsCut: a message that repeats what a client sent (an ID, a
// barcode, an origin, a query's text, a header's value) repeats at most a
// short prefix of it, over REST and GraphQL alike: a 10,000-character input
// comes back cut to apierr.MaxEcho characters and "…".
func TestEchoedInputIsCut(t *testing.T) {
	data := t.TempDir()
	addr, paymentsAddr := loopbackAddr(t), loopbackAddr(t)
	serveForTest(t, addr, "--demo", "--data", data, "--payments-addr", paymentsAddr, "--public-url", "http://"+addr)
	key := strings.TrimSpace(readFile(t, filepath.Join(data, "demo-key.txt")))
	base := "http://" + addr
	long := strings.Repeat("x", 10_000)
	prefixed := func(p string) string { return p + long[len(p):] }

	// Every message answered, REST's or GraphQL's.
	messages := func(raw []byte) []string {
		var body struct {
			Message string
			Errors  []struct{ Message string }
		}
		json.Unmarshal(raw, &body)
		out := []string{body.Message}
		for _, e := range body.Errors {
			out = append(out, e.Message)
		}
		return out
	}
	// check: no message repeats more than MaxEcho characters of the input;
	// when echoes, one repeats its first characters cut with "…".
	check := func(what string, echoes bool, res *http.Response, raw []byte) {
		t.Helper()
		ms := messages(raw)
		echoed := false
		for _, m := range ms {
			if strings.Contains(m, strings.Repeat("x", apierr.MaxEcho+1)) {
				t.Errorf("%s: %d, a message repeats more than %d characters of the input: %.200q", what, res.StatusCode, apierr.MaxEcho, m)
			}
			echoed = echoed || strings.Contains(m, strings.Repeat("x", apierr.MaxEcho/2)+"…")
		}
		if echoes && !echoed {
			t.Errorf("%s: %d, no message repeats the input's first characters and …: %q", what, res.StatusCode, ms)
		}
	}
	get := func(path string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("x-service-key", key)
		return send(t, req)
	}

	for _, tc := range []struct{ what, path string }{
		{"a cigar's ID", "/v1/cigars/" + prefixed("cig_")},
		{"a product's ID", "/v1/products/" + prefixed("prd_")},
		{"a barcode", "/v1/products/barcode/" + strings.Repeat("7", 10_000)},
		{"a venue's ID", "/venues/" + prefixed("ven_") + "/sessions"},
		{"a brand's ID", "/brands/" + prefixed("brd_") + "/sessions"},
		{"a path no route has", "/v1/" + long},
	} {
		res, raw := get(tc.path)
		if tc.what == "a barcode" {
			// A barcode's digits, not x's: look for the digits instead.
			raw = []byte(strings.ReplaceAll(string(raw), "7", "x"))
		}
		check(tc.what, true, res, raw)
	}

	// A redirect to the canonical path names where, cut.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(base + "/v1/" + long + "/./x")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	check("a path not in canonical form", true, res, raw)

	// An Origin header no publishable key lists: in a CORS preflight, and with
	// the demo widget's publishable key.
	origin := "https://" + long[:9_000] + ".example"
	req, _ := http.NewRequest("OPTIONS", base+"/venues/ven_0000000000000000/sessions", nil)
	req.Header.Set("Origin", origin)
	res, raw = send(t, req)
	check("a preflight's origin", true, res, raw)
	link, err := url.Parse(strings.TrimSpace(readFile(t, filepath.Join(data, "widget-link.txt"))))
	if err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest("GET", base+"/venues/"+link.Query().Get("venue")+"/sessions", nil)
	req.Header.Set("x-service-key", link.Query().Get("key"))
	req.Header.Set("Origin", origin)
	res, raw = send(t, req)
	check("a publishable key's origin", true, res, raw)

	// GraphQL: arguments (node and cigar answer null, the barcode's message
	// names no value) and the query's text.
	for _, tc := range []struct {
		what, query string
		echoes      bool
	}{
		{"node(id:)", `{ node(id: "` + prefixed("cig_") + `") { id } }`, false},
		{"cigar(id:)", `{ cigar(id: "` + prefixed("cig_") + `") { id } }`, false},
		{"productByBarcode", `{ productByBarcode(barcode: "` + long + `") { id } }`, false},
		{"an unknown field", `{ ` + long + ` }`, true},
		{"an unknown argument", `{ cigar(` + long + `: 1) { id } }`, true},
		{"an unknown operation name", `query A { __typename }`, true},
		{"a variable of the wrong type", `query A($id: ID!) { cigar(id: $id) { id } }`, false},
	} {
		body, _ := json.Marshal(map[string]any{"query": tc.query})
		if tc.what == "an unknown operation name" {
			body, _ = json.Marshal(map[string]any{"query": tc.query, "operationName": long})
		}
		if tc.what == "a variable of the wrong type" {
			body, _ = json.Marshal(map[string]any{"query": tc.query, "variables": map[string]any{"id": map[string]any{long: 1}}})
		}
		res, raw := postJSON(t, base+"/graphql", key, "", body)
		check("GraphQL "+tc.what, tc.echoes, res, raw)
	}
	res, raw = get("/graphql?query=" + url.QueryEscape("{ __typename }") + "&" + long + "=1")
	check("GraphQL an unknown URL parameter", true, res, raw)

	// The payments API: IDs in paths and bodies.
	line, err := admin(t, "payments", "clients", "create", "--data", data, "--name", "shop", "--return-url", "https://shop.example/paid", "--scope", "merchant_accounts:write")
	if err != nil {
		t.Fatal(err)
	}
	client := strings.Fields(line)
	calls := 0
	paymentsCall := func(method, path string, body any) (*http.Response, []byte) {
		calls++
		var b []byte
		if body != nil {
			b, _ = json.Marshal(body)
		}
		req, _ := http.NewRequest(method, "http://"+paymentsAddr+"/api/v1"+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+client[1])
		req.Header.Set("X-Service-Client-Id", client[0])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("echo-%d", calls))
		return send(t, req)
	}
	res, raw = paymentsCall("GET", "/payment-sessions/"+prefixed("pss_")+"/status", nil)
	check("a payment session's ID", true, res, raw)
	res, raw = paymentsCall("PUT", "/merchant-accounts/"+prefixed("mer_")+"/credentials", map[string]any{"credentials": map[string]any{}})
	check("a merchant account's ID", true, res, raw)
	res, raw = paymentsCall("POST", "/merchant-accounts", map[string]any{"name": "m", "gateway": long})
	check("a gateway's name", true, res, raw)
}
