package platform_test

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/sdk/sdktest"
)

// TestGraphiQLKeyInChromium opens GraphiQL in Debian's chromium
// (sdk/test/browser/graphiql.mjs): on this machine in --demo the key field
// holds the demo key and the schema loads at once, with no "missing
// x-service-key" error; through a proxy the field is empty and nothing is
// sent until a key is given, which is then kept in the browser until
// forgotten.
func TestGraphiQLKeyInChromium(t *testing.T) {
	sdktest.Require(t, "chromium")
	data := t.TempDir()
	p, err := platform.Open(context.Background(), platform.Options{
		Store: sqldb.Config{DataDir: data}, InternalKey: internalKey, Demo: true, DemoKeyOut: io.Discard, PublicURL: publicURL,
		Logger: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	srv := httptest.NewServer(p.API)
	t.Cleanup(srv.Close)
	demoKey, err := os.ReadFile(filepath.Join(data, "demo-key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := p.Keys.CreateKey(context.Background(), "graphiql", nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen struct {
		Demo struct {
			Value, Note     string
			Schemas         int
			Refusals        []string
			MissingKeyShown bool
		}
		Proxied struct {
			ValueBefore                         string
			PostsBefore                         int
			HintShown                           bool
			SchemasAfterUse, SchemasAfterReload int
			ValueAfterReload, ValueAfterForget  string
		}
		PageErrors []string
	}
	sdktest.RunBrowser(t, "graphiql.mjs", []string{
		"GRAPHIQL_URL=" + strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/graphql",
		"GRAPHIQL_KEY=" + key,
	}, &seen)
	t.Logf("the browser saw: %+v", seen)
	if d := seen.Demo; d.Value != strings.TrimSpace(string(demoKey)) || d.Schemas == 0 || len(d.Refusals) > 0 || d.MissingKeyShown {
		t.Errorf("on this machine in demo: %+v", d)
	}
	px := seen.Proxied
	if px.ValueBefore != "" || px.PostsBefore != 0 || !px.HintShown {
		t.Errorf("through a proxy, before a key: %+v", px)
	}
	if px.SchemasAfterUse == 0 || px.ValueAfterReload != key || px.SchemasAfterReload == 0 || px.ValueAfterForget != "" {
		t.Errorf("a key given, kept, forgotten: %+v", px)
	}
	if len(seen.PageErrors) > 0 {
		t.Errorf("page errors: %q", seen.PageErrors)
	}
}
