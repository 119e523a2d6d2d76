package platform_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"golang.org/x/oauth2"

	"github.com/vitolahq/vitola/internal/sqldb"
	restshim "github.com/vitolahq/vitola/rest-shim"
	"github.com/vitolahq/vitola/schema"
	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/users"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// apiDoc is one OpenAPI document and the origin it describes.
type apiDoc struct {
	name string
	doc  *openapi3.T
	base string
}

func loadDoc(t *testing.T, name string, data []byte, base string) *apiDoc {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &apiDoc{name, doc, base}
}

// conformance sends requests to an origin and checks each answer against the
// operation its document gives for the path and method: a documented status,
// every header documented for it, and a body of the documented media type and
// schema; an error body's code must be one the response's description lists.
type conformance struct {
	docs []*apiDoc
	// seen: document, "METHOD /path" -> whether a success and an error were checked.
	seen map[string]map[string]*[2]bool
	// probed: "document METHOD /path" whose body limit was sent.
	probed map[string]bool
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// do sends req (its URL a path of d's origin, matching the template path) and
// checks the answer against d; it fails unless the status is want.
func (c *conformance) do(t *testing.T, d *apiDoc, path string, req *http.Request, want int) restResponse {
	t.Helper()
	method := req.Method
	item := d.doc.Paths.Value(path)
	if item == nil || item.GetOperation(method) == nil {
		t.Fatalf("%s does not document %s %s", d.name, method, path)
	}
	op := item.GetOperation(method)
	out := send(t, d, req)
	res, body := &http.Response{StatusCode: out.Status, Header: out.Header}, out.Body
	name := fmt.Sprintf("%s %s (%s)", method, req.URL.RequestURI(), d.name)
	if res.StatusCode != want {
		t.Fatalf("%s: %d, want %d: %.300s", name, res.StatusCode, want, body)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, Route: &routers.Route{Spec: d.doc, Path: path, PathItem: item, Method: method, Operation: op}}
	err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: res.StatusCode, Header: res.Header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
	if err != nil {
		t.Errorf("%s: %d does not match the document: %v\n%.300s", name, res.StatusCode, err, body)
	}
	doc := op.Responses.Status(res.StatusCode)
	if doc != nil && doc.Value != nil {
		for h := range doc.Value.Headers {
			if res.Header.Get(h) == "" {
				t.Errorf("%s: %d lacks the documented header %s", name, res.StatusCode, h)
			}
		}
		if res.StatusCode >= 400 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			var e struct{ Error string }
			json.Unmarshal(body, &e)
			if e.Error != "" && !strings.Contains(*doc.Value.Description, "`"+e.Error+"`") {
				t.Errorf("%s: %d answers `%s`, which its description does not list: %q", name, res.StatusCode, e.Error, *doc.Value.Description)
			}
		}
	}
	if c.seen[d.name] == nil {
		c.seen[d.name] = map[string]*[2]bool{}
	}
	k := method + " " + path
	if c.seen[d.name][k] == nil {
		c.seen[d.name][k] = &[2]bool{}
	}
	c.seen[d.name][k][min(res.StatusCode/400, 1)] = true
	return out
}

// send sends req to d's origin.
func send(t *testing.T, d *apiDoc, req *http.Request) restResponse {
	t.Helper()
	u, _ := url.Parse(d.base + req.URL.RequestURI())
	req.URL, req.Host = u, ""
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return restResponse{res.StatusCode, res.Header, body}
}

