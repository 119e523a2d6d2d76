//go:build unix

package router_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

// The worst request bodies we could build, each of one shape, against a plain
// query in the same run: every body up to the size limit must be answered in
// under 50 ms and 20 MB on one core.
//
//	go test ./router -run '^$' -bench PreParse -cpu 1 -benchtime 20x
//
// cpu-ns/op is the process's CPU time per request (getrusage, garbage
// collection included): on a shared machine it moves much less than ns/op.
// Each shape comes twice: "max" is the largest body of the shape that the
// pre-parse bounds (query bytes, tokens, nesting, fragments) let through to the
// parsers, "full" fills the whole body limit (the attack as sent; the bounds
// refuse it).
// B/op is everything one request allocates, so it also bounds the request's
// peak memory. Each iteration changes a comment in the operation, so neither
// the analyzer's cache nor the engine's plan cache answers it.

// bodyLimit is the default limits.Config.MaxBodyBytes (the benchmark checks
// it).
const bodyLimit = 256 << 10

// A shape makes a request body of the shape from a size parameter n; bodies
// grow with n.
type shape struct {
	name string
	body func(n int) []byte
	// deep, when set, makes the shape's full body instead of body: one
	// structure as deep as n, where body repeats ones as deep as the bound.
	deep func(n int) []byte
}

// stamp is a comment every body's operation starts with; each iteration writes
// its number into it.
const stamp = "#00000000\n"

func rep(n int, f func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(f(i))
		b.WriteByte(' ')
	}
	return b.String()
}

func op(query string) []byte { return opVars(query, nil) }

func opVars(query string, vars any) []byte {
	return queryBody(stamp+query, vars)
}

// rawVars is a body whose variables are given as JSON text.
func rawVars(query, vars string) []byte {
	q, _ := json.Marshal(stamp + query)
	return []byte(`{"query":` + string(q) + `,"variables":` + vars + `}`)
}

// deepList is a list value nested d levels: [[[…]]].
func deepList(d int) string { return strings.Repeat("[", d) + strings.Repeat("]", d) }

func deepObject(d int) string { return strings.Repeat("{a:", d) + "1" + strings.Repeat("}", d) }

func deepSelection(d int) string {
	return strings.Repeat("a { ", d) + "b" + strings.Repeat(" }", d)
}

// limitsDefault is the nesting every "max" shape goes to (the default bound).
const nestingDefault = 64

