package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/payments"
)

// The example's assertions pass the payments API's own check.
func TestKeygenAndSign(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "shop")
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	if err := run([]string{"keygen", "-out", prefix}, nil, nil); err != nil {
		t.Fatal(err)
	}
	pub, _ := os.ReadFile(prefix + ".pub")
	key, err := payments.ParseAssertionKey(string(pub))
	if err != nil {
		t.Fatal(err)
	}
	const audience = "https://pay.example/api/v1"
	var out bytes.Buffer
	if err := run([]string{"sign", "-key", prefix + ".key", "-client", "pcl_shop", "-account", "customer-42", "-audience", audience}, &out, func() time.Time { return now }); err != nil {
		t.Fatal(err)
	}
	c := &payments.Client{ID: "pcl_shop", RequireAssertion: true, AssertionKeys: []payments.AssertionKey{key}}
	claims, err := payments.VerifyAssertion(strings.TrimSpace(out.String()), c, "customer-42", audience, now.Add(time.Second))
	if err != nil || claims.JTI == "" {
		t.Fatalf("the example's assertion is refused: %v", err)
	}
}