// bodyLimit sends the operation a JSON body of its documented
// x-max-body-bytes, which the route must read (any answer but a 413), and
// one of a byte more, which must be the documented 413. mk makes the request
// with what the route needs before it reads a body (a key, a cookie).
func (c *conformance) bodyLimit(t *testing.T, d *apiDoc, method, path string, mk func(body string) *http.Request) {
	t.Helper()
	op := d.doc.Paths.Value(path).GetOperation(method)
	n, _ := op.RequestBody.Value.Extensions["x-max-body-bytes"].(float64)
	if n < 16 {
		t.Fatalf("%s %s (%s): no x-max-body-bytes", method, path, d.name)
	}
	padded := func(n int) string { return `{"x":"` + strings.Repeat("a", n-8) + `"}` } // n bytes
	if r := send(t, d, mk(padded(int(n)))); r.Status == http.StatusRequestEntityTooLarge {
		t.Errorf("%s %s (%s): a body of %d bytes, its documented limit, is refused: %s", method, path, d.name, int(n), r.Body)
	}
	// (/graphql answers in GraphQL's shape, checked against the document.)
	if r := c.do(t, d, path, mk(padded(int(n)+1)), http.StatusRequestEntityTooLarge); r.code() != "body_too_large" && path != "/graphql" {
		t.Errorf("%s %s (%s): one byte over the limit: %s", method, path, d.name, r.Body)
	}
	c.probed[d.name+" "+method+" "+path] = true
}

// covered fails for every operation of every document that was not checked
// with a success and, when it documents one, an error: a new route needs its
// case below.
func (c *conformance) covered(t *testing.T) {
	for _, d := range c.docs {
		for path, item := range d.doc.Paths.Map() {
			for method, op := range item.Operations() {
				if op.RequestBody != nil && op.RequestBody.Value.Extensions["x-max-body-bytes"] != nil && !c.probed[d.name+" "+method+" "+path] {
					t.Errorf("%s: %s %s has no probe of its body limit", d.name, method, path)
				}
				seen := c.seen[d.name][method+" "+path]
				if seen == nil || !seen[0] {
					t.Errorf("%s: %s %s has no case with a successful answer", d.name, method, path)
				}
				documentsError := false
				for status := range op.Responses.Map() {
					documentsError = documentsError || status >= "400"
				}
				if documentsError && (seen == nil || !seen[1]) {
					t.Errorf("%s: %s %s has no case with an error answer", d.name, method, path)
				}
			}
		}
	}
}

