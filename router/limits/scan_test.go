package limits_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

func TestScanQuery(t *testing.T) {
	tests := []struct {
		name, query     string
		tokens, nesting int
	}{
		{"empty", ``, 0, 0},
		{"selection", `{ a }`, 3, 1},
		{"arguments and lists", `{ a(x: [[1]], y: {z: [2.5e3]}) { b } }`, 24, 4},
		{"every punctuator", `query Q($v: [Int!]! = [1] @d) { ...F ... on T { a: b } } fragment F on T { c | & }`, 39, 2},
		{"ignored tokens", "\ufeff{ a, b,, \t\r\n c }", 5, 1},
		{"brackets in a string", `{ a(x: "[{(") }`, 8, 2},
		{"escaped quote in a string", `{ a(x: "\"[[") }`, 8, 2},
		{"escaped backslash then quote", `{ a(x: "\\") [ }`, 9, 2},
		{"unterminated string ends at the line", "{ a(x: \"[[\n[[ ) }", 10, 4},
		{"brackets in a comment", "{ a # [[[{{{(((\n }", 3, 1},
		{"comment ends at CR", "{ a # [[[\r[ }", 4, 2},
		{"block string", `{ a(x: """[{( " "" \ """) }`, 8, 2},
		{"escaped triple quote in a block string", `{ a(x: """\"""[[""") }`, 8, 2},
		{"unterminated block string runs to the end", `{ a(x: """[[[ } `, 6, 2},
		// gqlparser reads one block string holding a""""[[[[; the engine ends
		// it at the three quotes after \" and reads the brackets. The larger
		// figures count.
		{"block string read both ways", `{ a(x: """a\"""" [[[[ """) }`, 11, 6},
		{"four quotes close a block string after the last three for gqlparser", `{ a(x: """a"""") }`, 8, 2},
		{"spread and dots", `{ ...F . .. }`, 7, 1},
		{"numbers", `{ a(x: -1.5e+3, y: 0, z: 12ab) }`, 15, 2},
		{"unicode in strings and names", `{ a(x: "ça [ va") é }`, 10, 2},
		{"unbalanced closers never go below zero", `}}}{ a }`, 6, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := limits.ScanQuery(tt.query)
			if got.Tokens != tt.tokens || got.Nesting != tt.nesting {
				t.Fatalf("ScanQuery(%q) = %+v, want tokens %d nesting %d", tt.query, got, tt.tokens, tt.nesting)
			}
		})
	}
}

func TestScanJSON(t *testing.T) {
	tests := []struct {
		name, json      string
		tokens, nesting int
	}{
		{"empty object", `{}`, 2, 1},
		{"request", `{"query": "{ a }", "variables": {"x": [1, true, null]}}`, 13, 3},
		{"brackets in strings", `{"a": "[[{{\"]]"}`, 4, 1},
		{"escaped backslash", `{"a": "\\", "b": [[]]}`, 9, 3},
		{"numbers", `[-1.5e+3, 0]`, 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := limits.ScanJSON([]byte(tt.json))
			if got.Tokens != tt.tokens || got.Nesting != tt.nesting {
				t.Fatalf("ScanJSON(%s) = %+v, want tokens %d nesting %d", tt.json, got, tt.tokens, tt.nesting)
			}
		})
	}
}

// rejection returns the rejection's only error's extensions, or nil.
func rejection(t *testing.T, err error) map[string]any {
	t.Helper()
	if err == nil {
		return nil
	}
	var rej *limits.Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("not a rejection: %v", err)
	}
	if rej.Errors[0].Message == "" {
		t.Fatal("rejection without a message")
	}
	return rej.Errors[0].Extensions
}

