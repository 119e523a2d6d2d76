package limits_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	gqlast "github.com/vektah/gqlparser/v2/ast"
	gqllexer "github.com/vektah/gqlparser/v2/lexer"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/lexer"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/lexer/keyword"

	"github.com/vitolahq/vitola/router/limits"
)

// FuzzPreParse checks the pre-parse scanners against the lexers of the two
// parsers that read the text after them, and the bounds against the figures:
//   - on any text gqlparser's lexer reads to the end, ScanQuery counts at least
//     its tokens and its nesting, and exactly those when the text has no block
//     string (only there may the engine read more);
//   - on such a text the engine's lexer (graphql-go-tools) never finds deeper
//     nesting than ScanQuery: what gqlparser accepts, the engine parses next;
//   - on any valid JSON, ScanJSON's figures are encoding/json's;
//   - CheckText and CheckRequestJSON refuse exactly what is over a bound.
//
// Run it longer with
//
//	go test ./router/limits -run '^$' -fuzz FuzzPreParse -fuzztime 60s
func FuzzPreParse(f *testing.F) {
	for _, seed := range []string{
		`{ a }`,
		`{ a(x: [[1]], y: {z: [2.5e3, -1]}) { b } }`,
		`query Q($v: [[Int!]!] = [[1]] @d) { ...F ... on T { a: b } } fragment F on T { c }`,
		`{ a(x: "[[{(") }`,
		`{ a(x: "unterminated [[`,
		"{ a(x: \"ends at the line [[\n[[ ) }",
		"{ a(x: \"escaped newline \\\n[[ ) }",
		`{ a(x: "\"[[\\") [ }`,
		`{ a(x: "\u00e9 \ud83d\ude00 [") }`,
		`{ a(x: """[{( " "" \ """) }`,
		`{ a(x: """a\"""[[[""") }`,
		`{ a(x: """a\"""" [[[[ """) }`,
		`{ a(x: """a"""") [[ }`,
		`{ a(x: """\\""" [[ """) }`,
		`"""""""`,
		`{ a(x: """unterminated [[[ } `,
		"# comment [[[{{{\n{ a }",
		"{ a # [[[\r[ }",
		"{ a # \x01 [[ }",
		"\ufeff{ a, b,, \t c }",
		"{ ...F . .. }",
		"{ a(x: 01 -a 1.e5 1e) }",
		"é{ a }",
		`{"query": "{ a }", "variables": {"x": [[1, "]]"], "y": {"z": null}}}`,
		`{"a": "\\\"[[", "b": [true, false, -1.5e-3]}`,
		`[[[[]]]]`,
	} {
		f.Add(seed)
	}
	cfg := limits.Config{MaxQueryBytes: 200, MaxTokens: 40, MaxNesting: 5}
	a, err := limits.New(clientSDL, []string{subgraphSDL}, cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		got := limits.ScanQuery(q)
		if got.Tokens < 0 || got.Nesting < 0 || got.Nesting > got.Tokens || got.Tokens > len(q) {
			t.Fatalf("ScanQuery(%q) = %+v", q, got)
		}
		if ref, ok := gqlparserText(q); ok {
			if got.Tokens < ref.Tokens || got.Nesting < ref.Nesting {
				t.Fatalf("ScanQuery(%q) = %+v, gqlparser's lexer %+v", q, got, ref)
			}
			if !bytes.Contains([]byte(q), []byte(`"""`)) && got != ref {
				t.Fatalf("ScanQuery(%q) = %+v, gqlparser's lexer %+v", q, got, ref)
			}
			if eng := engineNesting(q); eng > got.Nesting {
				t.Fatalf("ScanQuery(%q) nesting %d, the engine's lexer %d", q, got.Nesting, eng)
			}
		}
		over := len(q) > cfg.MaxQueryBytes || got.Tokens > cfg.MaxTokens || got.Nesting > cfg.MaxNesting
		if err := a.CheckText(q); (err != nil) != over {
			t.Fatalf("CheckText(%q) = %v with %d bytes and %+v", q, err, len(q), got)
		}

		body := []byte(q)
		js := limits.ScanJSON(body)
		if js.Tokens < 0 || js.Nesting < 0 || js.Nesting > js.Tokens {
			t.Fatalf("ScanJSON(%q) = %+v", q, js)
		}
		if json.Valid(body) {
			if ref := encodingJSON(t, body); js != ref {
				t.Fatalf("ScanJSON(%q) = %+v, encoding/json %+v", q, js, ref)
			}
		}
		over = js.Tokens > cfg.MaxTokens || js.Nesting-1 > cfg.MaxNesting
		if err := a.CheckRequestJSON(body); (err != nil) != over {
			t.Fatalf("CheckRequestJSON(%q) = %v with %+v", q, err, js)
		}
	})
}

// gqlparserText counts what gqlparser's lexer reads, if it reads the whole
// text without an error.
func gqlparserText(q string) (limits.Text, bool) {
	var t limits.Text
	depth := 0
	l := gqllexer.New(&gqlast.Source{Input: q})
	for {
		tok, err := l.ReadToken()
		if err != nil {
			return t, false
		}
		switch tok.Kind {
		case gqllexer.EOF:
			return t, true
		case gqllexer.Comment:
			continue
		case gqllexer.BraceL, gqllexer.BracketL, gqllexer.ParenL:
			depth++
			t.Nesting = max(t.Nesting, depth)
		case gqllexer.BraceR, gqllexer.BracketR, gqllexer.ParenR:
			depth = max(depth-1, 0)
		}
		t.Tokens++
	}
}

// engineNesting is the deepest nesting graphql-go-tools' lexer reads.
func engineNesting(q string) int {
	var in ast.Input
	in.ResetInputString(q)
	var l lexer.Lexer
	l.SetInput(&in)
	depth, deepest := 0, 0
	for {
		switch l.Read().Keyword {
		case keyword.EOF:
			return deepest
		case keyword.LBRACE, keyword.LBRACK, keyword.LPAREN:
			depth++
			deepest = max(deepest, depth)
		case keyword.RBRACE, keyword.RBRACK, keyword.RPAREN:
			depth = max(depth-1, 0)
		}
	}
}

// encodingJSON counts a valid JSON text's tokens and nesting with encoding/json.
func encodingJSON(t *testing.T, b []byte) limits.Text {
	var out limits.Text
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("decode %q: %v", b, err)
		}
		out.Tokens++
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			out.Nesting = max(out.Nesting, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}
