package platform_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/sdk/sdktest"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// The TypeScript SDK against the real server on loopback: sdk/test/e2e.test.ts
// run by vitest, with a secret key as a server-side caller would use (browsers
// with publishable keys are the widget's test, in examples/).
func TestSDKAgainstTheServer(t *testing.T) {
	sdktest.Require(t)
	f := open(t, sqldb.Config{DataDir: t.TempDir()})
	out := sdktest.Run(t, []string{
		"VITOLA_SDK_E2E_URL=" + f.srv.URL,
		"VITOLA_SDK_E2E_KEY=" + f.key,
		"VITOLA_SDK_E2E_VENUE=" + venuesdemo.VenueID("The Ember Room"),
	}, "npx", "vitest", "run", "test/e2e.test.ts")
	// vitest exits zero when every test skips: make sure they ran.
	if !strings.Contains(out, "2 passed") {
		t.Fatalf("the end-to-end tests did not run:\n%s", out)
	}
}

// The SDK as npm publishes it: sdk/test/consumers/run.mjs packs it, installs the
// tarball into a tiny CommonJS and a tiny ESM project, type-checks both with
// tsc in strict mode and runs them against this server with a publishable key.
func TestSDKConsumers(t *testing.T) {
	sdktest.Require(t)
	f := open(t, sqldb.Config{DataDir: t.TempDir()})
	const origin = "https://shop.example"
	_, key, err := f.p.Keys.CreatePublishableKey(context.Background(), "consumers", []string{origin})
	if err != nil {
		t.Fatal(err)
	}
	type consumer struct {
		Sessions []struct{ ID, User, CreatedAt string }
		NotFound struct {
			Status int
			Code   string
		}
		UseSessions       string
		UseLiveSessions   string
		SubscribeSessions string
	}
	var seen map[string]consumer
	sdktest.RunScript(t, filepath.Join("test", "consumers", "run.mjs"), []string{
		"VITOLA_CONSUMER_URL=" + f.srv.URL,
		"VITOLA_CONSUMER_KEY=" + key,
		"VITOLA_CONSUMER_ORIGIN=" + origin,
		"VITOLA_CONSUMER_VENUE=" + venuesdemo.VenueID("The Ember Room"),
	}, &seen)
	for _, name := range []string{"cjs", "esm"} {
		c, ok := seen[name]
		t.Logf("%s: %+v", name, c)
		switch {
		case !ok:
			t.Errorf("%s: the consumer did not run: %+v", name, seen)
		case len(c.Sessions) != 3:
			t.Errorf("%s: %d sessions, want 3", name, len(c.Sessions))
		case c.NotFound.Status != 404 || c.NotFound.Code != "business_not_found":
			t.Errorf("%s: an unknown venue gave %+v, want a VitolaError 404 business_not_found", name, c.NotFound)
		case c.UseSessions != "function" || c.UseLiveSessions != "function":
			t.Errorf("%s: @vitola/sdk/react's useSessions is a %q, useLiveSessions a %q", name, c.UseSessions, c.UseLiveSessions)
		case c.SubscribeSessions != "function,function,function":
			t.Errorf("%s: subscribeSessions, the client's and a handler are %q", name, c.SubscribeSessions)
		}
		for _, s := range c.Sessions {
			if !strings.HasPrefix(s.ID, "ses_") || strings.TrimSpace(s.User) == "" || !strings.HasSuffix(s.CreatedAt, "Z") {
				t.Errorf("%s: a session %+v", name, s)
			}
		}
	}
}
