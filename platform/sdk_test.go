package platform_test

import (
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
