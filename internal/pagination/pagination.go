// Package pagination holds the rules every GraphQL connection shares: page size
// (default 20, at most 100) and opaque cursors over a keyset position.
package pagination

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Page size limits of every connection.
const (
	DefaultSize = 20
	MaxSize     = 100
)

// Size returns the page size asked for by first, or an error naming the rule.
func Size(first *int) (int, error) {
	if first == nil {
		return DefaultSize, nil
	}
	if *first < 1 || *first > MaxSize {
		return 0, fmt.Errorf("first must be between 1 and %d, got %d", MaxSize, *first)
	}
	return *first, nil
}

const cursorVersion = "v1:"

// Cursor encodes a keyset position as an opaque cursor.
func Cursor(position string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorVersion + position))
}

// Position decodes the cursor given as after ("" or nil: from the start).
func Position(after *string) (string, error) {
	if after == nil || *after == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(*after)
	if err != nil || !strings.HasPrefix(string(raw), cursorVersion) {
		return "", fmt.Errorf("after is not a cursor of this connection: pass an endCursor or edge cursor unchanged")
	}
	return strings.TrimPrefix(string(raw), cursorVersion), nil
}

// PageInfo is every connection's page info (all subgraphs bind their PageInfo
// type to it).
type PageInfo struct {
	HasNextPage bool    `json:"hasNextPage"`
	EndCursor   *string `json:"endCursor"`
}

// Request is a validated first/after pair: Size items after Position.
type Request struct {
	Size     int
	Position string
}

// Edges cuts a store's answer (up to Size+1 items) to one page, making an edge per
// item with its cursor, and returns the edges with the page info. endCursor is null
// when there is no next page.
func Edges[T, E any](items []T, req Request, position func(T) string, edge func(cursor string, item T) E) ([]E, *PageInfo) {
	has := len(items) > req.Size
	if has {
		items = items[:req.Size]
	}
	edges := make([]E, len(items))
	info := &PageInfo{HasNextPage: has}
	for i, it := range items {
		c := Cursor(position(it))
		edges[i] = edge(c, it)
		if has && i == len(items)-1 {
			info.EndCursor = &c
		}
	}
	return edges, info
}
