package examples_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/examples"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/sdk/sdktest"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// The widget serves the SDK's current browser bundle: `make widget` refreshes it.
func TestWidgetBundleIsFresh(t *testing.T) {
	sdktest.Require(t)
	built, err := os.ReadFile(filepath.Join(sdktest.Dir(), "dist", "index.js"))
	if err != nil {
		t.Fatalf("the SDK is not built (make test builds it): %v", err)
	}
	served, err := os.ReadFile(filepath.Join("widget", "vitola-sdk.js"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, served) {
		t.Fatal("examples/widget/vitola-sdk.js differs from sdk/dist/index.js: run `make widget` and commit it")
	}
}

func TestExamplesAreAnonymousStaticPages(t *testing.T) {
	srv := httptest.NewServer(examples.Handler())
	defer srv.Close()
	for path, want := range map[string]string{
		"/examples/widget/":                 "text/html",
		"/examples/widget/widget.js":        "text/javascript",
		"/examples/widget/vitola-sdk.js":    "text/javascript",
		"/examples/bands/oliva-serie-v.jpg": "image/jpeg",
	} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), want) || res.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: %d %q", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
}

// A real browser loads the widget from an origin its publishable key lists and
// sees the venue's sessions; from another origin the API refuses the key and the
// widget says so. 127.0.0.1 and localhost are two origins of the same server.
func TestWidgetInChromium(t *testing.T) {
	sdktest.Require(t, "chromium")
	p, err := platform.Open(context.Background(), platform.Options{
		Store: sqldb.Config{DataDir: t.TempDir()}, InternalKey: []byte("examples-test-internal-key-0123456789"), Demo: true,
		Logger: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	srv := httptest.NewServer(p.API)
	t.Cleanup(srv.Close)
	allowedOrigin := srv.URL // http://127.0.0.1:port
	otherOrigin := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	_, key, err := p.Keys.CreatePublishableKey(context.Background(), "widget", []string{allowedOrigin})
	if err != nil {
		t.Fatal(err)
	}
	widget := func(pageOrigin, api string) string {
		q := url.Values{"api": {api}, "key": {key}, "venue": {venuesdemo.VenueID("The Ember Room")}, "limit": {"10"}}
		return pageOrigin + "/examples/widget/?" + q.Encode()
	}
	var seen struct {
		Allowed struct {
			Users, Cigars []string
			Status        string
		}
		Refused struct {
			Sessions int
			Status   string
		}
		PageErrors []string
	}
	sdktest.RunBrowser(t, "widget.mjs", []string{
		"WIDGET_ALLOWED=" + widget(allowedOrigin, otherOrigin),
		"WIDGET_REFUSED=" + widget(otherOrigin, allowedOrigin),
	}, &seen)
	t.Logf("the browser saw: %+v", seen)
	if len(seen.Allowed.Users) != 10 || len(seen.Allowed.Cigars) != 10 || seen.Allowed.Status != "" {
		t.Errorf("from a listed origin: %+v", seen.Allowed)
	}
	for _, u := range seen.Allowed.Users {
		if strings.TrimSpace(u) == "" {
			t.Errorf("a session without a display name: %q", seen.Allowed.Users)
		}
	}
	if seen.Refused.Sessions != 0 || !strings.HasPrefix(seen.Refused.Status, "The sessions could not be loaded") {
		t.Errorf("from an unlisted origin: %+v", seen.Refused)
	}
	if len(seen.PageErrors) > 0 {
		t.Errorf("page errors: %q", seen.PageErrors)
	}
}