// Each bound refuses one past its maximum, naming itself, and lets its maximum
// through.
func TestPreParseBounds(t *testing.T) {
	cfg := limits.Config{MaxQueryBytes: 400, MaxTokens: 60, MaxNesting: 6, MaxDefinitions: 4, MaxFragmentProduct: 24}
	a, err := limits.New(clientSDL, []string{subgraphSDL}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// inline nests a valid selection n levels deep with inline fragments.
	inline := func(n int) string {
		return strings.Repeat("... on Query { ", n-1) + "__typename" + strings.Repeat(" }", n-1)
	}
	fragments := func(n, fields int) string {
		q := "{ "
		for i := range n {
			q += "...F" + strconv.Itoa(i) + " "
		}
		q += "}"
		for i := range n {
			q += " fragment F" + strconv.Itoa(i) + " on Query { " + strings.Repeat("__typename ", fields) + "}"
		}
		return q
	}
	tests := []struct {
		limit       string
		atMax, over string
		actual      int
	}{
		// { __typename } and a comment filling it to 400 bytes, then 401.
		{"query bytes", "{ __typename }#" + strings.Repeat("x", 400-15), "{ __typename }#" + strings.Repeat("x", 401-15), 401},
		// { a b … }: 60 tokens, then 61 (comments do not count).
		{"tokens", "{ a " + strings.Repeat("b ", 57) + "} # c d", "{ a " + strings.Repeat("b ", 58) + "}", 61},
		{"nesting", "{ " + inline(6) + " }", "{ " + inline(7) + " }", 7},
		{"nesting", `{ brands(after: [[[["x"]]]]) { edges { cursor } } }`, `{ brands(after: [[[[["x"]]]]]) { edges { cursor } } }`, 7},
		{"definitions", fragments(3, 1), fragments(4, 1), 5},
		// 2 fragments × (2 spreads + 2 × 10 fields) = 44 > 24; 2 × (2 + 2 × 5) = 24.
		{"fragment product", fragments(2, 5), fragments(2, 10), 44},
	}
	for _, tt := range tests {
		t.Run(tt.limit+" "+strconv.Itoa(tt.actual), func(t *testing.T) {
			if ext := rejection(t, checkErr(a, tt.atMax)); ext != nil && ext["limit"] == tt.limit {
				t.Fatalf("at the maximum: refused by %s (%v)", tt.limit, ext)
			}
			ext := rejection(t, checkErr(a, tt.over))
			if ext == nil {
				t.Fatal("one past the maximum: accepted")
			}
			want := map[string]any{"code": limits.CodeTooLarge, "limit": tt.limit, "actual": tt.actual, "maximum": limitOf(cfg, tt.limit)}
			for k, v := range want {
				if ext[k] != v {
					t.Fatalf("extensions = %v, want %v", ext, want)
				}
			}
		})
	}
}

func checkErr(a *limits.Analyzer, q string) error {
	_, err := a.Check(q, "", nil)
	return err
}

func limitOf(c limits.Config, name string) int {
	return map[string]int{"query bytes": c.MaxQueryBytes, "tokens": c.MaxTokens, "nesting": c.MaxNesting,
		"definitions": c.MaxDefinitions, "fragment product": c.MaxFragmentProduct}[name]
}

func TestRequestJSONBounds(t *testing.T) {
	a, err := limits.New(clientSDL, []string{subgraphSDL}, limits.Config{MaxTokens: 20, MaxNesting: 3})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body  string
		limit       string
		actual, max int
	}{
		// The request's object does not count: variables {"v": [[1]]} are 3 deep.
		{"nesting at the maximum", `{"query": "{ a }", "variables": {"v": [[1]]}}`, "", 0, 0},
		{"nesting over", `{"query": "{ a }", "variables": {"v": [[[1]]]}}`, "nesting", 4, 3},
		{"nesting in another member", `{"query": "{ a }", "extensions": {"v": [[[1]]]}}`, "nesting", 4, 3},
		// { "query" "{ a }" "variables" { "v" [ 1 … ] } }: 10 and the numbers.
		{"tokens at the maximum", `{"query": "{ a }", "variables": {"v": [1,2,3,4,5,6,7,8,9,10]}}`, "", 0, 0},
		{"tokens over", `{"query": "{ a }", "variables": {"v": [1,2,3,4,5,6,7,8,9,10,11]}}`, "tokens", 21, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext := rejection(t, a.CheckRequestJSON([]byte(tt.body)))
			if tt.limit == "" {
				if ext != nil {
					t.Fatalf("refused: %v", ext)
				}
				return
			}
			if ext == nil || ext["code"] != limits.CodeTooLarge || ext["limit"] != tt.limit || ext["actual"] != tt.actual || ext["maximum"] != tt.max {
				t.Fatalf("extensions = %v, want %s %d of %d", ext, tt.limit, tt.actual, tt.max)
			}
		})
	}
}

// A document of thousands of errors is answered with the first MaxErrors and a
// count of the rest.
func TestValidationErrorsAreCapped(t *testing.T) {
	a := analyzer(t)
	many := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("t" + strconv.Itoa(i) + ": __typename @nope ")
		}
		return "{ " + b.String() + "}"
	}
	_, err := a.Check(many(50), "", nil)
	var rej *limits.Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("accepted: %v", err)
	}
	// 50 × (unknown directive) is under the cap; 150 is over it.
	if len(rej.Errors) != 50 {
		t.Fatalf("%d errors for 50 unknown directives", len(rej.Errors))
	}
	_, err = a.Check(many(150), "", nil)
	if !errors.As(err, &rej) {
		t.Fatalf("accepted: %v", err)
	}
	if len(rej.Errors) != limits.MaxErrors+1 || !strings.Contains(rej.Errors[limits.MaxErrors].Message, "50 more") {
		t.Fatalf("%d errors, last %q", len(rej.Errors), rej.Errors[len(rej.Errors)-1].Message)
	}
}
