package platform_test

import (
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/vitolahq/vitola/internal/sqldb"
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
	d := f.mustData(t, graphiqlIntrospection, nil)
	types, _ := at(d, "__schema", "types").([]any)
	if len(types) < 20 {
		t.Fatalf("introspection answered %d types: %v", len(types), d)
	}
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
		if strings.HasPrefix(name, "__") {
			continue
		}
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
