package platform_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/pagination"
	"github.com/vitolahq/vitola/subgraphs/catalog/demo"
	usersdemo "github.com/vitolahq/vitola/subgraphs/users/demo"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

var rfc3339ms = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// privateSessions lists the demo's private sessions and the sessions of
// private profiles: none may ever appear in a feed.
func (f *fixture) privateSessions(t *testing.T) map[string]bool {
	t.Helper()
	ctx := context.Background()
	st, err := userssql.Open(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string]bool{}
	for _, u := range usersdemo.Users {
		id := usersdemo.UserID(u.Email)
		sessions, err := st.SmokeSessions(ctx, id, pagination.Request{Size: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sessions {
			if s.Visibility != "public" || u.Private {
				out[s.ID] = true
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the demo has no private sessions to test with")
	}
	return out
}

func (f *fixture) testBusinessFeed(t *testing.T) {
	private := f.privateSessions(t)
	venue := venuesdemo.VenueID("The Ember Room")
	status, body := f.rest(t, "/venues/"+venue+"/sessions?limit=100")
	items, _ := body["data"].([]any)
	if status != 200 || len(items) < 10 || at(body, "meta", "count") != float64(len(items)) || at(body, "meta", "limit") != float64(100) {
		t.Fatalf("venue feed: %d %v", status, body["meta"])
	}
	var created []string
	featured := 0
	for _, it := range items {
		id := at(it, "id").(string)
		if private[id] {
			t.Fatalf("private session %s in a public feed", id)
		}
		if at(it, "user", "displayName") == nil || at(it, "cigar", "name") == nil || at(it, "cigar", "brandName") == nil || at(it, "venue", "name") != "The Ember Room" {
			t.Fatalf("incomplete session %v", it)
		}
		if avatar, ok := at(it, "user").(map[string]any)["avatarUrl"]; !ok || (avatar != nil && !strings.HasPrefix(fmt.Sprint(avatar), "http")) {
			t.Fatalf("user summary without avatarUrl (a URL or null): %v", at(it, "user"))
		}
		if _, leaked := it.(map[string]any)["visibility"]; leaked {
			t.Fatal("visibility leaked")
		}
		c := at(it, "createdAt").(string)
		if !rfc3339ms.MatchString(c) {
			t.Fatalf("createdAt %q is not RFC 3339 UTC with milliseconds", c)
		}
		created = append(created, c)
		if at(it, "featured") == true {
			featured++
		}
	}
	if !sort.SliceIsSorted(created, func(i, j int) bool { return created[i] > created[j] }) {
		t.Fatalf("not newest first: %v", created)
	}
	if featured == 0 || featured == len(items) {
		t.Fatalf("%d of %d featured: the demo should mix them", featured, len(items))
	}

	// Paging and metadata.
	_, page := f.rest(t, "/venues/"+venue+"/sessions?limit=3&offset=2")
	if at(page, "meta", "limit") != float64(3) || at(page, "meta", "offset") != float64(2) || at(page, "meta", "count") != float64(len(items)) ||
		at(page, "data", 0, "id") != at(items[2], "id") || len(page["data"].([]any)) != 3 {
		t.Fatalf("page: %v", page)
	}
	_, feat := f.rest(t, "/venues/"+venue+"/sessions?featured=true&limit=100")
	if at(feat, "meta", "count") != float64(featured) {
		t.Fatalf("featured filter: %v of %d", at(feat, "meta", "count"), featured)
	}
	// A date-only "to" includes that whole day; "from" is inclusive.
	day := created[0][:10]
	_, oneDay := f.rest(t, "/venues/"+venue+"/sessions?from="+day+"&to="+day+"&limit=100")
	for _, it := range oneDay["data"].([]any) {
		if !strings.HasPrefix(at(it, "createdAt").(string), day) {
			t.Fatalf("outside %s: %v", day, it)
		}
	}
	if len(oneDay["data"].([]any)) == 0 {
		t.Fatalf("nothing on %s", day)
	}

	// The key may come as "Authorization: Bearer <key>", as the spec's example.
	req, _ := http.NewRequest("GET", f.srv.URL+"/venues/"+venue+"/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+f.key)
	res, _ := http.DefaultClient.Do(req)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("Bearer API key: %d", res.StatusCode)
	}

	// The brand feed: sessions whose cigar is of the brand.
	status, body = f.rest(t, "/brands/"+demo.BrandID("Padrón")+"/sessions?limit=100")
	if status != 200 || len(body["data"].([]any)) < 10 {
		t.Fatalf("brand feed: %d %v", status, body["meta"])
	}
	for _, it := range body["data"].([]any) {
		if at(it, "cigar", "brandName") != "Padrón" || private[at(it, "id").(string)] {
			t.Fatalf("brand feed item %v", it)
		}
	}

	for _, tt := range []struct {
		path, code string
		status     int
	}{
		{"/venues/ven_0000000000000000/sessions", "business_not_found", 404},
		{"/venues/not-an-id/sessions", "business_not_found", 404},
		{"/brands/brd_0000000000000000/sessions", "business_not_found", 404},
		{"/cigars/" + venue + "/sessions", "not_found", 404},
		{"/venues/" + venue + "/sessions?limit=0", "invalid_limit", 400},
		{"/venues/" + venue + "/sessions?limit=101", "invalid_limit", 400},
		{"/venues/" + venue + "/sessions?offset=-1", "invalid_offset", 400},
		{"/venues/" + venue + "/sessions?featured=yes", "invalid_featured", 400},
		{"/venues/" + venue + "/sessions?from=2026-02-01&to=2026-01-01", "invalid_range", 400},
		{"/venues/" + venue + "/sessions?from=yesterday", "invalid_from", 400},
	} {
		status, body := f.rest(t, tt.path)
		if status != tt.status || body["error"] != tt.code {
			t.Errorf("%s: %d %v, want %d %s", tt.path, status, body, tt.status, tt.code)
		}
	}
}

func (f *fixture) testPublishableKeys(t *testing.T) {
	ctx := context.Background()
	if _, _, err := f.p.Keys.CreatePublishableKey(ctx, "bad", []string{"http://venue.example"}); err == nil {
		t.Fatal("an http origin was accepted")
	}
	k, plain, err := f.p.Keys.CreatePublishableKey(ctx, "widget", []string{"https://ember.example/"})
	if err != nil || !strings.HasPrefix(plain, "vpk_") || k.Origins[0] != "https://ember.example" || len(k.Entitlements) != 0 {
		t.Fatalf("publishable key %+v %q %v", k, plain, err)
	}
	feed := f.srv.URL + "/venues/" + venuesdemo.VenueID("The Ember Room") + "/sessions"
	do := func(method, url, origin string, header map[string]string) *http.Response {
		req, _ := http.NewRequest(method, url, nil)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	withKey := map[string]string{"x-service-key": plain}
	if res := do("GET", feed, "https://ember.example", withKey); res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") != "https://ember.example" {
		t.Fatalf("from its origin: %d %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	if res := do("GET", feed, "https://ember.example", map[string]string{"Authorization": "Bearer " + plain}); res.StatusCode != 200 {
		t.Fatalf("as a bearer key: %d", res.StatusCode)
	}
	for name, origin := range map[string]string{"another origin": "https://evil.example", "no origin": ""} {
		if res := do("GET", feed, origin, withKey); res.StatusCode != 403 || res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: %d %q", name, res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	for _, path := range []string{"/v1/cigars/search?q=padron", "/v1/me"} {
		if res := do("GET", f.srv.URL+path, "https://ember.example", withKey); res.StatusCode != 403 {
			t.Errorf("publishable key on %s: %d", path, res.StatusCode)
		}
	}
	if r := f.post(t, plain, `{"query":"{ __typename }"}`); r.Status != 403 {
		t.Errorf("publishable key on /graphql: %d", r.Status)
	}
	// CORS preflight: the registered origin only.
	pre := map[string]string{"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-service-key"}
	if res := do("OPTIONS", feed, "https://ember.example", pre); res.StatusCode != 204 || res.Header.Get("Access-Control-Allow-Origin") != "https://ember.example" ||
		!strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "x-service-key") {
		t.Fatalf("preflight: %d %v", res.StatusCode, res.Header)
	}
	if res := do("OPTIONS", feed, "https://evil.example", pre); res.StatusCode != 403 || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin: %d", res.StatusCode)
	}
	// A secret key used from a browser gets no CORS headers.
	if res := do("GET", feed, "https://ember.example", map[string]string{"x-service-key": f.key}); res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("CORS headers for a secret key")
	}
}
