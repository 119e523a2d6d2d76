package schema_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/vitolahq/vitola/schema"
)

func TestOpenAPIIsValid(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(schema.OpenAPI)
	if err != nil {
		t.Fatalf("openapi.yaml does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is invalid: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi version %s, want 3.1.0", doc.OpenAPI)
	}
	for _, path := range []string{"/health", "/docs", "/docs/openapi.yaml", "/graphql", "/v1/cigars/search", "/v1/cigars/resolve",
		"/v1/cigars/{id}", "/v1/products/barcode/{barcode}", "/v1/products/{id}", "/v1/me", "/v1/me/sessions", "/.well-known/jwks.json",
		"/.well-known/oauth-authorization-server", "/oauth/authorize", "/oauth/login", "/oauth/consent", "/oauth/token", "/oauth/revoke",
		"/venues/{id}/sessions", "/brands/{id}/sessions", "/v1/ai/cigars/fingerprint", "/v1/ai/cigars/fingerprint/recognize", "/v1/ai/cigars/identify", "/v1/matches"} {
		if doc.Paths.Find(path) == nil {
			t.Errorf("openapi.yaml does not describe %s", path)
		}
	}
}

func TestPaymentsOpenAPIIsValid(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(schema.PaymentsOpenAPI)
	if err != nil {
		t.Fatalf("payments-openapi.yaml does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("payments-openapi.yaml is invalid: %v", err)
	}
	for _, path := range []string{"/api/v1/billing-accounts/resolve", "/api/v1/billing-accounts/auto-reload", "/api/v1/offers", "/api/v1/payment-sessions",
		"/api/v1/payment-sessions/{id}/status", "/api/v1/merchant-accounts", "/api/v1/merchant-accounts/{id}/credentials",
		"/api/v1/payment-sessions/redeem", "/api/v1/payment-sessions/current", "/api/v1/payment-sessions/current/cancel", "/api/v1/payment-methods",
		"/api/v1/payment-methods/{id}/default", "/api/v1/payment-methods/{id}", "/api/v1/purchase-intents/{id}/confirm",
		"/api/pci/v1/payment-methods", "/checkout/{id}"} {
		if doc.Paths.Find(path) == nil {
			t.Errorf("payments-openapi.yaml does not describe %s", path)
		}
	}
}

// TestComposedConfigIsFresh recomposes graph.yaml with the pinned wgc and compares
// it with the committed router-config.json (`make compose` regenerates it).
func TestComposedConfigIsFresh(t *testing.T) {
	wgc := os.Getenv("VITOLA_WGC")
	if wgc == "" {
		wgc, _ = filepath.Abs("../.cache/tools/node_modules/.bin/wgc")
	}
	if _, err := os.Stat(wgc); err != nil {
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("wgc not installed at %s: run `make tools`", wgc)
		}
		t.Skipf("missing wgc: not installed at %s; `make test` installs it", wgc)
	}
	out := filepath.Join(t.TempDir(), "router-config.json")
	cmd := exec.Command(wgc, "router", "compose", "-i", "graph.yaml", "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wgc router compose: %v\n%s", err, b)
	}
	fresh, _ := os.ReadFile(out)
	var want, got any
	if err := json.Unmarshal(fresh, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(schema.RouterConfig, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatal("schema/router-config.json is stale: run `make compose` and commit it")
	}
}
