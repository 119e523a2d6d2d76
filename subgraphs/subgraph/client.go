package subgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// Operation is an internal GraphQL operation, parsed once when the caller starts
// (a malformed one panics at start-up, not on a request).
type Operation struct {
	Name  string
	Query string
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
	return &Operation{Name: doc.Operations[0].Name, Query: query}
}

// Client calls one subgraph's /graphql. Its HTTP client's transport carries the
// internal token (a trust.Transport), with the caller's identity from the context.
type Client struct {
	HTTP *http.Client
	URL  string
}

// Error is a GraphQL error a subgraph answered, with its extensions.code.
type Error struct {
	Message string
	Code    string
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

// Do runs op with vars and decodes its data into out. GraphQL errors come back as
// Errors (with whatever data was resolved decoded too); transport failures as
// other errors.
func (c *Client) Do(ctx context.Context, op *Operation, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"operationName": op.Name, "query": op.Query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op.Name, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusUnprocessableEntity {
		return fmt.Errorf("%s: subgraph answered %d", op.Name, res.StatusCode)
	}
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
	if err := json.NewDecoder(res.Body).Decode(&resp); err != nil {
		return fmt.Errorf("%s: decode response: %w", op.Name, err)
	}
	if len(resp.Errors) > 0 {
		errs := make(Errors, len(resp.Errors))
		for i, e := range resp.Errors {
			code, _ := e.Extensions["code"].(string)
			errs[i] = &Error{Message: e.Message, Code: code}
		}
		return errs
	}
	return nil
}
