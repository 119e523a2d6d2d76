package subgraph

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"

	"github.com/vitolahq/vitola/internal/inproc"
)

// A call to a subgraph served in this process (internal/inproc) carries its
// parameters as Go values in its body, a varsBody, which the subgraph's
// transport takes as they are: the variables are not encoded to JSON by the
// caller and decoded by the subgraph, which at a few hundred requests a
// second was a fifth of the internal call's cost (most of it allocations).
// The request goes through the same handlers (the internal token's check
// included); any handler that reads the body instead (the router's, a
// test's) gets the JSON a remote call sends, encoded then. The variables
// taken are what encoding/json would have decoded from that JSON (numbers as
// json.Number), so that the subgraph sees one shape either way; a value of
// another kind makes the call send JSON from the start. Only a caller in
// this process can make such a body: nothing from the network is one.

// varsBody is the body of a call to a subgraph in this process.
type varsBody struct {
	params graphql.RawParams // the variables as jsonValue makes them
	head   []byte            // the operation's JSON up to its variables
	vars   map[string]any    // the caller's variables
	json   *bytes.Reader     // the body encoded, once a handler reads it
}

// Read reads the JSON a remote call would send.
func (b *varsBody) Read(p []byte) (int, error) {
	if b.json == nil {
		enc, err := json.Marshal(b.vars)
		if err != nil {
			return 0, err
		}
		b.json = bytes.NewReader(append(append(append(make([]byte, 0, len(b.head)+len(enc)+1), b.head...), enc...), '}'))
	}
	return b.json.Read(p)
}

func (b *varsBody) Close() error { return nil }

// handedOver returns the parameters r carries as Go values, if it does and
// its body has not been read.
func handedOver(r *http.Request) *graphql.RawParams {
	b, ok := r.Body.(*varsBody)
	if !ok || b.json != nil {
		return nil
	}
	return &b.params
}

// handOff returns the body that hands op's parameters to a subgraph in this
// process as Go values, and nil when the call must send them as JSON (the
// subgraph is remote, or a variable is of a kind jsonValue does not know).
func (c *Client) handOff(op *Operation, head []byte, vars map[string]any) io.ReadCloser {
	if !c.inProcess() {
		return nil
	}
	v, ok := jsonValue(vars)
	if !ok {
		return nil
	}
	m, _ := v.(map[string]any)
	return &varsBody{params: graphql.RawParams{Query: op.Query, OperationName: op.Name, Variables: m}, head: head, vars: vars}
}

// inProcess reports whether the client's transport serves its URL in this
// process; it is asked once.
func (c *Client) inProcess() bool {
	c.local.Do(func() {
		u, err := url.Parse(c.URL)
		c.isLocal = err == nil && c.HTTP != nil && inproc.InProcess(c.HTTP.Transport, u.Host)
	})
	return c.isLocal
}

// jsonValue returns v as encoding/json decodes it once encoded (objects as
// map[string]any, arrays as []any, numbers as json.Number), and false for a
// value it does not know or that would not come back the same (a string that
// is not UTF-8, which encoding would change).
func jsonValue(v any) (any, bool) {
	switch v := v.(type) {
	case nil:
		return nil, true
	case string:
		return v, utf8.ValidString(v)
	case bool:
		return v, true
	case int:
		return json.Number(strconv.Itoa(v)), true
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), true
	case float64:
		// encoding/json's own notation: 1e6 is 1000000, which an Int reads.
		b, err := json.Marshal(v)
		return json.Number(b), err == nil
	case json.Number:
		return v, true
	case *string:
		return deref(v)
	case *int:
		return deref(v)
	case *int64:
		return deref(v)
	case *float64:
		return deref(v)
	case *bool:
		return deref(v)
	case []string:
		if v == nil {
			return nil, true
		}
		out := make([]any, len(v))
		for i, s := range v {
			if !utf8.ValidString(s) {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	case []any:
		if v == nil {
			return nil, true
		}
		out := make([]any, len(v))
		for i, e := range v {
			var ok bool
			if out[i], ok = jsonValue(e); !ok {
				return nil, false
			}
		}
		return out, true
	case map[string]any:
		if v == nil {
			return nil, true
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			jv, ok := jsonValue(e)
			if !ok || !utf8.ValidString(k) {
				return nil, false
			}
			out[k] = jv
		}
		return out, true
	}
	return nil, false
}

// deref is jsonValue of what p points at, or nil for a nil p (JSON's null).
func deref[T any](p *T) (any, bool) {
	if p == nil {
		return nil, true
	}
	return jsonValue(*p)
}