var shapes = []shape{
	// The attack: a list nested as deep as the body allows; "max" repeats
	// lists as deep as the bound allows until the token bound.
	{name: "nested-lists", body: func(n int) []byte {
		return op(`{ brands(after: [` + rep(n, func(int) string { return deepList(nestingDefault - 3) }) + `]) { edges { cursor } } }`)
	}, deep: func(n int) []byte {
		return op(`{ brands(after: ` + deepList(n) + `) { edges { cursor } } }`)
	}},
	{name: "nested-objects", body: func(n int) []byte {
		return op(`{ brands(after: [` + rep(n, func(int) string { return deepObject(nestingDefault - 3) }) + `]) { edges { cursor } } }`)
	}, deep: func(n int) []byte {
		return op(`{ brands(after: ` + deepObject(n) + `) { edges { cursor } } }`)
	}},
	{name: "nested-selections", body: func(n int) []byte {
		return op(`{ ` + rep(n, func(i int) string { return "a" + strconv.Itoa(i) + ": " + deepSelection(nestingDefault-1) }) + ` }`)
	}, deep: func(n int) []byte {
		return op(`{ ` + deepSelection(n) + ` }`)
	}},
	{name: "nested-list-types", body: func(n int) []byte {
		return op(`query(` + rep(n, func(i int) string {
			return "$v" + strconv.Itoa(i) + ": " + strings.Repeat("[", nestingDefault-1) + "Int" + strings.Repeat("]", nestingDefault-1)
		}) + `) { __typename }`)
	}, deep: func(n int) []byte {
		return op(`query(` + rep(1, func(int) string { return "$v: " + strings.Repeat("[", n) + "Int" + strings.Repeat("]", n) }) + `) { __typename }`)
	}},
	// A value error message quotes the value: nested deep, is it quoted once a
	// level?
	{name: "nested-list-echo", body: func(n int) []byte {
		return op(`{ brands(after: ` + strings.Repeat("[", nestingDefault-3) + strconv.Quote(strings.Repeat("x", n)) + strings.Repeat("]", nestingDefault-3) + `) { edges { cursor } } }`)
	}},
	{name: "long-string", body: func(n int) []byte {
		return op(`{ searchCigars(query: ` + strconv.Quote(strings.Repeat("x", n)) + `, first: 1) { edges { cursor } } }`)
	}},
	{name: "long-string-variable", body: func(n int) []byte {
		return opVars(`query($q: String!) { searchCigars(query: $q, first: 1) { edges { cursor } } }`, map[string]any{"q": strings.Repeat("x", n)})
	}},
	{name: "long-number", body: func(n int) []byte {
		return op(`{ brands(first: 1` + strings.Repeat("0", n) + `) { edges { cursor } } }`)
	}},
	{name: "block-strings", body: func(n int) []byte {
		// Escaped quotes, backslashes and brackets inside: both parsers' readings.
		return op(`{ searchCigars(query: """` + strings.Repeat(`a\"""[{(\\"`, n) + `""", first: 1) { edges { cursor } } }`)
	}},
	{name: "directives", body: func(n int) []byte {
		return op(`{ __typename ` + rep(n, func(int) string { return "@skip(if: false)" }) + ` }`)
	}},
	{name: "unknown-directives", body: func(n int) []byte {
		return op(`{ __typename ` + rep(n, func(i int) string { return "@d" + strconv.Itoa(i) }) + ` }`)
	}},
	{name: "variables", body: func(n int) []byte {
		return op(`query(` + rep(n, func(i int) string { return "$v" + strconv.Itoa(i) + ": Int" }) + `) { __typename }`)
	}},
	{name: "used-variables", body: func(n int) []byte {
		return op(`query(` + rep(n, func(i int) string { return "$v" + strconv.Itoa(i) + ": Boolean = true" }) + `) { __typename ` +
			rep(n, func(i int) string { return "@include(if: $v" + strconv.Itoa(i) + ")" }) + ` }`)
	}},
	{name: "fragments", body: func(n int) []byte {
		return op(`{ ` + rep(n, func(i int) string { return "...F" + strconv.Itoa(i) }) + ` } ` +
			rep(n, func(i int) string {
				return "fragment F" + strconv.Itoa(i) + " on Query { a" + strconv.Itoa(i) + ": __typename }"
			}))
	}},
	{name: "fragment-chain", body: func(n int) []byte {
		return op(`{ ...F0 } ` + rep(n, func(i int) string {
			return "fragment F" + strconv.Itoa(i) + " on Query { ...F" + strconv.Itoa(i+1) + " }"
		}) + " fragment F" + strconv.Itoa(n) + " on Query { __typename }")
	}},
	// Fragments compared pairwise, each as large as the token bound allows.
	{name: "fragment-pairs", body: func(n int) []byte {
		const m = 99 // one operation and 99 fragments: the definitions bound
		return op(`{ ` + rep(m, func(i int) string { return "...F" + strconv.Itoa(i) }) + ` } ` +
			rep(m, func(i int) string {
				return "fragment F" + strconv.Itoa(i) + " on Query { " + rep(n, func(j int) string { return "a" + strconv.Itoa(i) + "_" + strconv.Itoa(j) + ": __typename" }) + "}"
			}))
	}},
	// Each fragment spreads the next: validation walks the rest of the chain
	// from each one.
	{name: "fragment-chain-wide", body: func(n int) []byte {
		const m = 99
		return op(`{ ...F0 } ` + rep(m, func(i int) string {
			next := ""
			if i+1 < m {
				next = "...F" + strconv.Itoa(i+1)
			}
			return "fragment F" + strconv.Itoa(i) + " on Query { " + next + " " + rep(n, func(j int) string { return "a" + strconv.Itoa(i) + "_" + strconv.Itoa(j) + ": __typename" }) + "}"
		}))
	}},
	// Few fragments, many fields each: the same product.
	{name: "fragment-pairs-few", body: func(n int) []byte {
		const m = 5
		return op(`{ ` + rep(m, func(i int) string { return "...F" + strconv.Itoa(i) }) + ` } ` +
			rep(m, func(i int) string {
				return "fragment F" + strconv.Itoa(i) + " on Query { " + rep(n, func(j int) string { return "a" + strconv.Itoa(i) + "_" + strconv.Itoa(j) + ": __typename" }) + "}"
			}))
	}},
	// Fields outside fragments, compared with each fragment spread beside them.
	{name: "fields-and-spreads", body: func(n int) []byte {
		const m = 20
		return op(`{ ` + rep(n, func(j int) string { return "b" + strconv.Itoa(j) + ": __typename" }) + rep(m, func(i int) string { return "...F" + strconv.Itoa(i) }) + ` } ` +
			rep(m, func(i int) string {
				return "fragment F" + strconv.Itoa(i) + " on Query { a" + strconv.Itoa(i) + ": __typename }"
			}))
	}},
	{name: "spreads", body: func(n int) []byte {
		return op(`{ ` + rep(n, func(i int) string { return "...F" }) + ` } fragment F on Query { __typename }`)
	}},
	{name: "inline-fragments", body: func(n int) []byte {
		return op(`{ ` + rep(n, func(i int) string { return "... on Query { a" + strconv.Itoa(i) + ": __typename }" }) + ` }`)
	}},
	{name: "aliases", body: func(n int) []byte {
		return op(`{ ` + rep(n, func(i int) string { return "a" + strconv.Itoa(i) + ": __typename" }) + ` }`)
	}},
	{name: "unknown-fields", body: func(n int) []byte {
		return op(`{ ` + rep(n, func(i int) string { return "f" + strconv.Itoa(i) }) + ` }`)
	}},
	{name: "arguments", body: func(n int) []byte {
		return op(`{ __typename(` + rep(n, func(i int) string { return "a" + strconv.Itoa(i) + ": 1" }) + `) }`)
	}},
	{name: "operations", body: func(n int) []byte {
		q := rep(n, func(i int) string { return "query Q" + strconv.Itoa(i) + " { __typename }" })
		b, _ := json.Marshal(map[string]any{"query": stamp + q, "operationName": "Q0"})
		return b
	}},
	// A valid operation with a large answer: the whole schema, under as many
	// aliases as the limits allow.
	{name: "introspection", body: func(n int) []byte {
		return op(`{ ` + rep(min(n, 10), func(i int) string {
			return "s" + strconv.Itoa(i) + `: __schema { types { name fields { name args { name type { name ofType { name } } } type { name ofType { name ofType { name } } } } } }`
		}) + ` }`)
	}},
	{name: "comments", body: func(n int) []byte {
		return op(strings.Repeat("# {[(\"\"\"\n", n) + `{ __typename }`)
	}},
	{name: "deep-variables-json", body: func(n int) []byte {
		one := strings.Repeat("[", nestingDefault-2) + strings.Repeat("]", nestingDefault-2)
		return rawVars(`query($a: String) { brands(after: $a) { edges { cursor } } }`, `{"a":[`+strings.Repeat(one+",", n)+`0]}`)
	}, deep: func(n int) []byte {
		return rawVars(`query($a: String) { brands(after: $a) { edges { cursor } } }`, `{"a":`+strings.Repeat("[", n)+strings.Repeat("]", n)+`}`)
	}},
	{name: "wide-variables-json", body: func(n int) []byte {
		return rawVars(`query($a: String) { brands(after: $a) { edges { cursor } } }`, `{"a":[`+strings.Repeat("0,", n)+`0]}`)
	}},
	{name: "many-variables-json", body: func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range n {
			fmt.Fprintf(&b, `"v%d":0,`, i)
		}
		b.WriteString(`"a":"x"}`)
		return rawVars(`query($a: String) { brands(after: $a) { edges { cursor } } }`, b.String())
	}},
}

