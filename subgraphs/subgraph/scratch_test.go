package subgraph_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// pageSchema is an executable schema of one field, page, whose value resolve
// renders; like gqlgen's generated code it copies the value into the
// response's own buffer.
type pageSchema struct {
	schema  *ast.Schema
	resolve func(ctx context.Context) []byte
}

func (s pageSchema) Schema() *ast.Schema { return s.schema }
func (s pageSchema) Complexity(context.Context, string, string, int, map[string]any) (int, bool) {
	return 0, false
}
func (s pageSchema) Exec(context.Context) graphql.ResponseHandler {
	return func(ctx context.Context) *graphql.Response {
		data := append([]byte(`{"page":`), s.resolve(ctx)...)
		return &graphql.Response{Data: append(data, '}')}
	}
}

// TestScratchLentPerResponse: a buffer Scratch lends under the transport is
// nobody else's until its response is written, whatever runs meanwhile.
func TestScratchLentPerResponse(t *testing.T) {
	bStarted, bDone := make(chan struct{}), make(chan struct{})
	resolve := func(ctx context.Context) []byte {
		who := graphql.GetOperationContext(ctx).OperationName
		buf := append(subgraph.Scratch(ctx, 64), `"`+strings.Repeat(who, 20)+`"`...)
		if who == "A" { // A holds its buffer while B runs from start to end
			close(bStarted)
			<-bDone
		}
		return buf
	}
	srv := httptest.NewServer(subgraph.NewGraphQLServer(pageSchema{schema: gqlparser.MustLoadSchema(&ast.Source{Input: "type Query { page: String }"}), resolve: resolve}))
	defer srv.Close()
	ask := func(name string) string {
		res, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"operationName":"`+name+`","query":"query `+name+` { page }"}`))
		if err != nil {
			t.Error(err)
			return ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	gotA := make(chan string)
	go func() { gotA <- ask("A") }()
	<-bStarted
	for range 5 {
		if got, want := ask("B"), `{"data":{"page":"`+strings.Repeat("B", 20)+`"}}`+"\n"; got != want {
			t.Errorf("B = %s, want %s", got, want)
		}
	}
	close(bDone)
	if got, want := <-gotA, `{"data":{"page":"`+strings.Repeat("A", 20)+`"}}`+"\n"; got != want {
		t.Errorf("A = %s, want %s", got, want)
	}
}

func TestScratchElsewhereIsFresh(t *testing.T) {
	a := append(subgraph.Scratch(context.Background(), 4), "aaaa"...)
	b := append(subgraph.Scratch(context.Background(), 4), "bbbb"...)
	if string(a) != "aaaa" || string(b) != "bbbb" {
		t.Fatalf("a = %q, b = %q", a, b)
	}
}
