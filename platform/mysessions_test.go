package platform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/kv/kvtest"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/platform"
	usersdemo "github.com/vitolahq/vitola/subgraphs/users/demo"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// startSession sends POST /v1/me/sessions with the fixture's key (unless
// noKey) and token (unless empty).
func (f *fixture) startSession(t *testing.T, token string, noKey bool, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL+"/v1/me/sessions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if !noKey {
		req.Header.Set("x-service-key", f.key)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("POST /v1/me/sessions: not JSON (%d): %v", res.StatusCode, err)
	}
	return res.StatusCode, out
}

// gathered reads one unlabelled metric's value from tel's registry.
func gathered(t *testing.T, tel *telemetry.Telemetry, name string) float64 {
	t.Helper()
	mfs, err := tel.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func body(v map[string]any) string {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(v)
	return b.String()
}

// TestStartSessionRoute: POST /v1/me/sessions, the write path of live
// sessions, on the whole platform: auth (key, token, sessions:write),
// validation with stable codes, unknown cigar and venue, and the session then
// in the venue's feed; the internal field behind it is not in the public graph.
func TestStartSessionRoute(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true})
			if err != nil {
				t.Fatal(err)
			}
			f := openWith(t, cfg, func(o *platform.Options) { o.Telemetry = tel })
			ana := usersdemo.UserID("ana@vitola.example")
			venue := venuesdemo.VenueID("The Ember Room")
			_, search := f.rest(t, "/v1/cigars/search?q=padron&limit=1")
			cigar, _ := at(search, "data", 0, "id").(string)
			if cigar == "" {
				t.Fatalf("no demo cigar: %v", search)
			}
			write := f.mint(t, ana, "sessions:write")
			good := map[string]any{"cigarId": cigar, "venueId": venue, "visibility": "public", "rating": 4.5, "note": "Live from the test."}

			for _, tt := range []struct {
				name   string
				token  string
				noKey  bool
				body   string
				status int
				code   string
			}{
				{"no key", write, true, body(good), 401, "unauthorized"},
				{"no token", "", false, body(good), 401, "invalid_token"},
				{"bad token", "not.a.token", false, body(good), 401, "invalid_token"},
				{"no scope", f.mint(t, ana, "sessions:read"), false, body(good), 403, "insufficient_scope"},
				{"not JSON", write, false, `{"visibility":`, 400, "invalid_body"},
				{"unknown member", write, false, `{"visibilty":"public"}`, 400, "invalid_body"},
				{"unknown cigar", write, false, body(map[string]any{"cigarId": ids.Derive(ids.Cigar, "nope")}), 422, "unknown_cigar"},
				{"not a cigar ID", write, false, body(map[string]any{"cigarId": "padron"}), 422, "unknown_cigar"},
				{"unknown venue", write, false, body(map[string]any{"venueId": ids.Derive(ids.Venue, "nope")}), 422, "unknown_venue"},
				{"bad visibility", write, false, body(map[string]any{"visibility": "friends"}), 400, "invalid_visibility"},
				{"bad rating", write, false, body(map[string]any{"rating": 7}), 400, "invalid_rating"},
				{"bad start", write, false, body(map[string]any{"startedAt": "yesterday"}), 400, "invalid_started_at"},
				{"end before start", write, false, body(map[string]any{"startedAt": "2026-11-20T20:00:00Z", "endedAt": "2026-11-20T19:00:00Z"}), 400, "invalid_ended_at"},
				{"long note", write, false, body(map[string]any{"note": strings.Repeat("x", 2001)}), 400, "invalid_note"},
			} {
				status, out := f.startSession(t, tt.token, tt.noKey, tt.body)
				if status != tt.status || out["error"] != tt.code || out["message"] == "" {
					t.Errorf("%s: %d %v, want %d %s", tt.name, status, out, tt.status, tt.code)
				}
			}

			status, out := f.startSession(t, write, false, body(good))
			id, _ := at(out, "data", "id").(string)
			if status != 201 || !ids.Valid(id, ids.SmokeSession) || at(out, "data", "cigarId") != cigar || at(out, "data", "venueId") != venue ||
				at(out, "data", "visibility") != "public" || at(out, "data", "rating") != 4.5 || !rfc3339ms.MatchString(at(out, "data", "startedAt").(string)) {
				t.Fatalf("start: %d %v", status, out)
			}
			brand, _ := at(search, "data", 0, "brand", "id").(string)
			for _, feedPath := range []string{"/venues/" + venue, "/brands/" + brand} {
				_, feed := f.rest(t, feedPath+"/sessions?limit=1")
				if at(feed, "data", 0, "id") != id || at(feed, "data", 0, "note") != "Live from the test." {
					t.Fatalf("the new public session is not first in %s's feed: %v", feedPath, at(feed, "data", 0))
				}
			}
			// Private by default: it never reaches the feed.
			status, out = f.startSession(t, write, false, body(map[string]any{"venueId": venue}))
			if status != 201 || at(out, "data", "visibility") != "private" {
				t.Fatalf("default visibility: %d %v", status, out)
			}
			if _, feed := f.rest(t, "/venues/"+venue+"/sessions?limit=1"); at(feed, "data", 0, "id") != id {
				t.Fatalf("a private session reached the feed: %v", at(feed, "data", 0))
			}

			// Both sessions were handed to the live bus, and /metrics says so.
			if n := gathered(t, tel, "vitola_live_events_published_total"); n != 2 {
				t.Fatalf("vitola_live_events_published_total = %v, want 2", n)
			}

			// The internal write field is not in the public graph.
			r := f.gqlAs(t, write, `{ startSmokeSession(visibility: "public") { id } }`, nil)
			if code(r) != "GRAPHQL_VALIDATION_FAILED" {
				t.Fatalf("startSmokeSession through the public graph: %d %s", r.Status, r.Raw)
			}
			d := f.mustData(t, graphiqlIntrospection, nil)
			raw, _ := json.Marshal(d)
			if bytes.Contains(raw, []byte(`"startSmokeSession"`)) {
				t.Fatal("introspection shows startSmokeSession")
			}
		})
	}
}

// TestStartSessionWithRedisDown: with REDIS_URL set and Redis down (at start
// and after), the platform starts, and a session is still recorded, promptly;
// its live event is lost and counted.
func TestStartSessionWithRedisDown(t *testing.T) {
	redis := kvtest.NewRedisServer(t, 0) // never started
	tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	f := openWith(t, sqldb.Config{DataDir: t.TempDir()}, func(o *platform.Options) {
		o.RedisURL, o.RedisPrefix, o.Telemetry = redis.URL(), kvtest.Prefix("live"), tel
	})
	start := time.Now()
	status, out := f.startSession(t, f.mint(t, usersdemo.UserID("ana@vitola.example"), "sessions:write"), false,
		body(map[string]any{"venueId": venuesdemo.VenueID("The Ember Room"), "visibility": "public"}))
	if status != 201 || !ids.Valid(at(out, "data", "id").(string), ids.SmokeSession) {
		t.Fatalf("with Redis down: %d %v", status, out)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the write took %s with Redis down", d)
	}
	if n := gathered(t, tel, "vitola_live_events_lost_total"); n != 1 {
		t.Fatalf("vitola_live_events_lost_total = %v, want 1", n)
	}
}
