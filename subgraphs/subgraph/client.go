package subgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// Operation is an internal GraphQL operation, parsed once when the caller starts
// (a malformed one panics at start-up, not on a request).
type Operation struct {
	Name  string
	Query string
	// head is the request body up to the variables, encoded once.
	head []byte
}

// MustParse checks an operation's syntax and returns it.
func MustParse(query string) *Operation {
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		panic(fmt.Sprintf("internal operation does not parse: %v\n%s", err, query))
	}
	if len(doc.Operations) != 1 || doc.Operations[0].Name == "" {
		panic("internal operations must hold exactly one named operation:\n" + query)
	}
	op := &Operation{Name: doc.Operations[0].Name, Query: query}
	op.head = op.encodeHead()
	return op
}

// encodeHead encodes {"operationName":…,"query":…,"variables": — the part of
// every request for op that is always the same.
func (op *Operation) encodeHead() []byte {
	name, _ := json.Marshal(op.Name)
	query, _ := json.Marshal(op.Query)
	head := append([]byte(`{"operationName":`), name...)
	head = append(append(head, `,"query":`...), query...)
	return append(head, `,"variables":`...)
}

// Client calls one subgraph's /graphql. Its HTTP client's transport carries the
// internal token (a trust.Transport), with the caller's identity from the context.
// Pointed at the router's /graphql (from the shim), it runs federated
// operations: the router takes the shim's internal token for a developer key.
type Client struct {
	HTTP *http.Client
	URL  string

	local   sync.Once // inProcess, asked once
	isLocal bool
}

// Error is a GraphQL error a subgraph answered, with its extensions.code.
type Error struct {
	Message string
	Code    string
	// Extensions are the error's other extensions (a balance, a reason).
	Extensions map[string]any
}

func (e *Error) Error() string { return e.Message }

// Errors are the errors of one response.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Message
	}
	return strings.Join(msgs, "; ")
}

// Code returns the first error's code.
func (es Errors) Code() string {
	if len(es) == 0 {
		return ""
	}
	return es[0].Code
}

// Field runs op, whose selection is the single root field field, and returns that
// field's JSON as the subgraph wrote it. Subgraphs answer through internalPOST,
// which writes data last, so a body that starts with {"data": holds only the data
// and, for a single-field operation, is exactly {"data":{"<field>":<value>}}\n:
// the value is taken from between the two without scanning it (large rendered
// pages pass through untouched). Any other answer (errors, extensions, another
// server) is decoded in full.
func (c *Client) Field(ctx context.Context, op *Operation, vars map[string]any, field string) (json.RawMessage, error) {
	v, lent, err := c.field(ctx, op, vars, field)
	if lent != nil {
		v = bytes.Clone(v)
		lent.Close()
	}
	return v, err
}

// WriteField is Field for a caller that passes the value on as it is: write
// gets the value, which is the caller's to read and change during the call
// only (in process, the response's buffer is reused after it).
func (c *Client) WriteField(ctx context.Context, op *Operation, vars map[string]any, field string, write func(value json.RawMessage)) error {
	v, lent, err := c.field(ctx, op, vars, field)
	if err == nil {
		write(v)
	}
	if lent != nil {
		lent.Close()
	}
	return err
}

// field is Field's work; a value it returns inside a lent body (see post) is
// valid until lent is closed.
func (c *Client) field(ctx context.Context, op *Operation, vars map[string]any, field string) (json.RawMessage, io.Closer, error) {
	body, dataLast, lent, err := c.post(ctx, op, vars)
	if err != nil {
		return nil, nil, err
	}
	prefix := `{"data":{"` + field + `":`
	const suffix = "}}\n"
	if dataLast && len(body) > len(prefix)+len(suffix) && string(body[:len(prefix)]) == prefix && string(body[len(body)-len(suffix):]) == suffix {
		return body[len(prefix) : len(body)-len(suffix)], lent, nil
	}
	var data map[string]json.RawMessage
	err = decode(op, bytes.NewReader(body), &data) // RawMessage values are copies
	if lent != nil {
		lent.Close()
	}
	if err != nil {
		return nil, nil, err
	}
	return data[field], nil, nil
}

