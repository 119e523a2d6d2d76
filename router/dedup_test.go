package router_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/inproc"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/router/limits"
)

// gate holds every call to a subgraph until released, so that a test knows
// which requests are in flight together. It records the caller header each
// call carried; with fail set it answers every call with a GraphQL error
// instead of the subgraph's answer.
type gate struct {
	next    http.Handler
	arrived chan string // the caller header of each call, as it arrives
	release chan struct{}
	fail    bool
}

func newGate(next http.Handler) *gate {
	return &gate{next: next, arrived: make(chan string, 16), release: make(chan struct{})}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.arrived <- r.Header.Get(router.CallerHeader)
	<-g.release
	if g.fail {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":null,"errors":[{"message":"products are out of stock"}]}`))
		return
	}
	g.next.ServeHTTP(w, r)
}

// await returns the caller header of the next subgraph call, failing the test
// if none comes: the request that should have made it shared another's
// execution.
func (g *gate) await(tb testing.TB, what string) string {
	tb.Helper()
	select {
	case c := <-g.arrived:
		return c
	case <-time.After(10 * time.Second):
		tb.Fatalf("%s never reached the subgraph", what)
		return ""
	}
}

// keyTable authenticates a fixed set of developer keys, and counts every
// authentication: the accounting a shared execution must not skip.
type keyTable struct {
	keys  map[string]access.Key
	count atomic.Int64
}

func (k *keyTable) Authenticate(_ context.Context, plain string) (access.Key, error) {
	k.count.Add(1)
	key, ok := k.keys[plain]
	if !ok {
		return access.Key{}, access.ErrNoKey
	}
	return key, nil
}

var dedupKeys = map[string]access.Key{
	"key-a":       {ID: "key_a", Name: "a"},
	"key-a-again": {ID: "key_a", Name: "a"},
	"key-b":       {ID: "key_b", Name: "b"},
	// The same key after its entitlements changed.
	"key-a-ai": {ID: "key_a", Name: "a", Entitlements: []string{"api.ai"}},
}

type dedupRouter struct {
	rt     *router.Router
	gate   *gate
	keys   *keyTable
	issuer *trust.Issuer
}

// newDedupRouter is the real router over the requires-inaccessible
// composition, its products subgraph behind a gate, with Vitola's caller
// separation (every fetch carries the caller's digest).
func newDedupRouter(t *testing.T, tuning router.Tuning, lim limits.Config) *dedupRouter {
	t.Helper()
	const pattern = "requires-inaccessible"
	composed, err := router.LoadComposed(compositionConfig(t, pattern), nil)
	if err != nil {
		t.Fatal(err)
	}
	composed.SeparateCallers("products", "pricing", "shipping")
	hosts := map[string]http.Handler{}
	var g *gate
	for name, sg := range requiresSubgraphs() {
		sg.sdl = compositionSDL(t, pattern, name)
		hosts[name+".test"] = sg
		if name == "products" {
			g = newGate(sg)
			hosts[name+".test"] = g
		}
	}
	t.Cleanup(func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	verifier, err := trust.NewVerifier(internalKey)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := trust.NewIssuer(internalKey, "shim")
	if err != nil {
		t.Fatal(err)
	}
	keys := &keyTable{keys: dedupKeys}
	rt, err := router.New(ctx, router.Config{Composed: composed, Client: &http.Client{Transport: &inproc.Transport{Handlers: hosts}},
		Keys: keys, Internal: verifier, Limits: lim, Tuning: tuning, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return &dedupRouter{rt: rt, gate: g, keys: keys, issuer: issuer}
}

// caller is who sends a request: a developer key, or the shim's internal
// token carrying a user's identity (what an OAuth token becomes: subject,
// scopes, token ID).
type caller struct {
	key  string
	user *trust.Identity
}

// send serves one request in its own goroutine; the response comes on the
// returned channel.
func (d *dedupRouter) send(t *testing.T, c caller, body []byte) <-chan *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", router.MediaGraphQLResponse) // a refusal then answers 400
	if c.user != nil {
		id := *c.user
		id.Caller = "shim"
		tok, err := d.issuer.Token(id)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set(trust.Header, tok)
	} else {
		r.Header.Set(access.Header, c.key)
	}
	out := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		d.rt.ServeHTTP(w, r)
		out <- w
	}()
	return out
}

// awaitShared waits until n callers wait for another's execution.
func (d *dedupRouter) awaitShared(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for d.rt.DedupStats().Shared < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d callers share an execution, want %d", d.rt.DedupStats().Shared, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func receive(t *testing.T, c <-chan *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case w := <-c:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("no response")
		return nil
	}
}