// refusedBeforeParsing reports whether the router refused a body with one of
// the pre-parse bounds.
func refusedBeforeParsing(tb testing.TB, tr *testRouter, body []byte) bool {
	w := tr.serve(body)
	if w.Code != 400 {
		return false
	}
	r := decodeReply(tb, w)
	if len(r.Errors) == 0 {
		return false
	}
	switch r.Errors[0].Extensions["limit"] {
	case "query bytes", "tokens", "nesting", "definitions", "fragment product":
		return true
	}
	return false
}

// largest finds the largest n whose body fits (fits is monotone in n), or the
// smallest with the largest body where bodies stop growing.
func largest(gen func(int) []byte, fits func([]byte) bool) int {
	ok := func(n int) bool { b := gen(n); return len(b) <= bodyLimit && fits(b) }
	lo, hi := 0, 1
	for ok(hi) {
		if len(gen(hi)) == len(gen(lo)) {
			return lo
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

func BenchmarkPreParse(b *testing.B) {
	tr := newTestRouter(b, limits.Config{})
	run := func(b *testing.B, n int, body []byte, wantStatus int) {
		at := bytes.Index(body, []byte("#00000000"))
		if at < 0 {
			b.Fatal("body without its stamp")
		}
		if w := tr.serve(body); w.Code != wantStatus && wantStatus != 0 {
			b.Fatalf("status %d, want %d: %.300s", w.Code, wantStatus, w.Body.Bytes())
		}
		b.ReportAllocs()
		i := 0
		cpu0 := processCPU()
		for b.Loop() {
			i++
			copy(body[at+1:], fmt.Sprintf("%08d", i))
			tr.serve(body)
		}
		b.ReportMetric(float64(processCPU()-cpu0)/float64(i), "cpu-ns/op")
		b.ReportMetric(float64(len(body)), "body-B")
		b.ReportMetric(float64(n), "n")
	}
	if w := tr.serve(bytes.Repeat([]byte(" "), bodyLimit+1)); w.Code != 413 {
		b.Fatalf("a body over %d bytes: %d, want 413", bodyLimit, w.Code)
	}
	b.Run("plain-query", func(b *testing.B) {
		run(b, 1, op(`{ brands(first: 5) { edges { node { name country } } } }`), 200)
	})
	for _, s := range shapes {
		b.Run(s.name+"/max", func(b *testing.B) {
			n := largest(s.body, func(body []byte) bool { return !refusedBeforeParsing(b, tr, body) })
			run(b, n, s.body(n), 0)
		})
		full := s.body
		if s.deep != nil {
			full = s.deep
		}
		b.Run(s.name+"/full", func(b *testing.B) {
			n := largest(full, func([]byte) bool { return true })
			if s.deep == nil && !refusedBeforeParsing(b, tr, full(n)) {
				b.Skip("the whole body limit passes the bounds: see max")
			}
			run(b, n, full(n), 400)
		})
	}
}
