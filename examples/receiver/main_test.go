package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/sdk/callback"
)

// The example receiver takes a signed event once, refuses a forged one, and
// acknowledges a repeat without fulfilling it again.
func TestReceiver(t *testing.T) {
	var out bytes.Buffer
	h, err := New(filepath.Join(t.TempDir(), "r.db"), []string{"whsec_test"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := []byte(`{"id":"fev_1","type":"purchase.succeeded","createdAt":"2026-11-25T10:00:00.000Z","data":{"purchase":{"id":"pur_1","quantity":100,"resourceType":"ai_credits"},"billingAccount":{"accountReference":"key_1"}}}`)
	send := func(secret string) int {
		now := time.Now()
		req, _ := http.NewRequest("POST", srv.URL+"/hooks", bytes.NewReader(body))
		req.Header.Set(callback.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(callback.HeaderSignature, callback.Sign(secret, body, now))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := send("whsec_other"); s != http.StatusUnauthorized {
		t.Fatalf("a forged callback: %d", s)
	}
	for range 2 {
		if s := send("whsec_test"); s != http.StatusNoContent {
			t.Fatalf("a signed callback: %d", s)
		}
	}
	if got := strings.Count(out.String(), "fev_1 purchase.succeeded: 100 ai_credits for key_1"); got != 1 {
		t.Fatalf("fulfilled %d times:\n%s", got, out.String())
	}
}