const productsQuery = `{ products { id name } }`

const productsData = `{"data":{"products":[{"id":"p1","name":"Box of 25"},{"id":"p2","name":"Single"}]}}`

// Identical queries of one caller in flight at once make one subgraph call and
// all get the answer: by sharing one execution, or with inbound deduplication
// off by the engine's single-flight of their identical fetches; with both off
// each makes its own.
func TestIdenticalQueriesShareOneExecution(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tuning router.Tuning
	}{
		{"defaults", router.Tuning{}},
		{"dedup off", router.Tuning{NoInboundDedup: true}},
		{"dedup and single-flight off", router.Tuning{NoInboundDedup: true, NoSingleFlight: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDedupRouter(t, tc.tuning, limits.Defaults())
			body := queryBody(productsQuery, nil)
			first := d.send(t, caller{key: "key-a"}, body)
			d.gate.await(t, "the first request")
			// The same caller by another spelling of the same key, and the
			// same operation spelt differently: equal once normalized.
			second := d.send(t, caller{key: "key-a-again"}, queryBody("query {products{ id   name }}", nil))
			third := d.send(t, caller{key: "key-a"}, body)
			switch {
			case tc.tuning.NoSingleFlight:
				d.gate.await(t, "the second request")
				d.gate.await(t, "the third request")
			case tc.tuning.NoInboundDedup:
				// The engine's single-flight tells nothing of who waits: let
				// the others reach it (if they come late they make calls of
				// their own, which is not asserted below).
				time.Sleep(50 * time.Millisecond)
			default:
				d.awaitShared(t, 2)
			}
			close(d.gate.release)
			for i, c := range []<-chan *httptest.ResponseRecorder{first, second, third} {
				w := receive(t, c)
				if w.Code != http.StatusOK {
					t.Fatalf("request %d: %d %s", i+1, w.Code, w.Body)
				}
				sameJSON(t, w.Body.String(), productsData)
			}
			if n := len(d.gate.arrived); n != 0 && !(tc.tuning.NoInboundDedup && !tc.tuning.NoSingleFlight) {
				t.Fatalf("%d more subgraph calls than expected", n)
			}
			if got := d.keys.count.Load(); got != 3 {
				t.Fatalf("%d key authentications for 3 requests", got)
			}
			want := router.DedupStats{Executions: 1, Shared: 2}
			if tc.tuning.NoInboundDedup {
				want = router.DedupStats{}
			}
			if got := d.rt.DedupStats(); got != want {
				t.Fatalf("stats %+v, want %+v", got, want)
			}
		})
	}
}