// request builds a request: a JSON body, unless headers (name, value pairs,
// each set) say otherwise.
func request(method, path, body string, headers ...string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// TestOpenAPIMatchesResponses sends every operation of both OpenAPI documents
// a valid request and an invalid one, on the platform with its demo data, and
// checks each answer against the document.
func TestOpenAPIMatchesResponses(t *testing.T) {
	pf := openPayments(t, sqldb.Config{DataDir: t.TempDir()})
	f := &fixture{srv: pf.api, p: pf.p, cfg: pf.cfg}
	ctx := context.Background()
	var err error
	if _, f.key, err = f.p.Keys.CreateKey(ctx, "test", nil); err != nil {
		t.Fatal(err)
	}
	api := loadDoc(t, "openapi.yaml", schema.OpenAPI, pf.api.URL)
	pay := loadDoc(t, "payments-openapi.yaml", schema.PaymentsOpenAPI, pf.pay.URL)
	c := &conformance{docs: []*apiDoc{api, pay}, seen: map[string]map[string]*[2]bool{}, probed: map[string]bool{}}
	key := func(r *http.Request) *http.Request { r.Header.Set("x-service-key", f.key); return r }

	t.Run("platform", func(t *testing.T) {
		for _, d := range c.docs {
			c.do(t, d, "/health", request("GET", "/health", ""), 200)
			c.do(t, d, "/health/ready", request("GET", "/health/ready", ""), 200)
			// Readiness with a component down: the handler both origins
			// mount, over a check that fails (TestReadiness stops Redis).
			down := httptest.NewServer(restshim.ReadyHandler([]restshim.Check{
				{Name: "catalog", Check: func(context.Context) error { return nil }},
				{Name: "kv", Check: func(context.Context) error { return errors.New("gone") }},
			}, 0, nil))
			defer down.Close()
			c.do(t, &apiDoc{d.name, d.doc, down.URL}, "/health/ready", request("GET", "/health/ready", ""), 503)
			c.do(t, d, "/docs", request("GET", "/docs", ""), 200)
			c.do(t, d, "/docs/openapi.yaml", request("GET", "/docs/openapi.yaml", ""), 200)
		}
	})

	var cigar, brand string
	t.Run("catalog", func(t *testing.T) {
		r := c.do(t, api, "/v1/cigars/search", key(request("GET", "/v1/cigars/search?q=padron&limit=2", "")), 200)
		var page struct {
			Data []struct {
				ID    string
				Brand struct{ ID string }
			}
		}
		json.Unmarshal(r.Body, &page)
		cigar, brand = page.Data[0].ID, page.Data[0].Brand.ID
		c.do(t, api, "/v1/cigars/search", key(request("GET", "/v1/cigars/search?q=padron&limit=0", "")), 400)
		c.do(t, api, "/v1/cigars/search", request("GET", "/v1/cigars/search?q=padron", ""), 401)

		c.do(t, api, "/v1/cigars/resolve", key(request("POST", "/v1/cigars/resolve", `{"query": "padron 1964"}`)), 200)
		c.do(t, api, "/v1/cigars/resolve", key(request("POST", "/v1/cigars/resolve", `{"query": "padron", "name": "x"}`)), 400)
		c.bodyLimit(t, api, "POST", "/v1/cigars/resolve", func(b string) *http.Request { return key(request("POST", "/v1/cigars/resolve", b)) })
		c.do(t, api, "/v1/cigars/resolve", key(request("POST", "/v1/cigars/resolve", `{"query": "padron"}`, "Content-Type", "text/plain")), 415)

		c.do(t, api, "/v1/cigars/{id}", key(request("GET", "/v1/cigars/"+cigar, "")), 200)
		c.do(t, api, "/v1/cigars/{id}", key(request("GET", "/v1/cigars/cig_0000000000000000", "")), 404)

		d := f.mustData(t, `{ products(first: 1) { edges { node { id gtin } } } }`, nil)
		product, gtin := at(d, "products", "edges", 0, "node", "id").(string), at(d, "products", "edges", 0, "node", "gtin").(string)
		c.do(t, api, "/v1/products/{id}", key(request("GET", "/v1/products/"+product, "")), 200)
		c.do(t, api, "/v1/products/{id}", key(request("GET", "/v1/products/prd_0000000000000000", "")), 404)
		c.do(t, api, "/v1/products/barcode/{barcode}", key(request("GET", "/v1/products/barcode/"+gtin, "")), 200)
		c.do(t, api, "/v1/products/barcode/{barcode}", key(request("GET", "/v1/products/barcode/123", "")), 400)
	})

	t.Run("sessions", func(t *testing.T) {
		_, publishable, err := f.p.Keys.CreatePublishableKey(ctx, "widget", []string{"https://ember.example"})
		if err != nil {
			t.Fatal(err)
		}
		for _, feed := range []struct{ path, id string }{{"/venues/{id}/sessions", venuesdemo.VenueID("The Ember Room")}, {"/brands/{id}/sessions", brand}} {
			path := strings.Replace(feed.path, "{id}", feed.id, 1)
			c.do(t, api, feed.path, key(request("GET", path+"?limit=3", "")), 200)
			c.do(t, api, feed.path, request("GET", path, "", "Authorization", "Bearer "+publishable, "Origin", "https://ember.example"), 200)
			c.do(t, api, feed.path, key(request("GET", path+"?limit=0", "")), 400)
			c.do(t, api, feed.path, request("GET", path, "", "x-service-key", publishable, "Origin", "https://evil.example"), 403)
			c.do(t, api, feed.path, key(request("GET", strings.Replace(feed.path, "{id}", "ven_0000000000000000", 1), "")), 404)
			c.do(t, api, feed.path, request("OPTIONS", path, "", "Origin", "https://ember.example", "Access-Control-Request-Method", "GET"), 204)
			c.do(t, api, feed.path, request("OPTIONS", path, "", "Origin", "https://evil.example", "Access-Control-Request-Method", "GET"), 403)
		}
	})

	t.Run("matching", func(t *testing.T) {
		aiKey, _ := f.aiKey(t, 100)
		ai := func(r *http.Request, idem string) *http.Request {
			r.Header.Set("x-service-key", aiKey)
			if idem != "" {
				r.Header.Set("Idempotency-Key", idem)
			}
			return r
		}
		img := fmt.Sprintf(`{"imageUrl": %q}`, dataURL("image/jpeg", f.servedBand(t, "padron-1964-anniversary.jpg")))
		fp := c.do(t, api, "/v1/ai/cigars/fingerprint", ai(request("POST", "/v1/ai/cigars/fingerprint", img), "fp-1"), 200)
		c.do(t, api, "/v1/ai/cigars/fingerprint", ai(request("POST", "/v1/ai/cigars/fingerprint", img), ""), 400)
		c.do(t, api, "/v1/ai/cigars/fingerprint", key(request("POST", "/v1/ai/cigars/fingerprint", img, "Idempotency-Key", "fp-2")), 403)
		c.do(t, api, "/v1/ai/cigars/fingerprint", ai(request("POST", "/v1/ai/cigars/fingerprint", `{"imageUrl": "data:image/jpeg;base64,AAAA"}`), "fp-3"), 422)

		c.do(t, api, "/v1/ai/cigars/fingerprint/recognize", key(request("POST", "/v1/ai/cigars/fingerprint/recognize", `{"fingerprint": `+string(fp.Body)+`, "limit": 3}`)), 200)
		c.do(t, api, "/v1/ai/cigars/fingerprint/recognize", key(request("POST", "/v1/ai/cigars/fingerprint/recognize", `{"fingerprint": {"object": "band_fingerprint"}}`)), 400)

		for i, path := range []string{"/v1/ai/cigars/identify", "/v1/matches"} {
			c.do(t, api, path, ai(request("POST", path, img), fmt.Sprint("id-", i)), 200)
			c.do(t, api, path, ai(request("POST", path, `{"imageUrl": "ftp://x"}`), fmt.Sprint("id-bad-", i)), 400)
		}
		for _, path := range []string{"/v1/ai/cigars/fingerprint", "/v1/ai/cigars/identify", "/v1/matches"} {
			c.bodyLimit(t, api, "POST", path, func(b string) *http.Request { return ai(request("POST", path, b), "limit") })
		}
		c.bodyLimit(t, api, "POST", "/v1/ai/cigars/fingerprint/recognize", func(b string) *http.Request {
			return key(request("POST", "/v1/ai/cigars/fingerprint/recognize", b))
		})
		poor, _ := f.aiKey(t, 0)
		r := request("POST", "/v1/matches", img, "Idempotency-Key", "poor")
		r.Header.Set("x-service-key", poor)
		c.do(t, api, "/v1/matches", r, 402)
	})

	t.Run("users and OAuth", func(t *testing.T) {
		c.do(t, api, "/.well-known/oauth-authorization-server", request("GET", "/.well-known/oauth-authorization-server", ""), 200)
		c.do(t, api, "/.well-known/jwks.json", request("GET", "/.well-known/jwks.json", ""), 200)

		st, err := userssql.Open(ctx, f.cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		u, _ := users.NewUser{Email: "docs@example.com", Password: "correct horse battery", DisplayName: "Doc"}.Prepare(time.Now())
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		client, secret, _ := oauth.NewClient("Docs App", []string{redirectURI}, false, time.Now())
		if err := st.CreateClient(ctx, client); err != nil {
			t.Fatal(err)
		}
		conf := &oauth2.Config{ClientID: client.ID, ClientSecret: secret, RedirectURL: redirectURI, Scopes: []string{"profile:read"}}
		verifier := oauth2.GenerateVerifier()
		authURL, _ := url.Parse(conf.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier)))
		authURL.Path = "/oauth/authorize"

		// A browser: the sign-in form's cookie, then the consent form's.
		cookies := func(r *http.Request, from restResponse) *http.Request {
			for _, ck := range (&http.Response{Header: from.Header}).Cookies() {
				r.AddCookie(ck)
			}
			return r
		}
		form := func(r restResponse) url.Values {
			return formOf(t, &http.Response{StatusCode: r.Status, Body: io.NopCloser(bytes.NewReader(r.Body))})
		}
		post := func(path string, v url.Values) *http.Request {
			r := request("POST", path, "", "Content-Type", "application/x-www-form-urlencoded")
			r.Body = io.NopCloser(strings.NewReader(v.Encode()))
			return r
		}
		signIn := c.do(t, api, "/oauth/authorize", request("GET", authURL.RequestURI(), ""), 200)
		c.do(t, api, "/oauth/authorize", request("GET", strings.Replace(authURL.RequestURI(), client.ID, "cli_unknown", 1), ""), 400)
		v := form(signIn)
		v.Set("email", "docs@example.com")
		v.Set("password", "correct horse battery")
		c.do(t, api, "/oauth/login", post("/oauth/login", v), 403) // no CSRF cookie
		consent := c.do(t, api, "/oauth/login", cookies(post("/oauth/login", v), signIn), 200)
		v = form(consent)
		v.Set("decision", "allow")
		c.do(t, api, "/oauth/consent", post("/oauth/consent", v), 403)
		back := c.do(t, api, "/oauth/consent", cookies(cookies(post("/oauth/consent", v), signIn), consent), 302)
		loc, _ := url.Parse(back.Header.Get("Location"))
		tokenForm := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {redirectURI},
			"code_verifier": {verifier}, "client_id": {client.ID}, "client_secret": {secret}}
		tok := c.do(t, api, "/oauth/token", post("/oauth/token", tokenForm), 200)
		bad := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_id": {client.ID}, "client_secret": {"wrong"}}
		c.do(t, api, "/oauth/token", post("/oauth/token", bad), 401)
		var tokens struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		}
		json.Unmarshal(tok.Body, &tokens)

		c.do(t, api, "/v1/me", key(request("GET", "/v1/me", "", "Authorization", "Bearer "+tokens.AccessToken)), 200)
		c.do(t, api, "/v1/me", key(request("GET", "/v1/me", "")), 401)
		c.do(t, api, "/v1/me", key(request("GET", "/v1/me", "", "Authorization", "Bearer "+f.mint(t, u.ID, "email:read"))), 403)

		write := "Bearer " + f.mint(t, u.ID, "sessions:write")
		session := func(body string, more ...string) *http.Request {
			return key(request("POST", "/v1/me/sessions", body, append([]string{"Content-Type", "application/json", "Authorization", write}, more...)...))
		}
		c.do(t, api, "/v1/me/sessions", session(`{"cigarId": "`+cigar+`", "rating": 4.5, "visibility": "public"}`), 201)
		c.do(t, api, "/v1/me/sessions", session(`{"rating": 9}`), 400)
		c.do(t, api, "/v1/me/sessions", session(`{"cigarId": "cig_0000000000000000"}`), 422)
		c.do(t, api, "/v1/me/sessions", session(`{}`, "Authorization", "Bearer "+f.mint(t, u.ID, "sessions:read")), 403)
		c.do(t, api, "/v1/me/sessions", key(request("POST", "/v1/me/sessions", `{}`, "Content-Type", "application/json")), 401)
		c.do(t, api, "/v1/me/sessions", session(`{}`, "Content-Type", "text/plain"), 415)
		c.bodyLimit(t, api, "POST", "/v1/me/sessions", func(b string) *http.Request { return session(b) })

		c.do(t, api, "/oauth/token", post("/oauth/token", tokenForm), 400) // the code again: its tokens are revoked
		c.do(t, api, "/oauth/revoke", post("/oauth/revoke", url.Values{"token": {tokens.RefreshToken}, "client_id": {client.ID}, "client_secret": {secret}}), 200)
		c.do(t, api, "/oauth/revoke", post("/oauth/revoke", url.Values{"token": {tokens.RefreshToken}, "client_id": {client.ID}, "client_secret": {"wrong"}}), 401)
	})

	t.Run("graphql", func(t *testing.T) {
		c.do(t, api, "/graphql", key(request("POST", "/graphql", `{"query": "{ brands(first: 1) { edges { node { name } } } }"}`, "Accept", "application/graphql-response+json")), 200)
		c.do(t, api, "/graphql", request("POST", "/graphql", `{"query": "{ __typename }"}`, "Accept", "application/graphql-response+json"), 401)
		c.do(t, api, "/graphql", key(request("POST", "/graphql", `{"query": "{ brands(first: 1) { edges { node { name } } } "}`, "Accept", "application/graphql-response+json")), 400)
		c.bodyLimit(t, api, "POST", "/graphql", func(b string) *http.Request {
			return key(request("POST", "/graphql", b, "Accept", "application/graphql-response+json"))
		})
		c.do(t, api, "/graphql", key(request("POST", "/graphql", `{ __typename }`, "Content-Type", "text/plain")), 415)
		c.do(t, api, "/graphql", request("GET", "/graphql", "", "Accept", "text/html"), 200)
		c.do(t, api, "/graphql", key(request("GET", "/graphql?query=%7B__typename%7D", "", "Accept", "application/graphql-response+json")), 200)
		c.do(t, api, "/graphql", request("GET", "/graphql?query=%7B__typename%7D", "", "Accept", "application/graphql-response+json"), 401)
	})

	t.Run("payments", func(t *testing.T) {
		keyRec, _, err := f.p.Keys.CreateKey(ctx, "buyer", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := pf.p.PaymentsService.Store.AddResourceType(ctx, payments.ResourceType{Name: "lounge_passes", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		shop := pf.client(t, payments.NewClient{KeyID: keyRec.ID, Origins: []string{"https://shop.example"}, ResourceTypes: []string{payments.AICredits, "lounge_passes"},
			Scopes: []string{payments.ScopeMerchantRead, payments.ScopeMerchantWrite}})
		as := func(r *http.Request) *http.Request {
			r.Header.Set("Authorization", "Bearer "+shop.secret)
			r.Header.Set("X-Service-Client-Id", shop.id)
			return r
		}
		const v1 = "/api/v1"
		acct := c.do(t, pay, v1+"/billing-accounts/resolve", as(request("POST", v1+"/billing-accounts/resolve", `{"accountReference": "`+keyRec.ID+`"}`)), 200)
		account := data(t, acct)["id"].(string)
		c.do(t, pay, v1+"/billing-accounts/resolve", request("POST", v1+"/billing-accounts/resolve", `{"accountReference": "x"}`), 401)

		c.do(t, pay, v1+"/offers", as(request("GET", v1+"/offers?resourceType=ai_credits", "")), 200)
		c.do(t, pay, v1+"/offers", as(request("GET", v1+"/offers", "")), 400)

		m := c.do(t, pay, v1+"/merchant-accounts", as(request("POST", v1+"/merchant-accounts", `{"name": "Shop", "gateway": "sandbox"}`)), 201)
		merchant := data(t, m)["id"].(string)
		c.do(t, pay, v1+"/merchant-accounts", as(request("POST", v1+"/merchant-accounts", `{"name": "Shop", "gateway": "nope"}`)), 400)
		c.do(t, pay, v1+"/merchant-accounts", as(request("GET", v1+"/merchant-accounts", "")), 200)
		c.do(t, pay, v1+"/merchant-accounts", request("GET", v1+"/merchant-accounts", ""), 401)
		creds := v1 + "/merchant-accounts/{id}/credentials"
		offer := `{"resourceType": "lounge_passes", "name": "10 passes", "quantity": 10, "price": {"amount": 4500, "currency": "USD"}, "merchantAccountId": "` + merchant + `"}`
		c.do(t, pay, v1+"/offers", as(request("POST", v1+"/offers", offer, "Idempotency-Key", "o-0")), 409) // no credentials yet
		c.do(t, pay, creds, as(request("PUT", strings.Replace(creds, "{id}", merchant, 1), `{"credentials": {"apiKey": "k"}}`)), 200)
		c.do(t, pay, creds, as(request("PUT", strings.Replace(creds, "{id}", "mer_0000000000000000", 1), `{"credentials": {"apiKey": "k"}}`)), 404)
		c.do(t, pay, v1+"/offers", as(request("POST", v1+"/offers", offer, "Idempotency-Key", "o-1")), 201)
		c.do(t, pay, v1+"/offers", as(request("POST", v1+"/offers", offer)), 400)

		for _, rt := range []struct{ method, path, real string }{
			{"POST", v1 + "/billing-accounts/resolve", ""}, {"POST", v1 + "/billing-accounts/auto-reload", ""}, {"POST", v1 + "/offers", ""},
			{"POST", v1 + "/payment-sessions", ""}, {"POST", v1 + "/merchant-accounts", ""},
			{"PUT", creds, strings.Replace(creds, "{id}", merchant, 1)},
		} {
			c.bodyLimit(t, pay, rt.method, rt.path, func(b string) *http.Request {
				return as(request(rt.method, cmp.Or(rt.real, rt.path), b, "Idempotency-Key", "limit"))
			})
		}
		sess, token := pf.checkoutSession(t, shop, account, "s-1")
		// The same request again, checked: a replay.
		offers, _ := pf.p.PaymentsService.Store.ActiveOffers(ctx, "", payments.AICredits)
		sessBody := `{"billingAccountId": "` + account + `", "offerId": "` + offers[1].ID + `", "returnUrl": "https://shop.example/paid"}`
		c.do(t, pay, v1+"/payment-sessions", as(request("POST", v1+"/payment-sessions", sessBody, "Idempotency-Key", "s-1")), 201)
		c.do(t, pay, v1+"/payment-sessions", as(request("POST", v1+"/payment-sessions", strings.Replace(sessBody, "shop.example", "evil.example", 1), "Idempotency-Key", "s-2")), 400)
		status := v1 + "/payment-sessions/{id}/status"
		c.do(t, pay, status, as(request("GET", strings.Replace(status, "{id}", sess["id"].(string), 1), "")), 200)
		c.do(t, pay, status, as(request("GET", strings.Replace(status, "{id}", "pss_0000000000000000", 1), "")), 404)

		page := c.do(t, pay, "/checkout/{id}", request("GET", "/checkout/"+sess["id"].(string), ""), 200)
		c.do(t, pay, "/checkout/{id}", request("GET", "/checkout/x/y", ""), 404)
		assets := regexp.MustCompile(`vitola-checkout\.[0-9a-f]+\.(js|css)`).FindAllString(string(page.Body), -1)
		if len(assets) < 2 {
			t.Fatalf("the checkout page links %v", assets)
		}
		for _, a := range assets {
			c.do(t, pay, "/checkout/assets/{file}", request("GET", "/checkout/assets/"+a, ""), 200)
		}
		c.do(t, pay, "/checkout/assets/{file}", request("GET", "/checkout/assets/nope.js", ""), 404)

		// The browser: what the checkout page sends, with its cookie.
		var cookie string
		b := func(r *http.Request) *http.Request {
			r.Header.Set("Origin", paymentsURL)
			r.Header.Set("X-Vitola-Checkout", "1")
			if cookie != "" {
				r.Header.Set("Cookie", "__Host-vitola-checkout="+cookie)
			}
			return r
		}
		red := c.do(t, pay, v1+"/payment-sessions/redeem", b(request("POST", v1+"/payment-sessions/redeem", `{"token": "`+token+`"}`)), 200)
		for _, ck := range (&http.Response{Header: red.Header}).Cookies() {
			if ck.Name == "__Host-vitola-checkout" {
				cookie = ck.Value
			}
		}
		c.do(t, pay, v1+"/payment-sessions/redeem", b(request("POST", v1+"/payment-sessions/redeem", `{"token": "`+token+`"}`)), 410)
		purchase := sess["purchase"].(map[string]any)["id"].(string)
		for _, rt := range []struct{ path, real string }{
			{v1 + "/payment-sessions/redeem", ""}, {v1 + "/payment-methods", ""}, {"/api/pci/v1/payment-methods", ""},
			{v1 + "/purchase-intents/{id}/confirm", v1 + "/purchase-intents/" + purchase + "/confirm"},
		} {
			c.bodyLimit(t, pay, "POST", rt.path, func(body string) *http.Request {
				return b(request("POST", cmp.Or(rt.real, rt.path), body, "Idempotency-Key", "limit"))
			})
		}
		c.do(t, pay, v1+"/payment-sessions/current", b(request("GET", v1+"/payment-sessions/current", "")), 200)
		c.do(t, pay, v1+"/payment-sessions/current", request("GET", v1+"/payment-sessions/current", ""), 401)

		card := c.do(t, pay, "/api/pci/v1/payment-methods", b(request("POST", "/api/pci/v1/payment-methods", `{"number": "4242424242424242", "expMonth": 12, "expYear": 2034, "cvc": "123"}`)), 201)
		c.do(t, pay, "/api/pci/v1/payment-methods", b(request("POST", "/api/pci/v1/payment-methods", `{"number": "4242424242424241", "expMonth": 12, "expYear": 2034, "cvc": "123"}`)), 400)
		visa := data(t, card)["id"].(string)
		other := c.do(t, pay, v1+"/payment-methods", b(request("POST", v1+"/payment-methods", `{"gatewayToken": "tok_mastercard"}`)), 201)
		c.do(t, pay, v1+"/payment-methods", b(request("POST", v1+"/payment-methods", `{"number": "4242424242424242"}`)), 400)
		c.do(t, pay, v1+"/payment-methods", b(request("GET", v1+"/payment-methods", "")), 200)
		c.do(t, pay, v1+"/payment-methods", request("GET", v1+"/payment-methods", ""), 401)
		def := v1 + "/payment-methods/{id}/default"
		c.do(t, pay, def, b(request("PATCH", strings.Replace(def, "{id}", visa, 1), "")), 200)
		c.do(t, pay, def, b(request("PATCH", strings.Replace(def, "{id}", "pmt_0000000000000000", 1), "")), 404)
		del := v1 + "/payment-methods/{id}"
		c.do(t, pay, del, b(request("DELETE", strings.Replace(del, "{id}", data(t, other)["id"].(string), 1), "")), 204)
		c.do(t, pay, del, request("DELETE", strings.Replace(del, "{id}", visa, 1), "", "Cookie", "__Host-vitola-checkout="+cookie), 403)

		confirm := v1 + "/purchase-intents/{id}/confirm"
		c.do(t, pay, confirm, b(request("POST", strings.Replace(confirm, "{id}", purchase, 1), `{"paymentMethodId": "`+visa+`"}`)), 400) // no Idempotency-Key
		c.do(t, pay, confirm, b(request("POST", strings.Replace(confirm, "{id}", purchase, 1), `{"paymentMethodId": "`+visa+`"}`, "Idempotency-Key", "c-1")), 200)

		reload := `{"accountReference": "` + keyRec.ID + `", "enabled": true, "threshold": 20, "offerId": "` + offers[1].ID + `", "paymentMethodId": "` + visa + `"}`
		c.do(t, pay, v1+"/billing-accounts/auto-reload", as(request("POST", v1+"/billing-accounts/auto-reload", reload)), 200)
		c.do(t, pay, v1+"/billing-accounts/auto-reload", as(request("POST", v1+"/billing-accounts/auto-reload", `{"accountReference": "x"}`)), 400)

		_, token = pf.checkoutSession(t, shop, account, "s-3")
		cookie = ""
		red = c.do(t, pay, v1+"/payment-sessions/redeem", b(request("POST", v1+"/payment-sessions/redeem", `{"token": "`+token+`"}`)), 200)
		for _, ck := range (&http.Response{Header: red.Header}).Cookies() {
			if ck.Name == "__Host-vitola-checkout" {
				cookie = ck.Value
			}
		}
		cancel := v1 + "/payment-sessions/current/cancel"
		c.do(t, pay, cancel, request("POST", cancel, "", "Cookie", "__Host-vitola-checkout="+cookie), 403)
		c.do(t, pay, cancel, b(request("POST", cancel, "")), 200)

		c.do(t, pay, creds, as(request("DELETE", strings.Replace(creds, "{id}", merchant, 1), "")), 200)
		c.do(t, pay, creds, as(request("DELETE", strings.Replace(creds, "{id}", "mer_0000000000000000", 1), "")), 404)
	})

	if !t.Failed() {
		c.covered(t)
	}
}
