package restshim_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	accesssql "github.com/vitolahq/vitola/access/sqlstore"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/trust"
	restshim "github.com/vitolahq/vitola/rest-shim"
)

func call(t *testing.T, h http.Handler, method, path, key string) (int, map[string]any, http.Header) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(method, srv.URL+path, nil)
	if key != "" {
		req.Header.Set("x-service-key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var body map[string]any
	json.Unmarshal(raw, &body)
	return res.StatusCode, body, res.Header
}

func TestRequireKey(t *testing.T) {
	ctx := context.Background()
	st, err := accesssql.Open(ctx, sqldb.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys := access.NewService(st, nil)
	_, plain, _ := keys.CreateKey(ctx, "plain", nil)
	_, ai, _ := keys.CreateKey(ctx, "ai", []string{access.EntitlementAI})
	gone, goneKey, _ := keys.CreateKey(ctx, "gone", nil)
	keys.RevokeKey(ctx, gone.ID)

	var seen trust.Identity
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = trust.FromContext(r.Context())
		w.WriteHeader(204)
	})
	h := restshim.RequireKey(keys, zerolog.Nop(), access.EntitlementAI, ok)
	tests := []struct {
		name, key string
		status    int
		code      string
	}{
		{"missing", "", 401, "unauthorized"},
		{"unknown", "vk_0000000000000000_" + strings.Repeat("x", 43), 401, "unauthorized"},
		{"revoked", goneKey, 401, "unauthorized"},
		{"without the entitlement", plain, 403, "entitlement_required"},
		{"with the entitlement", ai, 204, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, hdr := call(t, h, "POST", "/", tt.key)
			if status != tt.status {
				t.Fatalf("status %d, want %d (%v)", status, tt.status, body)
			}
			if tt.code != "" {
				if body["error"] != tt.code || body["message"] == "" || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
					t.Fatalf("body %v", body)
				}
			}
		})
	}
	if !strings.HasPrefix(seen.KeyID, "key_") || len(seen.Entitlements) != 1 || seen.Entitlements[0] != access.EntitlementAI {
		t.Fatal("the key's identity did not reach the handler")
	}
}

type failingStore struct{ access.KeyStore }

func (failingStore) KeyByID(context.Context, string) (access.StoredKey, error) {
	return access.StoredKey{}, errors.New("connection refused to db.internal:5432 user=secret")
}

func TestRequireKeyStoreDownIs503WithoutDetail(t *testing.T) {
	keys := access.NewService(failingStore{}, nil)
	h := restshim.RequireKey(keys, zerolog.Nop(), "", http.NotFoundHandler())
	status, body, _ := call(t, h, "GET", "/", "vk_0000000000000000_"+strings.Repeat("x", 43))
	if status != 503 || strings.Contains(body["message"].(string), "secret") {
		t.Fatalf("%d %v", status, body)
	}
}

// TestHealth: /health is liveness, /health/ready runs the checks and names
// the one that failed, never its address or credentials.
func TestHealth(t *testing.T) {
	up := restshim.Check{Name: "catalog", Check: func(context.Context) error { return nil }}
	down := restshim.Check{Name: "users", Check: func(context.Context) error {
		return errors.New("dial tcp 10.0.0.5:5432: password=hunter2 refused")
	}}
	status, body, _ := call(t, restshim.NewServer(restshim.Deps{GraphQL: http.NotFoundHandler(), Checks: []restshim.Check{up}}), "GET", "/health/ready", "")
	if status != 200 || body["status"] != "ok" {
		t.Fatalf("ready: %d %v", status, body)
	}
	// Liveness checks nothing: a store down leaves /health at 200.
	degraded := restshim.NewServer(restshim.Deps{GraphQL: http.NotFoundHandler(), Checks: []restshim.Check{up, down}})
	if status, body, _ := call(t, degraded, "GET", "/health", ""); status != 200 || body["status"] != "ok" || body["components"] != nil {
		t.Fatalf("liveness with a store down: %d %v", status, body)
	}
	status, body, _ = call(t, degraded, "GET", "/health/ready", "")
	raw, _ := json.Marshal(body)
	if status != 503 || body["status"] != "degraded" || strings.Contains(string(raw), "hunter2") {
		t.Fatalf("degraded: %d %s", status, raw)
	}
	comps := body["components"].(map[string]any)
	if comps["catalog"].(map[string]any)["status"] != "ok" || comps["users"].(map[string]any)["status"] != "unavailable" {
		t.Fatalf("components %v", comps)
	}
}

func TestUnknownRouteIsJSON404(t *testing.T) {
	status, body, _ := call(t, restshim.NewServer(restshim.Deps{GraphQL: http.NotFoundHandler()}), "GET", "/v1/nothing-here", "")
	if status != 404 || body["error"] != "not_found" || body["message"] == "" {
		t.Fatalf("%d %v", status, body)
	}
}

func TestDocsAreServedAnonymously(t *testing.T) {
	doc := []byte("openapi: 3.1.0\n")
	h := restshim.NewServer(restshim.Deps{GraphQL: http.NotFoundHandler(), OpenAPI: doc})
	for _, path := range []string{"/docs", "/docs/openapi.yaml"} {
		if status, _, _ := call(t, h, "GET", path, ""); status != 200 {
			t.Errorf("%s: %d", path, status)
		}
	}
}
