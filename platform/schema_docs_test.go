package platform_test

import (
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/sdk/sdktest"
)

// TestPublicSchemaIsDocumented introspects the live public graph through the
// router over HTTP, as GraphiQL does, and names every type, field, argument,
// enum value, input field, interface and scalar whose description is missing,
// blank, or only its own name again: what a frontend developer reads in
// GraphiQL's Docs pane is exactly this introspection, so a field added without
// a description fails here. The introspection types (__Schema, ...) are the
// engine's and are left out.
func TestPublicSchemaIsDocumented(t *testing.T) {
	f := open(t, sqldb.Config{DataDir: t.TempDir()})
	types := f.publicTypes(t)
	var missing []string
	check := func(where, name string, desc any) {
		s, _ := desc.(string)
		switch {
		case strings.TrimSpace(s) == "":
			missing = append(missing, where+": no description")
		case restatesName(name, s):
			missing = append(missing, where+": the description only repeats the name ("+s+")")
		}
	}
	seen := 0
	for _, typ := range types {
		name, _ := at(typ, "name").(string)
		seen++
		kind, _ := at(typ, "kind").(string)
		check(strings.ToLower(kind)+" "+name, name, at(typ, "description"))
		for _, fl := range list(at(typ, "fields")) {
			fname, _ := at(fl, "name").(string)
			check("field "+name+"."+fname, fname, at(fl, "description"))
			for _, a := range list(at(fl, "args")) {
				aname, _ := at(a, "name").(string)
				check("argument "+name+"."+fname+"("+aname+":)", aname, at(a, "description"))
			}
		}
		for _, in := range list(at(typ, "inputFields")) {
			iname, _ := at(in, "name").(string)
			check("input field "+name+"."+iname, iname, at(in, "description"))
		}
		for _, ev := range list(at(typ, "enumValues")) {
			ename, _ := at(ev, "name").(string)
			check("enum value "+name+"."+ename, ename, at(ev, "description"))
		}
	}
	if seen == 0 {
		t.Fatal("introspection answered no public type")
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%d parts of the public graph lack a description a frontend developer can use "+
			"(write one above the definition in schema/*.graphqls, then make generate):\n%s",
			len(missing), strings.Join(missing, "\n"))
	}
}

// publicTypes introspects the graph through the router, as GraphiQL does, and
// returns its types but the introspection ones (__Schema, ...), which are the
// engine's.
func (f *fixture) publicTypes(t *testing.T) []any {
	t.Helper()
	d := f.mustData(t, graphiqlIntrospection, nil)
	all, _ := at(d, "__schema", "types").([]any)
	var types []any
	for _, typ := range all {
		if name, _ := at(typ, "name").(string); !strings.HasPrefix(name, "__") {
			types = append(types, typ)
		}
	}
	if len(types) < 20 {
		t.Fatalf("introspection answered %d types: %v", len(types), d)
	}
	return types
}

// TestGraphiQLShowsTheDescriptions opens GraphiQL's Docs pane in Debian's
// chromium (sdk/test/browser/graphiql-docs.mjs) on every public object and
// interface type and on every field that takes arguments, and checks that
// each page shows the descriptions introspection gives: the type's, and the
// first paragraph of each field's (the type's page lists those), or each
// argument's on a field's page.
func TestGraphiQLShowsTheDescriptions(t *testing.T) {
	sdktest.Require(t, "chromium")
	f := open(t, sqldb.Config{DataDir: t.TempDir()})
	want := map[string][]string{}
	var pages []string
	for _, typ := range f.publicTypes(t) {
		name, _ := at(typ, "name").(string)
		fields := list(at(typ, "fields"))
		if len(fields) == 0 {
			continue // scalars: GraphiQL shows no fields of theirs
		}
		pages = append(pages, name)
		desc, _ := at(typ, "description").(string)
		want[name] = append(want[name], desc)
		for _, fl := range fields {
			fname, _ := at(fl, "name").(string)
			fdesc, _ := at(fl, "description").(string)
			first, _, _ := strings.Cut(fdesc, "\n\n")
			want[name] = append(want[name], first)
			if args := list(at(fl, "args")); len(args) > 0 {
				page := name + "." + fname
				pages = append(pages, page)
				for _, a := range args {
					adesc, _ := at(a, "description").(string)
					want[page] = append(want[page], adesc)
				}
			}
		}
	}
	var seen struct {
		Pages      map[string]string
		PageErrors []string
	}
	sdktest.RunBrowser(t, "graphiql-docs.mjs", []string{
		"GRAPHIQL_URL=" + f.srv.URL + "/graphql", "GRAPHIQL_KEY=" + f.key, "GRAPHIQL_PAGES=" + strings.Join(pages, ","),
	}, &seen)
	// Markdown renders `code` without its backticks; lines rewrap.
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "`", "")), " ") }
	for _, page := range pages {
		text, ok := seen.Pages[page]
		if !ok {
			t.Errorf("GraphiQL's Docs pane did not open %s", page)
			continue
		}
		for _, w := range want[page] {
			if w != "" && !strings.Contains(norm(text), norm(w)) {
				t.Errorf("GraphiQL's Docs pane on %s does not show %q; it shows:\n%s", page, w, text)
			}
		}
	}
	if len(seen.PageErrors) > 0 {
		t.Errorf("page errors: %q", seen.PageErrors)
	}
	t.Logf("GraphiQL's Docs pane showed every description on %d pages", len(pages))
}

func list(v any) []any { l, _ := v.([]any); return l }

// restatesName reports whether desc says nothing but the name itself: its words
// ("displayName", "display_name") in any case, with punctuation and articles
// ignored.
func restatesName(name, desc string) bool {
	words := func(s string) string {
		var b strings.Builder
		prev := rune(0)
		for _, r := range s {
			switch {
			case unicode.IsUpper(r) && unicode.IsLower(prev):
				b.WriteByte(' ')
				b.WriteRune(unicode.ToLower(r))
			case unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(unicode.ToLower(r))
			default:
				b.WriteByte(' ')
			}
			prev = r
		}
		var kept []string
		for _, w := range strings.Fields(b.String()) {
			if w != "the" && w != "a" && w != "an" && w != "of" {
				kept = append(kept, w)
			}
		}
		return strings.Join(kept, " ")
	}
	return words(name) == words(desc)
}

func TestRestatesName(t *testing.T) {
	tests := []struct {
		name, desc string
		want       bool
	}{
		{"displayName", "Display name.", true},
		{"displayName", "The display name", true},
		{"hasNextPage", "has_next_page", true},
		{"id", "ID", true},
		{"displayName", "The name the user chose to be shown under.", false},
		{"cursor", "An opaque cursor for this item's place.", false},
	}
	for _, tt := range tests {
		if got := restatesName(tt.name, tt.desc); got != tt.want {
			t.Errorf("restatesName(%q, %q) = %v, want %v", tt.name, tt.desc, got, tt.want)
		}
	}
}