// Two callers whose answers could differ never share an execution, nor a
// subgraph fetch: the second request reaches the subgraph while the first is
// still held there, each with its own caller digest.
func TestCallersThatDifferNeverShare(t *testing.T) {
	user := func(id trust.Identity) caller { return caller{user: &id} }
	for _, tc := range []struct {
		name          string
		first, second caller
	}{
		{"different developer keys", caller{key: "key-a"}, caller{key: "key-b"}},
		{"same key, other entitlements", caller{key: "key-a"}, caller{key: "key-a-ai"}},
		{"key alone and key with a user's token", caller{key: "key-a"}, user(trust.Identity{KeyID: "key_a", UserID: "usr_1", Scopes: []string{"profile"}, TokenID: "t1"})},
		{"different token subjects", user(trust.Identity{KeyID: "key_a", UserID: "usr_1", Scopes: []string{"profile"}, TokenID: "t1"}), user(trust.Identity{KeyID: "key_a", UserID: "usr_2", Scopes: []string{"profile"}, TokenID: "t1"})},
		{"different token scopes", user(trust.Identity{KeyID: "key_a", UserID: "usr_1", Scopes: []string{"profile"}, TokenID: "t1"}), user(trust.Identity{KeyID: "key_a", UserID: "usr_1", Scopes: []string{"profile", "collection:write"}, TokenID: "t1"})},
		{"different tokens of one user", user(trust.Identity{KeyID: "key_a", UserID: "usr_1", TokenID: "t1"}), user(trust.Identity{KeyID: "key_a", UserID: "usr_1", TokenID: "t2"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDedupRouter(t, router.Tuning{}, limits.Defaults())
			body := queryBody(productsQuery, nil)
			first := d.send(t, tc.first, body)
			a := d.gate.await(t, "the first request")
			second := d.send(t, tc.second, body)
			b := d.gate.await(t, "the second caller's request (it shared the first's execution)")
			if a == "" || a == b {
				t.Fatalf("subgraph calls carried caller digests %q and %q", a, b)
			}
			close(d.gate.release)
			for _, c := range []<-chan *httptest.ResponseRecorder{first, second} {
				w := receive(t, c)
				if w.Code != http.StatusOK {
					t.Fatalf("%d %s", w.Code, w.Body)
				}
				sameJSON(t, w.Body.String(), productsData)
			}
			if got := d.rt.DedupStats(); got.Shared != 0 || got.Executions != 2 {
				t.Fatalf("stats %+v, want 2 executions, none shared", got)
			}
		})
	}
}

// A shared execution's error reaches every caller that shared it.
func TestSharedExecutionErrorReachesEveryCaller(t *testing.T) {
	d := newDedupRouter(t, router.Tuning{}, limits.Defaults())
	d.gate.fail = true
	body := queryBody(productsQuery, nil)
	var replies []<-chan *httptest.ResponseRecorder
	replies = append(replies, d.send(t, caller{key: "key-a"}, body))
	d.gate.await(t, "the first request")
	replies = append(replies, d.send(t, caller{key: "key-a"}, body), d.send(t, caller{key: "key-a"}, body))
	d.awaitShared(t, 2)
	close(d.gate.release)
	var first string
	for i, c := range replies {
		w := receive(t, c)
		r := decodeReply(t, w)
		if len(r.Errors) == 0 || r.Data != nil {
			t.Fatalf("caller %d got no error: %d %s", i+1, w.Code, w.Body)
		}
		if i == 0 {
			first = w.Body.String()
		} else if w.Body.String() != first {
			t.Fatalf("caller %d got %s, the first %s", i+1, w.Body, first)
		}
	}
}

// A refused request never joins an execution in flight, and every request is
// authenticated (counted) whether it shares an execution or not.
func TestRefusedRequestIsNeverShared(t *testing.T) {
	lim := limits.Defaults()
	lim.MaxAliases = 1
	d := newDedupRouter(t, router.Tuning{}, lim)
	first := d.send(t, caller{key: "key-a"}, queryBody(productsQuery, nil))
	d.gate.await(t, "the first request")
	// The same fields, but over the alias limit: refused at once.
	refused := receive(t, d.send(t, caller{key: "key-a"}, queryBody(`{ a: products { id name } b: products { id name } }`, nil)))
	if r := decodeReply(t, refused); refused.Code != http.StatusBadRequest || len(r.Errors) == 0 || r.Errors[0].Extensions["code"] == nil {
		t.Fatalf("over the limit: %d %s", refused.Code, refused.Body)
	}
	second := d.send(t, caller{key: "key-a"}, queryBody(productsQuery, nil))
	d.awaitShared(t, 1)
	close(d.gate.release)
	for _, c := range []<-chan *httptest.ResponseRecorder{first, second} {
		sameJSON(t, receive(t, c).Body.String(), productsData)
	}
	if got := d.rt.DedupStats(); got != (router.DedupStats{Executions: 1, Shared: 1}) {
		t.Fatalf("stats %+v", got)
	}
	if got := d.keys.count.Load(); got != 3 {
		t.Fatalf("%d key authentications for 3 requests", got)
	}
}
