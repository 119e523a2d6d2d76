//go:build unix

package router_test

import (
	"testing"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/router/limits"
)

// BenchmarkServePersisted compares one operation sent as text ("text": the
// analyzer's cache of verdicts by text) with the same operation sent as its
// APQ hash alone ("apq-hash": the document's verdict kept once), in the same
// run, over the demo platform in process (memory APQ store).
//
//	go test ./router -run '^$' -bench ServePersisted -cpu 1
func BenchmarkServePersisted(b *testing.B) {
	tr := newTestRouter(b, limits.Config{})
	const q = `query Brands($first: Int) { brands(first: $first) { edges { node { id name country } } } }`
	ext := apqExt(access.DocumentHash(q))
	vars := map[string]any{"first": 5}
	bodies := map[string]string{
		"text":     postBody(q, vars, ""),
		"apq-hash": postBody("", vars, ext),
	}
	// Register the text once.
	if w := tr.send("POST", "/graphql", "", postBody(q, vars, ext)); w.Code != 200 {
		b.Fatalf("%d %s", w.Code, w.Body)
	}
	for _, name := range []string{"text", "apq-hash"} {
		b.Run(name, func(b *testing.B) {
			body := bodies[name]
			b.ReportAllocs()
			n := 0
			cpu0 := processCPU()
			for b.Loop() {
				n++
				if w := tr.send("POST", "/graphql", "", body); w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(n), "cpu-ns/op")
		})
	}
}
