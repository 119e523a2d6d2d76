package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/inproc"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/router/limits"
	"github.com/vitolahq/vitola/schema"
)

// testRouter is the real router over the demo platform's subgraphs, reached
// in-process, with a developer key.
type testRouter struct {
	rt  *router.Router
	key string
}

// demo is one demo platform that every test router of the process shares:
// opening one (seeding, hashing the demo passwords) costs far more than a
// router.
var demo struct {
	once sync.Once
	dir  string
	p    *platform.Platform
	key  string
	err  error
}

var internalKey = bytes.Repeat([]byte("k"), 32)

// testTuning is the tuning of every test router: the defaults (inbound
// deduplication and single-flight on), or both off with
// VITOLA_TEST_DEDUP=off. `make test` runs this package both ways.
var testTuning = func() router.Tuning {
	if os.Getenv("VITOLA_TEST_DEDUP") == "off" {
		return router.Tuning{NoInboundDedup: true, NoSingleFlight: true}
	}
	return router.Tuning{}
}()

func TestMain(m *testing.M) {
	code := m.Run()
	if demo.p != nil {
		demo.p.Close()
	}
	if demo.dir != "" {
		os.RemoveAll(demo.dir)
	}
	os.Exit(code)
}

func openDemo() error {
	demo.once.Do(func() {
		ctx := context.Background()
		if demo.dir, demo.err = os.MkdirTemp("", "vitola-router-test-"); demo.err != nil {
			return
		}
		if demo.p, demo.err = platform.Open(ctx, platform.Options{Store: sqldb.Config{DataDir: demo.dir}, InternalKey: internalKey, Demo: true, Logger: zerolog.Nop()}); demo.err != nil {
			return
		}
		_, demo.key, demo.err = demo.p.Keys.CreateKey(ctx, "test", nil)
	})
	return demo.err
}

func newTestRouter(tb testing.TB, lim limits.Config) *testRouter {
	tb.Helper()
	return newTestRouterWith(tb, lim, nil)
}

// newTestRouterWith is newTestRouter with more of the router's configuration
// set by with (persisted queries, trusted documents).
func newTestRouterWith(tb testing.TB, lim limits.Config, with func(*router.Config)) *testRouter {
	tb.Helper()
	if err := openDemo(); err != nil {
		tb.Fatalf("open the demo platform: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	hosts, urls := map[string]http.Handler{}, map[string]string{}
	for name, h := range demo.p.Subgraphs {
		hosts[platform.InternalHost(name)] = h
	}
	for _, name := range schema.Subgraphs {
		urls[name] = "http://" + platform.InternalHost(name) + "/graphql"
	}
	composed, err := router.LoadComposed(schema.RouterConfig, urls)
	if err != nil {
		tb.Fatal(err)
	}
	issuer, err := trust.NewIssuer(internalKey, "router")
	if err != nil {
		tb.Fatal(err)
	}
	client := &http.Client{Transport: &trust.Transport{Base: &inproc.Transport{Handlers: hosts}, Issuer: issuer}}
	cfg := router.Config{Composed: composed, Client: client, Keys: demo.p.Keys, Limits: lim, Tuning: testTuning, Logger: zerolog.Nop()}
	if with != nil {
		with(&cfg)
	}
	rt, err := router.New(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return &testRouter{rt: rt, key: demo.key}
}

// serve sends one POST /graphql through the router's ServeHTTP, asking for
// application/graphql-response+json.
func (tr *testRouter) serve(body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	// The specification's media type: a request that fails before execution
	// answers 400 (in application/json it would answer 200 with errors).
	r.Header.Set("Accept", router.MediaGraphQLResponse)
	r.Header.Set(access.Header, tr.key)
	w := httptest.NewRecorder()
	tr.rt.ServeHTTP(w, r)
	return w
}

type gqlReply struct {
	Data   map[string]any `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func decodeReply(tb testing.TB, w *httptest.ResponseRecorder) gqlReply {
	tb.Helper()
	var out gqlReply
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		tb.Fatalf("response is not JSON (%d): %.300s", w.Code, w.Body.Bytes())
	}
	return out
}

func queryBody(query string, vars any) []byte {
	b, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		panic(err)
	}
	return b
}

// overHTTP serves the router on a loopback listener for the test's duration.
func (tr *testRouter) overHTTP(tb testing.TB) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(tr.rt)
	tb.Cleanup(srv.Close)
	return srv
}

// request sends one GraphQL request over real HTTP with the test key, asking
// for application/graphql-response+json: a POST with body as its JSON body, or
// a GET whose URL parameters are body's members (variables and extensions
// JSON-encoded). It returns the status and the response body.
func (tr *testRouter) request(tb testing.TB, srv *httptest.Server, method string, body map[string]any) (int, []byte) {
	tb.Helper()
	resp := tr.accepting(tb, srv, method, body, router.MediaGraphQLResponse)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, out
}
