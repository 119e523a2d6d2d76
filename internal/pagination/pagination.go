// Package pagination holds the rules every GraphQL connection shares, as the
// Relay cursor connections specification gives them: forward (first/after) and
// backward (last/before) paging, page size (default 20, at most 100), page info
// with both ends, and opaque cursors over a keyset position, bound to the list
// they came from.
package pagination

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Page size limits of every connection.
const (
	DefaultSize = 20
	MaxSize     = 100
)

// Args are a connection's paging arguments as a resolver receives them.
type Args struct {
	First, Last   *int
	After, Before *string
}

// Request is a validated page request: up to Size items strictly between the
// positions After and Before (nil: unbounded), the first Size of them, or the
// last Size when Backward (last was given).
type Request struct {
	Size          int
	After, Before []string
	Backward      bool
	query         string
	width         int
}

// CursorError is a cursor that is not one of the connection's (malformed,
// tampered with, or from another list): subgraphs answer it as INVALID_CURSOR.
type CursorError struct{ Arg string }

func (e *CursorError) Error() string {
	return e.Arg + " is not a cursor of this connection: pass a startCursor, endCursor or edge cursor of the same field with the same arguments, unchanged"
}

// ErrFirstAndLast refuses a request with both first and last, which the
// specification strongly discourages and which has no useful meaning here.
var ErrFirstAndLast = errors.New("pass first (with after) to page forwards or last (with before) to page backwards, not both")

// Size returns the page size asked for by first (nil: the default), or an error
// naming the rule. Fields that page forwards only use it.
func Size(first *int) (int, error) { return size("first", first) }

func size(name string, n *int) (int, error) {
	if n == nil {
		return DefaultSize, nil
	}
	if *n < 1 || *n > MaxSize {
		return 0, fmt.Errorf("%s must be between 1 and %d, got %d", name, MaxSize, *n)
	}
	return *n, nil
}

// Direction validates first and last: the page size and whether it pages
// backwards. Neither given means the first DefaultSize items.
func Direction(a Args) (n int, backward bool, err error) {
	if a.First != nil && a.Last != nil {
		return 0, false, ErrFirstAndLast
	}
	if a.Last != nil {
		n, err = size("last", a.Last)
		return n, true, err
	}
	n, err = size("first", a.First)
	return n, false, err
}

// List names the list a connection pages through, which its cursors are bound
// to (the field and every argument that selects its items: the brand of
// Brand.cigars, the user of myHumidors), and the width of its positions (its
// keyset columns).
type List struct {
	Query string
	Width int
}

// ByID is a list ordered by ID alone.
func ByID(query ...string) List { return Keyed(1, query...) }

// Keyed is a list ordered by width columns.
func Keyed(width int, query ...string) List {
	return List{Query: strings.Join(query, "\x00"), Width: width}
}

// Parse validates a connection's arguments for the list l: a cursor of another
// list is refused.
func Parse(a Args, l List) (Request, error) {
	n, backward, err := Direction(a)
	if err != nil {
		return Request{}, err
	}
	req := Request{Size: n, Backward: backward, query: l.Query, width: l.Width}
	if req.After, err = req.decode("after", a.After); err != nil {
		return Request{}, err
	}
	if req.Before, err = req.decode("before", a.Before); err != nil {
		return Request{}, err
	}
	return req, nil
}

// A cursor is "v2" + 8 bytes binding it to its list and position + the
// position, base64url: a cursor of another list, or an edited one, fails the
// binding check instead of paging through the wrong list.
const cursorVersion = "v2"

func (r Request) bind(position string) []byte {
	h := sha256.Sum256([]byte(r.query + "\x00" + position))
	return h[:8]
}

// Cursor encodes a position (its keyset values) as a cursor of this list.
func (r Request) Cursor(position ...string) string {
	p := strings.Join(position, "|")
	raw := append(append([]byte(cursorVersion), r.bind(p)...), p...)
	return base64.RawURLEncoding.EncodeToString(raw)
}

