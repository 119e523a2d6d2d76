package subgraph_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// TestHealthAndReady: a subgraph's /health is liveness (200 with its store
// closed); /health/ready answers 200 while the store answers, 503 once it
// is closed.
func TestHealthAndReady(t *testing.T) {
	db, err := sqldb.Open(context.Background(), sqldb.Config{DataDir: t.TempDir()}, "readytest",
		fstest.MapFS{"00001_t.sql": {Data: []byte("-- +goose Up\nCREATE TABLE t (id INTEGER);\n")}})
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := trust.NewVerifier([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	h := subgraph.Handler("catalog", http.NotFoundHandler(), verifier, db)
	status := func(path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code
	}
	if status("/health") != 200 || status("/health/ready") != 200 {
		t.Fatalf("open store: /health %d, /health/ready %d", status("/health"), status("/health/ready"))
	}
	db.Close()
	if status("/health") != 200 || status("/health/ready") != 503 {
		t.Fatalf("closed store: /health %d (want 200), /health/ready %d (want 503)", status("/health"), status("/health/ready"))
	}
}
