package subgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/inproc"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// The variables handed over in process are what encoding/json decodes from
// the JSON a remote call sends; a value that would not come back the same
// is refused, and the call sends JSON.
func TestJSONValueIsWhatJSONDecodes(t *testing.T) {
	seconds, none, name := int64(900), (*int64)(nil), "shop <&> ☕"
	for _, v := range []any{
		nil, "", "plain", name, "tab\tquote\"backslash\\", true, false,
		0, -7, math.MaxInt64, int64(math.MinInt64), 0.5, 1e6, 1e21, 1.5e-7, json.Number("12"),
		&seconds, none, &name, (*string)(nil), (*bool)(nil), new(bool), (*float64)(nil), new(float64), new(int), (*int)(nil),
		[]string{"a", "b"}, []string(nil), []any{1, "x", nil, []any{true}}, []any(nil),
		map[string]any{"input": map[string]any{"billingAccountId": "acc_1", "expiresInSeconds": &seconds, "cancelUrl": (*string)(nil),
			"key": map[string]any{"key": "k", "requestHash": "h"}}, "ids": []string{"x"}},
		map[string]any(nil), map[string]any{},
	} {
		got, ok := subgraph.JSONValue(v)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var want any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("JSONValue(%#v) = %#v, %v; JSON decodes %#v", v, got, ok, want)
		}
	}
	for _, v := range []any{"\xff", map[string]any{"\xfe": 1}, []string{"ok", "\xff"}, []any{"\xff"}, math.NaN(), math.Inf(1),
		struct{ A int }{1}, time.Now(), json.RawMessage(`{}`), map[string]int{"a": 1}, int32(1)} {
		if got, ok := subgraph.JSONValue(v); ok {
			t.Errorf("JSONValue(%#v) = %#v: want it refused (sent as JSON)", v, got)
		}
	}
}

// A call to a subgraph in this process hands its parameters over in its
// body; a remote call, a handler that reads the body, and a variable the
// hand-over does not know all get the JSON instead.
func TestClientHandsOverInProcess(t *testing.T) {
	vars := map[string]any{"q": "first", "n": 3}
	var handed any
	var read string
	answer := func(w http.ResponseWriter, r *http.Request) {
		handed, read = nil, ""
		if p := subgraph.HandedOver(r); p != nil {
			if p.Query != op.Query || p.OperationName != op.Name {
				t.Errorf("handed over %q %q", p.OperationName, p.Query)
			}
			handed = p.Variables
		} else {
			b, _ := io.ReadAll(r.Body)
			read = string(b)
			if subgraph.HandedOver(r) != nil {
				t.Error("a body read is handed over too")
			}
		}
		w.Header().Set(subgraph.DataLastHeader, "1")
		io.WriteString(w, `{"data":{"searchPage":1}}`+"\n")
	}
	local := &subgraph.Client{HTTP: &http.Client{Transport: &trust.Transport{Base: &inproc.Transport{Handlers: map[string]http.Handler{"catalog.internal": http.HandlerFunc(answer)}},
		Issuer: mustIssuer(t)}}, URL: "http://catalog.internal/graphql"}
	if _, err := local.Field(context.Background(), op, vars, "searchPage"); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"q": "first", "n": json.Number("3")}; !reflect.DeepEqual(handed, want) || read != "" {
		t.Fatalf("in process: handed over %#v (want %#v), read %q", handed, want, read)
	}
	wantJSON := `{"operationName":"Page","query":"query Page { searchPage(query: \"x\", first: 1) }","variables":{"n":3,"q":"first"}}`
	if _, err := local.Field(context.Background(), op, map[string]any{"q": "first", "n": int32(3)}, "searchPage"); err != nil || handed != nil || read != wantJSON {
		t.Fatalf("a variable the hand-over does not know: handed over %#v, read %q, %v", handed, read, err)
	}

	srv := httptest.NewServer(http.HandlerFunc(answer))
	defer srv.Close()
	remote := &subgraph.Client{HTTP: srv.Client(), URL: srv.URL}
	if _, err := remote.Field(context.Background(), op, vars, "searchPage"); err != nil || handed != nil || read != wantJSON {
		t.Fatalf("remote: handed over %#v, read %q, %v", handed, read, err)
	}
}

func mustIssuer(t *testing.T) *trust.Issuer {
	iss, err := trust.NewIssuer([]byte("0123456789abcdef0123456789abcdef"), "shim")
	if err != nil {
		t.Fatal(err)
	}
	return iss
}