func (r Request) decode(arg string, c *string) ([]string, error) {
	if c == nil || *c == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(*c)
	if err != nil || len(*c) > 512 || len(raw) < len(cursorVersion)+8 || string(raw[:len(cursorVersion)]) != cursorVersion {
		return nil, &CursorError{Arg: arg}
	}
	raw = raw[len(cursorVersion):]
	p := string(raw[8:])
	if string(raw[:8]) != string(r.bind(p)) {
		return nil, &CursorError{Arg: arg}
	}
	parts := strings.Split(p, "|")
	if len(parts) != r.width {
		return nil, &CursorError{Arg: arg}
	}
	return parts, nil
}

// Keyset renders the request as SQL over a list ordered by cols ascending
// (unique together): the condition to AND into the WHERE clause with its
// arguments, and the ORDER BY and LIMIT tail. A backward request reads
// descending from Before (or the end); Edges puts the rows back in order.
// Row values compare lexicographically in PostgreSQL and SQLite alike.
func (r Request) Keyset(cols ...string) (cond string, args []any, tail string) {
	for _, p := range [][]string{r.After, r.Before} {
		if p != nil && len(p) != len(cols) {
			panic(fmt.Sprintf("pagination: keyset of %d columns for a position of %d", len(cols), len(p)))
		}
	}
	row := "(" + strings.Join(cols, ", ") + ")"
	marks := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	var conds []string
	if r.After != nil {
		conds = append(conds, row+" > "+marks)
		for _, v := range r.After {
			args = append(args, v)
		}
	}
	if r.Before != nil {
		conds = append(conds, row+" < "+marks)
		for _, v := range r.Before {
			args = append(args, v)
		}
	}
	cond = "1 = 1"
	if len(conds) > 0 {
		cond = strings.Join(conds, " AND ")
	}
	dir := ""
	if r.Backward {
		dir = " DESC"
	}
	order := make([]string, len(cols))
	for i, c := range cols {
		order[i] = c + dir
	}
	return cond, args, fmt.Sprintf(" ORDER BY %s LIMIT %d", strings.Join(order, ", "), r.Size+1)
}

// PageInfo is every connection's page info (all subgraphs bind their PageInfo
// type to it).
type PageInfo struct {
	HasPreviousPage bool    `json:"hasPreviousPage"`
	HasNextPage     bool    `json:"hasNextPage"`
	StartCursor     *string `json:"startCursor"`
	EndCursor       *string `json:"endCursor"`
}

// Edges cuts a store's answer to one page and makes an edge per item with its
// cursor. items come in reading order, up to Size+1 of them: ascending from
// After for a forward request, descending from Before for a backward one (as
// Keyset reads them); the page is always in the list's order.
//
// Page info follows the specification: paging forwards, hasNextPage says
// whether more items follow within the bounds; hasPreviousPage is true when an
// after cursor was given (the item it points at came before the page: the
// cheap answer the specification allows). Backwards, the mirror image.
// startCursor and endCursor are the first and last edges' cursors, null when
// the page is empty.
func Edges[T, E any](items []T, req Request, cursor func(T) string, edge func(cursor string, item T) E) ([]E, *PageInfo) {
	more := len(items) > req.Size
	if more {
		items = items[:req.Size]
	}
	if req.Backward {
		items = slices.Clone(items)
		slices.Reverse(items)
	}
	edges := make([]E, len(items))
	info := &PageInfo{}
	if req.Backward {
		info.HasPreviousPage, info.HasNextPage = more, req.Before != nil
	} else {
		info.HasNextPage, info.HasPreviousPage = more, req.After != nil
	}
	for i, it := range items {
		c := cursor(it)
		edges[i] = edge(c, it)
		if i == 0 {
			info.StartCursor = &c
		}
		if i == len(items)-1 {
			info.EndCursor = &c
		}
	}
	return edges, info
}
