package subgraph_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

var op = subgraph.MustParse(`query Page { searchPage(query: "x", first: 1) }`)

func TestClientField(t *testing.T) {
	tests := []struct {
		name, body, want, code string
		ours                   bool // written by our transport (data last)
	}{
		{"clean answer passes through", `{"data":{"searchPage":{"data":[{"id":"cig_1"}],"pagination":{"hasNextPage":false,"endCursor":null}}}}` + "\n",
			`{"data":[{"id":"cig_1"}],"pagination":{"hasNextPage":false,"endCursor":null}}`, "", true},
		{"another server's extensions after the data", `{"data":{"searchPage":{"a":1}},"extensions":{"x":1}}` + "\n", `{"a":1}`, "", false},
		{"our extensions come first", `{"extensions":{"x":{"y":1}},"data":{"searchPage":{"a":1}}}` + "\n", `{"a":1}`, "", true},
		{"errors are returned with their code", `{"errors":[{"message":"cursor is not a cursor","extensions":{"code":"INVALID_CURSOR"}}],"data":null}` + "\n", "", "INVALID_CURSOR", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.ours {
					w.Header().Set(subgraph.DataLastHeader, "1")
				}
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := &subgraph.Client{HTTP: srv.Client(), URL: srv.URL}
			got, err := c.Field(context.Background(), op, nil, "searchPage")
			var gerrs subgraph.Errors
			if tt.code != "" {
				if !errors.As(err, &gerrs) || gerrs.Code() != tt.code {
					t.Fatalf("err = %v, want code %s", err, tt.code)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Field = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestMustParseRefusesBadOperations(t *testing.T) {
	for _, q := range []string{"{ unnamed }", "query A { x } query B { y }", "query A { x"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MustParse(%q) did not panic", q)
				}
			}()
			subgraph.MustParse(q)
		}()
	}
}
