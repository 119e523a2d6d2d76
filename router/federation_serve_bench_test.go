//go:build unix

package router_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/router"
)

// BenchmarkFederationServe is the router's own cost of one request, without
// the network's noise on the client side: the join and products only of
// `make bench-router` sent straight to ServeHTTP, one at a time, over
// graphql-go-tools' federation test composition, its subgraphs answering
// canned responses from loopback servers (so the subgraph client, the
// connection pool and the JSON merging are real, and the subgraphs cost next
// to nothing). cpu-ns/op is the process's CPU per request, the canned servers
// included; allocs/op counts what the router allocates (and the test's
// request, about 10).
//
//	go test ./router -run '^$' -bench FederationServe -benchmem -cpu 1
func BenchmarkFederationServe(b *testing.B) {
	config := fedTestingConfig(b)
	products := cannedSubgraph(b, `{"data":{"topProducts":[`+
		`{"__typename":"Product","upc":"top-1","name":"Trilby","price":11},`+
		`{"__typename":"Product","upc":"top-2","name":"Fedora","price":22},`+
		`{"__typename":"Product","upc":"top-3","name":"Boater","price":33}]}}`)
	reviews := cannedSubgraph(b, `{"data":{"_entities":[`+
		`{"__typename":"Product","reviews":[{"body":"A highly effective form of birth control."}]},`+
		`{"__typename":"Product","reviews":[{"body":"Fedoras are one of the most fashionable hats around and can look great with a variety of outfits."}]},`+
		`{"__typename":"Product","reviews":[{"body":"This is the last straw. Hat you will wear. 11/10"}]}]}}`)
	accounts := cannedSubgraph(b, `{"data":{}}`)
	urls := map[string]string{"products": products, "reviews": reviews, "accounts": accounts}
	for _, tuning := range []struct {
		name string
		t    router.Tuning
	}{
		{"defaults", router.Tuning{}},
		{"both-off", router.Tuning{NoInboundDedup: true, NoSingleFlight: true}},
	} {
		composed, err := router.LoadComposed(config, urls)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		b.Cleanup(cancel)
		rt, err := router.New(ctx, router.Config{Composed: composed, Client: &http.Client{Transport: router.SubgraphTransport(false)},
			Keys: oneKey{}, Tuning: tuning.t, Logger: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range []struct{ name, query, want string }{
			{"join", `{ topProducts { upc name price reviews { body } } }`, `"reviews":[{"body":"A highly`},
			{"products-only", `{ topProducts { upc name price } }`, `"name":"Boater"`},
		} {
			b.Run(tuning.name+"/"+q.name, func(b *testing.B) {
				body := gqlBody(q.query)
				serve := func() {
					r := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
					r.Header.Set("Content-Type", "application/json")
					r.Header.Set(access.Header, federationTestKey)
					w := httptest.NewRecorder()
					rt.ServeHTTP(w, r)
					if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), q.want) || strings.Contains(w.Body.String(), `"errors"`) {
						b.Fatalf("%d %s", w.Code, w.Body.Bytes())
					}
				}
				serve()
				b.ReportAllocs()
				cpu0 := processCPU()
				for b.Loop() {
					serve()
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// fedTestingConfig is the composition of graphql-go-tools' federation test
// subgraphs, read from the module cache (tools/fedsubgraphs serves them).
func fedTestingConfig(tb testing.TB) []byte {
	tb.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/wundergraph/graphql-go-tools/execution").Output()
	if err != nil {
		tb.Skipf("missing graphql-go-tools/execution in the module cache: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "federationtesting", "config.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// cannedSubgraph serves response to every request on loopback and returns
// its URL.
func cannedSubgraph(tb testing.TB, response string) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(response))
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/"
}
