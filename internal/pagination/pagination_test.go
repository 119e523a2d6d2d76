package pagination_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/vitolahq/vitola/internal/pagination"
)

func ptr[T any](v T) *T { return &v }

func TestParse(t *testing.T) {
	list := pagination.ByID("brands")
	cursor := func(l pagination.List, pos string) *string {
		req, err := pagination.Parse(pagination.Args{}, l)
		if err != nil {
			t.Fatal(err)
		}
		return ptr(req.Cursor(pos))
	}
	own, other := cursor(list, "brd_1"), cursor(pagination.ByID("products"), "brd_1")
	twoParts := cursor(pagination.Keyed(2, "brands"), "x|y")
	tests := []struct {
		name     string
		args     pagination.Args
		size     int
		backward bool
		err      string // "size", "both", "cursor" or ""
	}{
		{"neither: the first 20", pagination.Args{}, 20, false, ""},
		{"first", pagination.Args{First: ptr(5), After: own}, 5, false, ""},
		{"last", pagination.Args{Last: ptr(100), Before: own}, 100, true, ""},
		{"last alone with after", pagination.Args{Last: ptr(3), After: own}, 3, true, ""},
		{"first and last", pagination.Args{First: ptr(1), Last: ptr(1)}, 0, false, "both"},
		{"first 0", pagination.Args{First: ptr(0)}, 0, false, "size"},
		{"last 101", pagination.Args{Last: ptr(101)}, 0, false, "size"},
		{"another list's cursor", pagination.Args{After: other}, 0, false, "cursor"},
		{"another list's cursor as before", pagination.Args{Last: ptr(2), Before: other}, 0, false, "cursor"},
		{"a position of another width", pagination.Args{After: twoParts}, 0, false, "cursor"},
		{"not base64", pagination.Args{After: ptr("not a cursor!")}, 0, false, "cursor"},
		{"edited", pagination.Args{After: ptr((*own)[:len(*own)-2] + "AA")}, 0, false, "cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := pagination.Parse(tt.args, list)
			var ce *pagination.CursorError
			got := ""
			switch {
			case errors.Is(err, pagination.ErrFirstAndLast):
				got = "both"
			case errors.As(err, &ce):
				got = "cursor"
			case err != nil:
				got = "size"
			}
			if got != tt.err || (err == nil && (req.Size != tt.size || req.Backward != tt.backward)) {
				t.Fatalf("Parse = %+v, %v; want size %d backward %v error %q", req, err, tt.size, tt.backward, tt.err)
			}
		})
	}
}

func TestKeyset(t *testing.T) {
	l := pagination.Keyed(2, "events")
	base, _ := pagination.Parse(pagination.Args{}, l)
	c := ptr(base.Cursor("k", "evt_1"))
	for _, tt := range []struct {
		args             pagination.Args
		cond, tail, argv string
	}{
		{pagination.Args{}, "1 = 1", " ORDER BY a, b LIMIT 21", "[]"},
		{pagination.Args{First: ptr(2), After: c}, "(a, b) > (?, ?)", " ORDER BY a, b LIMIT 3", "[k evt_1]"},
		{pagination.Args{Last: ptr(2), Before: c}, "(a, b) < (?, ?)", " ORDER BY a DESC, b DESC LIMIT 3", "[k evt_1]"},
		{pagination.Args{Last: ptr(2), After: c, Before: c}, "(a, b) > (?, ?) AND (a, b) < (?, ?)", " ORDER BY a DESC, b DESC LIMIT 3", "[k evt_1 k evt_1]"},
	} {
		req, err := pagination.Parse(tt.args, l)
		if err != nil {
			t.Fatal(err)
		}
		cond, args, tail := req.Keyset("a", "b")
		if cond != tt.cond || tail != tt.tail || fmt.Sprint(args) != tt.argv {
			t.Errorf("Keyset(%+v) = %q %v %q", tt.args, cond, args, tail)
		}
	}
}

// Edges gets items in reading order (descending when backwards) and returns
// the page in the list's order with the specification's page info.
func TestEdges(t *testing.T) {
	l := pagination.ByID("x")
	base, _ := pagination.Parse(pagination.Args{}, l)
	after := ptr(base.Cursor("a"))
	for _, tt := range []struct {
		name                 string
		args                 pagination.Args
		items                []string
		want                 []string
		hasPrevious, hasNext bool
	}{
		{"first page, more follow", pagination.Args{First: ptr(2)}, []string{"a", "b", "c"}, []string{"a", "b"}, false, true},
		{"after a cursor, last page", pagination.Args{First: ptr(2), After: after}, []string{"b", "c"}, []string{"b", "c"}, true, false},
		{"last page backwards, more before", pagination.Args{Last: ptr(2)}, []string{"e", "d", "c"}, []string{"d", "e"}, true, false},
		{"before a cursor, first items", pagination.Args{Last: ptr(2), Before: after}, []string{"b", "a"}, []string{"a", "b"}, false, true},
		{"empty", pagination.Args{}, nil, []string{}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := pagination.Parse(tt.args, l)
			if err != nil {
				t.Fatal(err)
			}
			edges, info := pagination.Edges(tt.items, req, func(s string) string { return "c:" + s }, func(c, s string) string { return s })
			if !slices.Equal(edges, tt.want) || info.HasPreviousPage != tt.hasPrevious || info.HasNextPage != tt.hasNext {
				t.Fatalf("Edges = %v %+v", edges, info)
			}
			if len(edges) == 0 {
				if info.StartCursor != nil || info.EndCursor != nil {
					t.Fatalf("cursors on an empty page: %+v", info)
				}
			} else if *info.StartCursor != "c:"+edges[0] || *info.EndCursor != "c:"+edges[len(edges)-1] {
				t.Fatalf("start/end cursors %s %s for %v", *info.StartCursor, *info.EndCursor, edges)
			}
		})
	}
}
