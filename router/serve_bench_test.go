//go:build unix

package router_test

import (
	"fmt"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

// BenchmarkServe is one request through the router's ServeHTTP in process,
// over the demo platform: an operation fetched from the catalog, and the
// curated introspection (GraphiQL's query, and one type). "cached" repeats the
// same text, so the analyzer's verdict and the engine's plan come from their
// caches; "uncached" changes a comment each time, so the operation is analysed
// (the limits) and planned anew. cpu-ns/op is the process's CPU time per
// request (see processCPU), steadier than ns/op on a shared machine.
//
//	go test ./router -run '^$' -bench Serve -cpu 1
func BenchmarkServe(b *testing.B) {
	tr := newTestRouter(b, limits.Config{})
	queries := []struct{ name, query string }{
		{"brand", `{ brands(first: 5) { edges { node { id name country } } } }`},
		{"introspection", graphiQLIntrospection(false)},
		{"type", `{ __type(name: "Brand") { name kind fields { name args { name } type { kind name ofType { kind name } } } } }`},
	}
	for _, cached := range []bool{true, false} {
		mode := "cached"
		if !cached {
			mode = "uncached"
		}
		for _, q := range queries {
			b.Run(mode+"/"+q.name, func(b *testing.B) {
				if w := tr.serve(queryBody(q.query, nil)); w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body.Bytes())
				}
				body := queryBody(q.query, nil)
				b.ReportAllocs()
				n := 0
				cpu0 := processCPU()
				for b.Loop() {
					n++
					if !cached {
						body = queryBody(fmt.Sprintf("#%d\n%s", n, q.query), nil)
					}
					if w := tr.serve(body); w.Code != 200 {
						b.Fatalf("%d %s", w.Code, w.Body.Bytes())
					}
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(n), "cpu-ns/op")
			})
		}
	}
}
