package platform_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
)

// A start that stopped half-way through making the demo key is completed by
// the next start: the key always ends up in its file with its credits, once.
func TestDemoKeyResumesAnInterruptedStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "demo-key.txt")
	start := func(t *testing.T) (*platform.Platform, string) {
		t.Helper()
		var out bytes.Buffer
		p, err := platform.Open(ctx, platform.Options{Store: sqldb.Config{DataDir: dir}, InternalKey: internalKey, Demo: true, PublicURL: publicURL,
			DemoKeyOut: &out, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		return p, out.String()
	}
	readKey := func(t *testing.T) string {
		t.Helper()
		b, err := os.ReadFile(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	balance := func(t *testing.T, p *platform.Platform) int64 {
		t.Helper()
		k, err := p.Keys.Authenticate(ctx, readKey(t))
		if err != nil {
			t.Fatalf("the key in %s does not work: %v", keyFile, err)
		}
		a, err := p.Credits.Account(ctx, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		return a.Credits()
	}

	p, out := start(t)
	first := readKey(t)
	if !strings.Contains(out, first) || balance(t, p) != platform.DemoCredits {
		t.Fatalf("first start printed %q", out)
	}
	p.Close()

	// The key was made but its file never written: its plain text is lost, so
	// it is revoked and a new one is made.
	os.Remove(keyFile)
	p, out = start(t)
	second := readKey(t)
	if second == first || !strings.Contains(out, second) || balance(t, p) != platform.DemoCredits {
		t.Fatalf("after a lost file: printed %q", out)
	}
	if _, err := p.Keys.Authenticate(ctx, first); err == nil {
		t.Fatal("the lost demo key still works")
	}

	// The key and its file were made but the credits never granted.
	err := p.Keys.RevokeKey(ctx, second)
	_, third, err2 := p.Keys.CreateKey(ctx, platform.DemoKeyName, []string{access.EntitlementAI})
	if err != nil || err2 != nil {
		p.Close()
		t.Fatal(err, err2)
	}
	os.WriteFile(keyFile, []byte(third+"\n"), 0o600)
	p.Close()
	for range 2 { // granted once, not on every start
		p, out = start(t)
		if out != "" || balance(t, p) != platform.DemoCredits {
			t.Fatalf("resumed start printed %q, balance %d", out, balance(t, p))
		}
		p.Close()
	}
}

// A start that fails early returns its error instead of panicking while it
// closes what it opened.
func TestOpenFailsCleanly(t *testing.T) {
	if _, err := platform.Open(context.Background(), platform.Options{Store: sqldb.Config{DataDir: t.TempDir()}, PublicURL: publicURL, Logger: zerolog.Nop()}); err == nil {
		t.Fatal("a platform without an internal key opened")
	}
}
