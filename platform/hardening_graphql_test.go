package platform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/router/limits"
)

// The GraphQL attacks of issue 17 against the whole public API on loopback:
// documents a parser would take seconds and gigabytes to build are refused
// before one is built, and introspection answers aliases.
func TestGraphQLHardening(t *testing.T) {
	p, err := platform.Open(context.Background(), platform.Options{
		Store: sqldb.Config{DataDir: t.TempDir()}, InternalKey: internalKey, Demo: true, Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(p.API)
	defer srv.Close()
	_, key, err := p.Keys.CreateKey(context.Background(), "attacker", nil)
	if err != nil {
		t.Fatal(err)
	}
	post := func(t *testing.T, body []byte) (int, gqlResponse) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/graphql-response+json") // refusals answer 400
		req.Header.Set("x-service-key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var out gqlResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("response is not JSON (%d): %.300s", res.StatusCode, raw)
		}
		return res.StatusCode, out
	}
	nested := func(levels int) []byte {
		b, _ := json.Marshal(map[string]string{"query": `{ brands(after: ` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `) { edges { cursor } } }`})
		return b
	}
	limit := func(r gqlResponse) any {
		if len(r.Errors) == 0 {
			return nil
		}
		return at(r.Errors[0], "extensions", "limit")
	}

	t.Run("a list nested 520,000 deep in 1 MB is refused unread", func(t *testing.T) {
		if status, r := post(t, nested(520_000)); status != http.StatusRequestEntityTooLarge || limit(r) != "body bytes" {
			t.Fatalf("%d %v", status, r.Errors)
		}
	})
	t.Run("a list nested 65 deep is refused before parsing", func(t *testing.T) {
		status, r := post(t, nested(limits.Defaults().MaxNesting-1))
		if status != http.StatusBadRequest || code(r) != limits.CodeTooLarge || limit(r) != "nesting" {
			t.Fatalf("%d %v", status, r.Errors)
		}
	})
	t.Run("deep variables are refused before decoding", func(t *testing.T) {
		body := []byte(`{"query": "query($a: String) { brands(after: $a) { edges { cursor } } }", "variables": {"a": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`)
		if status, r := post(t, body); status != http.StatusBadRequest || code(r) != limits.CodeTooLarge || limit(r) != "nesting" {
			t.Fatalf("%d %v", status, r.Errors)
		}
	})
	t.Run("introspection answers aliases", func(t *testing.T) {
		b, _ := json.Marshal(map[string]string{"query": `{ __schema { a: types { n: name } } }`})
		status, r := post(t, b)
		if status != http.StatusOK || len(r.Errors) > 0 || at(any(r.Data), "__schema", "a", 0, "n") != "Query" {
			t.Fatalf("%d %v %v", status, r.Errors, r.Data)
		}
	})
}
