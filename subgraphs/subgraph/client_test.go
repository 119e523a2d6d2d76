package subgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/inproc"
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

// In process, answers arrive in buffers the transport reuses: Field's value
// is the caller's to keep, WriteField's only during write.
func TestClientFieldInProcess(t *testing.T) {
	answer := func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Variables struct{ Q string } `json:"variables"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set(subgraph.DataLastHeader, "1")
		fmt.Fprintf(w, `{"data":{"searchPage":{"q":%q}}}`+"\n", req.Variables.Q)
	}
	c := &subgraph.Client{HTTP: &http.Client{Transport: &inproc.Transport{Handlers: map[string]http.Handler{"catalog.internal": http.HandlerFunc(answer)}}}, URL: "http://catalog.internal/graphql"}
	kept, err := c.Field(context.Background(), op, map[string]any{"q": "first"}, "searchPage")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		q := strings.Repeat("z", i)
		var got string
		err := c.WriteField(context.Background(), op, map[string]any{"q": q}, "searchPage", func(v json.RawMessage) { got = string(v) })
		if want := `{"q":"` + q + `"}`; err != nil || got != want {
			t.Fatalf("WriteField = %s, %v; want %s", got, err, want)
		}
	}
	if string(kept) != `{"q":"first"}` {
		t.Fatalf("Field's value changed under later calls: %s", kept)
	}
}