// Do runs op with vars and decodes its data into out. GraphQL errors come back as
// Errors (with whatever data was resolved decoded too); transport failures as
// other errors.
func (c *Client) Do(ctx context.Context, op *Operation, vars map[string]any, out any) error {
	body, _, lent, err := c.post(ctx, op, vars)
	if err != nil {
		return err
	}
	if lent != nil {
		defer lent.Close()
	}
	return decode(op, bytes.NewReader(body), out)
}

// post sends op and returns the response body, and whether our transport wrote
// it (data last). The body is the caller's, unless lent is not nil: then it is
// the in-process transport's buffer (internal/inproc), valid until the caller
// closes lent.
func (c *Client) post(ctx context.Context, op *Operation, vars map[string]any) (body []byte, dataLast bool, lent io.Closer, err error) {
	head := op.head
	if head == nil { // an Operation not made by MustParse
		head = op.encodeHead()
	}
	var req *http.Request
	if b := c.handOff(op, head, vars); b != nil {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, c.URL, b)
	} else {
		var varsJSON []byte
		if varsJSON, err = json.Marshal(vars); err != nil {
			return nil, false, nil, err
		}
		reqBody := make([]byte, 0, len(head)+len(varsJSON)+1)
		reqBody = append(append(append(reqBody, head...), varsJSON...), '}')
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(reqBody))
	}
	if err != nil {
		return nil, false, nil, err
	}
	req.Header["Content-Type"] = jsonType
	res, err := c.do(req)
	if err != nil {
		return nil, false, nil, fmt.Errorf("%s: %w", op.Name, err)
	}
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusUnprocessableEntity && res.StatusCode != http.StatusBadRequest {
		res.Body.Close()
		return nil, false, nil, fmt.Errorf("%s: subgraph answered %d", op.Name, res.StatusCode)
	}
	dataLast = res.Header.Get(DataLastHeader) == "1"
	if in, ok := res.Body.(interface{ Bytes() []byte }); ok {
		// In process: the body is in memory already; read it where it is.
		return in.Bytes(), dataLast, res.Body, nil
	}
	defer res.Body.Close()
	if n := res.ContentLength; n > 0 && n <= maxPrealloc {
		// The length is known (the subgraphs' transport states it): read
		// into one buffer instead of growing one, a search page being a
		// dozen kilobytes.
		body = make([]byte, n)
		_, err = io.ReadFull(res.Body, body)
	} else {
		body, err = io.ReadAll(res.Body)
	}
	if err != nil {
		return nil, false, nil, fmt.Errorf("%s: read response: %w", op.Name, err)
	}
	return body, dataLast, nil, nil
}

// do sends req. An internal call is never redirected, carries no cookie and
// has no deadline of the HTTP client's own (the context has the caller's),
// so it goes straight to the transport, without http.Client's copy of every
// header for a redirect that cannot come; a client with any of those goes
// through http.Client.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	h := c.HTTP
	if h.Transport == nil || h.Timeout != 0 || h.Jar != nil || h.CheckRedirect != nil {
		return h.Do(req)
	}
	res, err := h.Transport.RoundTrip(req)
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: c.URL, Err: err}
	}
	return res, nil
}

// maxPrealloc bounds the buffer a response's Content-Length makes Client
// allocate before reading it.
const maxPrealloc = 1 << 20

// decode reads a GraphQL response: its data into out, its errors as Errors.
func decode(op *Operation, r io.Reader, out any) error {
	// One pass: the data decodes straight into out (json.Unmarshal would first
	// scan the whole body to validate it, then scan it again).
	var resp struct {
		Data   any `json:"data"`
		Errors []struct {
			Message    string         `json:"message"`
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	resp.Data = out
	if err := json.NewDecoder(r).Decode(&resp); err != nil {
		return fmt.Errorf("%s: decode response: %w", op.Name, err)
	}
	if len(resp.Errors) > 0 {
		errs := make(Errors, len(resp.Errors))
		for i, e := range resp.Errors {
			code, _ := e.Extensions["code"].(string)
			errs[i] = &Error{Message: e.Message, Code: code, Extensions: e.Extensions}
		}
		return errs
	}
	return nil
}
