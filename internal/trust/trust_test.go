package trust_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vitolahq/vitola/internal/trust"
)

var key = []byte("0123456789abcdef0123456789abcdef")

func echoIdentity() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := trust.FromContext(r.Context())
		io.WriteString(w, id.Caller+"|"+id.KeyID+"|"+strings.Join(id.Scopes, " "))
	})
}

func TestTransportCarriesIdentityToRequire(t *testing.T) {
	v, _ := trust.NewVerifier(key)
	srv := httptest.NewServer(trust.Require(v, echoIdentity()))
	defer srv.Close()
	iss, _ := trust.NewIssuer(key, "router")
	client := &http.Client{Transport: &trust.Transport{Issuer: iss}}

	req, _ := http.NewRequest("GET", srv.URL, nil)
	req = req.WithContext(trust.WithIdentity(req.Context(), trust.Identity{KeyID: "key_1", Scopes: []string{"profile:read"}}))
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(body) != "router|key_1|profile:read" {
		t.Fatalf("got %d %q", res.StatusCode, body)
	}
	if req.Header.Get(trust.Header) != "" {
		t.Fatal("transport modified the caller's request")
	}
}

func TestRequireRejects(t *testing.T) {
	v, _ := trust.NewVerifier(key)
	srv := httptest.NewServer(trust.Require(v, echoIdentity()))
	defer srv.Close()

	otherIss, _ := trust.NewIssuer([]byte("another-key-another-key-another-k"), "router")
	forged, _ := otherIss.Token(trust.Identity{KeyID: "key_1"})
	expired, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"iss": "vitola", "aud": "vitola-subgraphs", "caller": "router",
		"exp": time.Now().Add(-time.Minute).Unix(),
	}).SignedString(key)
	none := "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJpc3MiOiJ2aXRvbGEiLCJhdWQiOiJ2aXRvbGEtc3ViZ3JhcGhzIiwiY2FsbGVyIjoicm91dGVyIiwiZXhwIjo5OTk5OTk5OTk5fQ."
	noCaller, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"iss": "vitola", "aud": "vitola-subgraphs", "exp": time.Now().Add(time.Minute).Unix(),
	}).SignedString(key)

	for name, tok := range map[string]string{
		"missing": "", "wrong key": forged, "expired": expired, "alg none": none,
		"no caller": noCaller, "garbage": "not-a-jwt",
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL, nil)
			if tok != "" {
				req.Header.Set(trust.Header, tok)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != 401 || !strings.Contains(string(body), `"error":"unauthorized"`) {
				t.Fatalf("got %d %s, want 401 JSON", res.StatusCode, body)
			}
		})
	}
}

func TestShortKeyRefused(t *testing.T) {
	if _, err := trust.NewIssuer([]byte("short"), "x"); err == nil {
		t.Fatal("NewIssuer accepted a short key")
	}
	if _, err := trust.NewVerifier([]byte("short")); err == nil {
		t.Fatal("NewVerifier accepted a short key")
	}
}

func TestTransportSignsOnlyListedHosts(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get(trust.Header))
	}))
	defer srv.Close()
	iss, _ := trust.NewIssuer(key, "router")
	for _, hosts := range []map[string]bool{{"elsewhere:1": true}, {strings.TrimPrefix(srv.URL, "http://"): true}} {
		client := &http.Client{Transport: &trust.Transport{Issuer: iss, Hosts: hosts}}
		res, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if got[0] != "" || got[1] == "" {
		t.Fatalf("tokens sent = %q, want none to the unlisted host and one to the listed", got)
	}
}

// Propagate's headers go to every host, the token only to listed ones, and
// the caller's request is left as it was.
func TestTransportPropagatesToEveryHost(t *testing.T) {
	type seen struct{ token, trace string }
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, seen{r.Header.Get(trust.Header), r.Header.Get("Traceparent")})
	}))
	defer srv.Close()
	iss, _ := trust.NewIssuer(key, "router")
	propagate := func(ctx context.Context, h http.Header) { h.Set("Traceparent", "00-trace-span-00") }
	for _, hosts := range []map[string]bool{{"elsewhere:1": true}, {strings.TrimPrefix(srv.URL, "http://"): true}} {
		tr := &trust.Transport{Issuer: iss, Hosts: hosts, Propagate: propagate}
		if !tr.Propagates() {
			t.Fatal("a transport with Propagate does not say it propagates")
		}
		req, _ := http.NewRequest("GET", srv.URL, nil)
		req.Header.Set("X-Caller", "kept")
		res, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if len(req.Header) != 1 || req.Header.Get("X-Caller") != "kept" {
			t.Fatalf("the caller's request was changed: %v", req.Header)
		}
	}
	want := []seen{{"", "00-trace-span-00"}, {got[1].token, "00-trace-span-00"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] || got[1].token == "" {
		t.Fatalf("sent %+v, want the trace context to both hosts and a token to the listed one only", got)
	}
	if (&trust.Transport{Issuer: iss}).Propagates() {
		t.Fatal("a transport without Propagate says it propagates")
	}
}
