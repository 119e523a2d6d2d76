package platform_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/vitolahq/vitola/internal/jsonbody"
	"github.com/vitolahq/vitola/platform"
	restshim "github.com/vitolahq/vitola/rest-shim"
	"github.com/vitolahq/vitola/router/limits"
	"github.com/vitolahq/vitola/schema"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

// One truth for every limit and error code: the code is the source; the
// reference pages' tables (docs/reference/errors.md and limits.md) and the
// OpenAPI documents are held to it here (and the live routes
// to the documents by TestOpenAPIMatchesResponses).

var update = flag.Bool("update", false, "rewrite the reference pages' generated tables from the code")

const (
	errorsPage = "../docs/reference/errors.md"
	limitsPage = "../docs/reference/limits.md"
)

// errorTableHeader heads the errors page's table of every REST error code.
const errorTableHeader = "| code | statuses | when |"

// graphqlBodyLimit is /graphql's body limit, the router's default
// (--max-body-bytes).
var graphqlBodyLimit = restshim.BodyLimit{Method: "POST", Path: "/graphql", Bytes: int64(limits.Defaults().MaxBodyBytes)}

func bodyLimits() []restshim.BodyLimit {
	return append([]restshim.BodyLimit{graphqlBodyLimit}, restshim.BodyLimits()...)
}

func TestDocsAgreeWithCode(t *testing.T) {
	text, limitsText := readPage(t, errorsPage), readPage(t, limitsPage)
	api := loadDoc(t, "openapi.yaml", schema.OpenAPI, "")
	pay := loadDoc(t, "payments-openapi.yaml", schema.PaymentsOpenAPI, "")

	t.Run("generated body limits", func(t *testing.T) {
		for _, p := range []struct{ path, text, fresh string }{
			{errorsPage, text, regenerate413(t, text)},
			{limitsPage, limitsText, regenerateLimits(t, limitsText)},
		} {
			if *update {
				if err := os.WriteFile(p.path, []byte(p.fresh), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if p.fresh != p.text {
				t.Errorf("%s: the body limits are not the code's: run `go test ./platform -run TestDocsAgreeWithCode -update`\n%s", p.path, firstDifference(p.text, p.fresh))
			}
		}
	})

	t.Run("OpenAPI body limits", func(t *testing.T) {
		want := map[string]int64{}
		for _, l := range bodyLimits() {
			d := api
			if l.Payments {
				d = pay
			}
			want[d.name+" "+l.Method+" "+l.Path] = l.Bytes
		}
		for _, d := range []*apiDoc{api, pay} {
			for path, item := range d.doc.Paths.Map() {
				for method, op := range item.Operations() {
					k := d.name + " " + method + " " + path
					if op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
						if _, ok := want[k]; ok {
							t.Errorf("%s: the code reads a JSON body the document does not describe", k)
						}
						continue
					}
					n, ok := want[k]
					delete(want, k)
					if !ok {
						t.Errorf("%s: documented with a JSON body, but not in rest-shim's BodyLimits", k)
						continue
					}
					if got, _ := op.RequestBody.Value.Extensions["x-max-body-bytes"].(float64); int64(got) != n {
						t.Errorf("%s: x-max-body-bytes %v, the code reads %d", k, op.RequestBody.Value.Extensions["x-max-body-bytes"], n)
					}
					tooLarge := op.Responses.Status(413)
					if tooLarge == nil {
						t.Errorf("%s: no 413 documented", k)
						continue
					}
					desc := *tooLarge.Value.Description
					for _, m := range regexp.MustCompile(`[0-9][0-9,]* (KB|MB|bytes)`).FindAllString(desc, -1) {
						if m != jsonbody.Size(n) && m != commas(n)+" bytes" {
							t.Errorf("%s: its 413 says %q, the code reads %s", k, m, jsonbody.Size(n))
						}
					}
				}
			}
		}
		for k := range want {
			t.Errorf("%s: the code reads a JSON body the document does not describe", k)
		}
	})

	t.Run("GraphQL limits", func(t *testing.T) {
		d := limits.Defaults()
		want := map[string]int{"depth": d.MaxDepth, "aliases": d.MaxAliases, "root fields": d.MaxRootFields, "cost": d.MaxCost,
			"page size": d.MaxPageSize, "nodes": d.MaxNodes, "repeats": d.MaxRepeats, "definitions": d.MaxDefinitions,
			"fragment product": d.MaxFragmentProduct, "body bytes": d.MaxBodyBytes, "query bytes": d.MaxQueryBytes,
			"tokens": d.MaxTokens, "nesting": d.MaxNesting}
		row := regexp.MustCompile(`(?m)^\| ([a-z ]+) \| ([0-9,]+)[^|]* \| `)
		seen := 0
		for _, table := range tablesAfter(limitsText, "| limit | maximum | how it is measured |") {
			for _, m := range row.FindAllStringSubmatch(table, -1) {
				n, ok := want[m[1]]
				if !ok {
					t.Errorf("limits page's GraphQL limits: %q is no limit of router/limits", m[1])
					continue
				}
				seen++
				if got, _ := strconv.Atoi(strings.ReplaceAll(m[2], ",", "")); got != n {
					t.Errorf("limits page's GraphQL limits: %s is %s, router/limits says %d", m[1], m[2], n)
				}
			}
		}
		if seen != len(want) {
			t.Errorf("limits page's GraphQL limits: %d rows, want %d (%v)", seen, len(want), slices.Sorted(maps.Keys(want)))
		}
	})

	t.Run("every route is documented", func(t *testing.T) {
		for _, r := range registeredRoutes(t) {
			d := api
			if r.payments {
				d = pay
			}
			if strings.HasSuffix(r.path, "/") {
				if undocumentedTrees[r.path] == "" {
					t.Errorf("%s: the code serves the tree %s, which is neither documented nor in undocumentedTrees", d.name, r.path)
				}
				continue
			}
			item := d.doc.Paths.Value(r.path)
			switch {
			case item == nil:
				t.Errorf("%s does not document %s %s, which the code serves", d.name, r.method, r.path)
			case r.method != "" && item.GetOperation(r.method) == nil:
				t.Errorf("%s does not document %s %s, which the code serves", d.name, r.method, r.path)
			}
		}
	})

	t.Run("image and header limits", func(t *testing.T) {
		// Each phrase of the errors page's tables that names a limit, as the
		// code's constants make it.
		for _, phrase := range []string{
			"header fields over " + jsonbody.Size(platform.MaxHeaderBytes),
			fmt.Sprintf("an image over %s fetched, %d MiB inline", jsonbody.Size(imagefetch.DefaultMaxBytes), imagefetch.DefaultMaxInlineBytes>>20),
			fmt.Sprintf("an image over %d megapixels or %d pixels a side", imagefetch.DefaultMaxPixels/1_000_000, imagefetch.MaxSide),
			fmt.Sprintf("an image took longer than %d s", int(imagefetch.DefaultTimeout.Seconds())),
			fmt.Sprintf("redirects more than %d times", imagefetch.DefaultMaxRedirects),
			fmt.Sprintf("no image, more than %d, or both", imagefetch.MaxURLs),
		} {
			if !strings.Contains(text, phrase) {
				t.Errorf("%s does not say %q", errorsPage, phrase)
			}
		}
	})

	codes := errorCodes(t)
	t.Run("error codes", func(t *testing.T) {
		tables := tablesAfter(text, errorTableHeader)
		if len(tables) != 1 {
			t.Fatalf("the errors page has %d tables of error codes (%s), want 1", len(tables), errorTableHeader)
		}
		documented := map[string]map[int]bool{}
		for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([0-9, ]+) \\|").FindAllStringSubmatch(tables[0], -1) {
			documented[m[1]] = map[int]bool{}
			for s := range strings.SplitSeq(m[2], ",") {
				n, _ := strconv.Atoi(strings.TrimSpace(s))
				documented[m[1]][n] = true
			}
		}
		for code, statuses := range codes {
			if documented[code] == nil {
				t.Errorf("the errors page lack `%s` (%v), which %s answers", code, slices.Sorted(maps.Keys(statuses)), firstSite(statuses))
				continue
			}
			for status := range statuses {
				if !documented[code][status] {
					t.Errorf("the errors page: `%s` lacks status %d, which %s answers", code, status, statuses[status][0])
				}
			}
			for status := range documented[code] {
				if statuses[status] == nil {
					t.Errorf("the errors page: `%s` with status %d is answered nowhere", code, status)
				}
			}
		}
		for code := range documented {
			if codes[code] == nil {
				t.Errorf("the errors page: `%s` is answered nowhere", code)
			}
		}
	})

	t.Run("OpenAPI error codes", func(t *testing.T) {
		listed := map[string]bool{}
		for _, d := range []*apiDoc{api, pay} {
			e := d.doc.Components.Schemas["Error"].Value.Properties["error"].Value
			if len(e.Enum) == 0 {
				t.Fatalf("%s: the Error schema's error has no enum of codes", d.name)
			}
			for _, v := range e.Enum {
				code := fmt.Sprint(v)
				listed[code] = true
				if codes[code] == nil {
					t.Errorf("%s: error code `%s` is answered nowhere", d.name, code)
				}
			}
			// Every code a response's description names is a code.
			seen := map[*openapi3.Response]bool{}
			for path, item := range d.doc.Paths.Map() {
				for method, op := range item.Operations() {
					for status, r := range op.Responses.Map() {
						if status < "400" || seen[r.Value] {
							continue
						}
						seen[r.Value] = true
						for _, m := range regexp.MustCompile("`([a-z]+(?:_[a-z]+)+)`").FindAllStringSubmatch(*r.Value.Description, -1) {
							if codes[m[1]] == nil && !oauthCodes[m[1]] {
								t.Errorf("%s: %s %s %s names `%s`, which nothing answers", d.name, method, path, status, m[1])
							}
						}
					}
				}
			}
		}
		for code, statuses := range codes {
			if !listed[code] {
				t.Errorf("no OpenAPI document lists `%s` in its Error schema, which %s answers", code, firstSite(statuses))
			}
		}
	})
}

// oauthCodes are snake_case words the documents' error descriptions name
// that are no platform error code: RFC 6749's token errors (rest-shim's
// tokenError, from the users subgraph's OAUTH_* codes, in /oauth/token's own
// body), and a declined card's declineCode.
var oauthCodes = map[string]bool{"invalid_grant": true, "invalid_request": true, "unsupported_grant_type": true, "invalid_client": true,
	"insufficient_funds": true}

func firstSite(statuses map[int][]string) string {
	for _, s := range slices.Sorted(maps.Keys(statuses)) {
		return statuses[s][0]
	}
	return ""
}

func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// tablesAfter returns each Markdown table whose header line is header.
func tablesAfter(text, header string) []string {
	var out []string
	for rest := text; ; {
		i := strings.Index(rest, "\n"+header+"\n")
		if i < 0 {
			return out
		}
		rest = rest[i+1:]
		end := strings.Index(rest, "\n\n")
		if end < 0 {
			end = len(rest)
		}
		out = append(out, rest[:end])
		rest = rest[end:]
	}
}

func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  page: %s\n  code: %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("the page has %d lines, the code's %d", len(al), len(bl))
}

// The generated parts of the reference pages: the JSON bodies table's 413
// row (errors), and the table of every route's body limit between its
// markers (limits).
const (
	limitsBegin = "<!-- body limits: generated from rest-shim's BodyLimits and router/limits by `go test ./platform -run TestDocsAgreeWithCode -update`; do not edit -->"
	limitsEnd   = "<!-- end of body limits -->"
	row413      = "| 413 | `body_too_large` |"
)

func readPage(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func regenerate413(t *testing.T, text string) string {
	t.Helper()
	ls := bodyLimits()
	// The 413 row: the API's limits, smallest first, with their routes.
	sizes := map[int64][]string{}
	for _, l := range ls {
		if !l.Payments && l.Path != "/graphql" {
			sizes[l.Bytes] = append(sizes[l.Bytes], "`"+l.Path+"`")
		}
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(sizes)) {
		parts = append(parts, jsonbody.Size(n)+" ("+strings.Join(sizes[n], ", ")+")")
	}
	row := row413 + " the body is over the route's limit: " + strings.Join(parts, ", ") + "; the payments origin's and `/graphql`'s in [limits](limits.md#request-bodies) |"
	lines := strings.Split(text, "\n")
	found := 0
	for i, l := range lines {
		if strings.HasPrefix(l, row413) {
			lines[i] = row
			found++
		}
	}
	if found != 1 {
		t.Fatalf("%s has %d rows starting %q, want 1", errorsPage, found, row413)
	}
	return strings.Join(lines, "\n")
}

func regenerateLimits(t *testing.T, text string) string {
	t.Helper()
	ls := bodyLimits()
	var b strings.Builder
	b.WriteString(limitsBegin + "\n\n| origin | route | largest JSON body |\n| --- | --- | --- |\n")
	for _, l := range ls {
		origin, size := "API", jsonbody.Size(l.Bytes)
		if l.Payments {
			origin = "payments"
		}
		if l == graphqlBodyLimit {
			size += " (`--max-body-bytes`)"
		}
		fmt.Fprintf(&b, "| %s | `%s %s` | %s |\n", origin, l.Method, l.Path, size)
	}
	b.WriteString("\n" + limitsEnd)
	i, j := strings.Index(text, limitsBegin), strings.Index(text, limitsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated body limits (%s … %s)", limitsPage, limitsBegin, limitsEnd)
	}
	return text[:i] + b.String() + text[j+len(limitsEnd):]
}

// errorCodes finds every REST error code the code can answer, with its
// statuses and where: each apierr.Write, routeError, jsonbody.Error,
// webui's writeError and the refusal table, their code and status constants
// resolved; a site whose code or status is computed must be one of
// dynamicSites, which says what it answers.
func errorCodes(t *testing.T) map[string]map[int][]string {
	t.Helper()
	root, _ := filepath.Abs("..")
	fset := token.NewFileSet()
	files := map[string][]*ast.File{} // directory -> its files
	consts := map[string]string{}     // "pkg.Name" and "dir:Name" -> string value
	codeShape := regexp.MustCompile(`^[a-z]+(_[a-z]+)+$`)
	invalidCode := regexp.MustCompile(`^INVALID_[A-Z_]*[A-Z]$`)
	invalids := map[string]bool{} // INVALID_* codes subgraphs refuse with
	for _, dir := range []string{"access", "internal", "rest-shim", "subgraphs", "webui", "platform"} {
		filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			files[rel] = append(files[rel], f)
			stringConsts(f, func(name, v string) {
				consts[f.Name.Name+"."+name] = v
				consts[rel+":"+name] = v
			})
			ast.Inspect(f, func(n ast.Node) bool {
				if !strings.HasPrefix(rel, "subgraphs") {
					return false
				}
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, _ := strconv.Unquote(lit.Value); invalidCode.MatchString(v) {
						invalids[strings.ToLower(v)] = true
					}
				}
				// subgraph.Invalid(ctx, "cursor", …) refuses with INVALID_CURSOR.
				if call, ok := n.(*ast.CallExpr); ok && len(call.Args) == 3 {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Invalid" && fmt.Sprint(sel.X) == "subgraph" {
						if lit, ok := call.Args[1].(*ast.BasicLit); ok {
							v, _ := strconv.Unquote(lit.Value)
							invalids["invalid_"+v] = true
						}
					}
				}
				return true
			})
			return nil
		})
	}
	statuses := httpStatuses(t)

	codes := map[string]map[int][]string{}
	add := func(code string, status int, where string) {
		if codes[code] == nil {
			codes[code] = map[int][]string{}
		}
		codes[code][status] = append(codes[code][status], where)
	}
	// The rest of REST errors' writers; internal/trust answers only on
	// internal ports, the router in GraphQL's shape.
	scanned := []string{"access", "internal/apierr", "internal/connlimit", "internal/jsonbody", "rest-shim", "subgraphs/payments/pci", "webui"}
	dynamic := dynamicSites(codes)
	used := map[string]bool{}
	for _, dir := range scanned {
		for _, f := range files[dir] {
			file := filepath.Base(fset.Position(f.Pos()).Filename)
			resolveCode := func(e ast.Expr) (string, bool) {
				switch x := e.(type) {
				case *ast.BasicLit:
					v, err := strconv.Unquote(x.Value)
					return v, err == nil
				case *ast.Ident:
					v, ok := consts[dir+":"+x.Name]
					return v, ok
				case *ast.SelectorExpr:
					if p, ok := x.X.(*ast.Ident); ok {
						v, ok := consts[p.Name+"."+x.Sel.Name]
						return v, ok
					}
				}
				return "", false
			}
			resolveStatus := func(e ast.Expr) (int, bool) {
				switch x := e.(type) {
				case *ast.BasicLit:
					n, err := strconv.Atoi(x.Value)
					return n, err == nil
				case *ast.SelectorExpr:
					if p, ok := x.X.(*ast.Ident); ok && p.Name == "http" {
						n, ok := statuses[x.Sel.Name]
						return n, ok
					}
				}
				return 0, false
			}
			passThrough := func(status, code ast.Expr) bool {
				s, ok1 := status.(*ast.SelectorExpr)
				c, ok2 := code.(*ast.SelectorExpr)
				return ok1 && ok2 && s.Sel.Name == "Status" && c.Sel.Name == "Code"
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				var body ast.Node = decl
				name := ""
				if ok {
					body, name = fn.Body, fn.Name.Name
				}
				if body == nil || (dir == "internal/apierr" && name == "Write") || (dir == "webui" && name == "writeError") {
					continue
				}
				resolvedHere := map[string]bool{}
				site := func(status, code ast.Expr, pos token.Pos) {
					where := fmt.Sprintf("%s/%s:%d", dir, file, fset.Position(pos).Line)
					if status != nil && passThrough(status, code) {
						return
					}
					var st int
					okS := false
					if status != nil {
						st, okS = resolveStatus(status)
					}
					c, okC := resolveCode(code)
					if okS && okC {
						resolvedHere[c] = true
						add(c, st, where)
						return
					}
					if _, listed := dynamic[file+":"+name]; listed {
						used[file+":"+name] = true
						return
					}
					t.Errorf("%s (%s): an error whose code or status is computed: list what it answers in dynamicSites", where, name)
				}
				ast.Inspect(body, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.CallExpr:
						callee := ""
						switch fun := x.Fun.(type) {
						case *ast.SelectorExpr:
							if p, ok := fun.X.(*ast.Ident); ok {
								callee = p.Name + "." + fun.Sel.Name
							}
						case *ast.Ident:
							callee = fun.Name
						}
						if (callee == "apierr.Write" || (dir == "webui" && callee == "writeError")) && len(x.Args) == 4 {
							site(x.Args[1], x.Args[2], x.Pos())
						}
					case *ast.CompositeLit:
						typ := ""
						switch ty := x.Type.(type) {
						case *ast.Ident:
							typ = dir + ":" + ty.Name
						case *ast.SelectorExpr:
							if p, ok := ty.X.(*ast.Ident); ok {
								typ = p.Name + "." + ty.Sel.Name
							}
						}
						switch {
						case typ == "rest-shim:routeError" || typ == "internal/jsonbody:Error":
							if status, code := statusAndCode(x); status != nil {
								site(status, code, x.Pos())
							}
						case typ == "apierr.Body":
							site(nil, x.Elts[0].(*ast.KeyValueExpr).Value, x.Pos())
						}
					case *ast.ValueSpec:
						if len(x.Names) == 1 && x.Names[0].Name == "refusalStatus" {
							for _, e := range x.Values[0].(*ast.CompositeLit).Elts {
								kv := e.(*ast.KeyValueExpr)
								c, okC := resolveCode(kv.Key)
								st, okS := resolveStatus(kv.Value)
								if !okC || !okS {
									t.Errorf("refusalStatus: an entry not of constants at %v", fset.Position(kv.Pos()))
								}
								add(c, st, fmt.Sprintf("%s/%s:%d", dir, file, fset.Position(kv.Pos()).Line))
							}
						}
					}
					return true
				})
				// What a dynamic site answers is what it is listed with: each
				// code-shaped constant in it (and in the helpers it names) is
				// listed.
				d, listed := dynamic[file+":"+name]
				if !listed {
					continue
				}
				for _, helper := range append([]string{file + ":" + name}, d.helpers...) {
					for _, g := range files[dir] {
						for _, hd := range g.Decls {
							hf, ok := hd.(*ast.FuncDecl)
							if !ok || filepath.Base(fset.Position(g.Pos()).Filename)+":"+hf.Name.Name != helper {
								continue
							}
							ast.Inspect(hf.Body, func(n ast.Node) bool {
								if e, ok := n.(ast.Expr); ok {
									if c, ok := resolveCode(e); ok && codeShape.MatchString(c) && d.answers[c] == nil && !resolvedHere[c] {
										t.Errorf("%s answers `%s`, which dynamicSites does not list for %s:%s", helper, c, dir, name)
									}
								}
								return true
							})
						}
					}
				}
				for c, ss := range d.answers {
					for _, s := range ss {
						add(c, s, dir+"/"+file+" "+name)
					}
				}
			}
		}
	}
	for site := range dynamic {
		if !used[site] {
			t.Errorf("dynamicSites lists %s, which writes no error any more", site)
		}
	}
	// refusal passes any INVALID_* refusal of a subgraph on as a 400.
	for c := range invalids {
		add(c, 400, "a subgraph's INVALID_ refusal (rest-shim/refusals.go)")
	}
	// The hosted checkout answers an invalid session as its one 401
	// unauthorized (checkoutAPI.fail, and pci's relay): the code itself never
	// reaches a client.
	if checkout, _ := os.ReadFile(filepath.Join(root, "rest-shim", "checkout.go")); strings.Count(string(checkout), `"hosted_session_invalid"`) != 2 {
		t.Errorf("rest-shim/checkout.go no longer turns both hosted_session_invalid refusals into 401 unauthorized: the code reaches clients")
	}
	delete(codes, "hosted_session_invalid")
	return codes
}

type dynamicSite struct {
	helpers []string         // functions (file:name) whose codes it answers
	answers map[string][]int // code -> statuses
}

// dynamicSites are the error writers whose code or status is computed, with
// what each can answer: file:function.
func dynamicSites(map[string]map[int][]string) map[string]dynamicSite {
	return map[string]dynamicSite{
		// A developer key refused (access.Refusal), or its store down.
		"auth.go:requireKey": {answers: map[string][]int{"unauthorized": {401}, "unavailable": {503}}},
		// getOne's not-found code comes from addRoutes.
		"catalog.go:getOne": {helpers: []string{"routes.go:addRoutes"}, answers: map[string][]int{"cigar_not_found": {404}, "product_not_found": {404}}},
		// A subgraph's refusal: refusalStatus (read above), or INVALID_*.
		"refusals.go:refusal": {answers: map[string][]int{}},
		// A library's non-JSON error below a route (a file server's, net/http's).
		"edge.go:writeStatusError": {helpers: []string{"edge.go:statusCode"}, answers: map[string][]int{
			"moved": {301, 302, 303, 307, 308}, "bad_request": {400}, "unauthorized": {401}, "forbidden": {403}, "not_found": {404},
			"method_not_allowed": {405}, "body_too_large": {413}, "internal_error": {500}, "unavailable": {502, 503, 504},
			"precondition_failed": {412}, "requested_range_not_satisfiable": {416}}},
		// net/http's canned refusals before any route, rewritten.
		"listener.go:rewriteCanned": {helpers: []string{"listener.go:cannedError"}, answers: map[string][]int{
			"bad_request": {400}, "headers_too_large": {431}, "unsupported_transfer_encoding": {501},
			"http_version_not_supported": {505}, "expectation_failed": {417}}},
		// A connection over --max-conns-per-client, refused before any request.
		"connlimit.go:refusal": {answers: map[string][]int{"too_many_connections": {503}}},
		// The payments subgraph's card refusals.
		"pci.go:NewHandler": {answers: map[string][]int{"hosted_session_invalid": {401}, "card_declined": {402}, "merchant_not_ready": {409}}},
	}
}

// httpStatuses reads net/http's Status constants from its source.
func httpStatuses(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(build.Default.GOROOT, "src", "net", "http", "status.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == len(vs.Names) {
			for i, name := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					out[name.Name], _ = strconv.Atoi(lit.Value)
				}
			}
		}
		return true
	})
	if out["StatusTeapot"] != 418 {
		t.Fatalf("net/http's status.go: %v", out)
	}
	return out
}

// undocumentedTrees are the file trees the origins serve beside their API,
// with why no OpenAPI document lists them.
var undocumentedTrees = map[string]string{
	"/docs/":           "the documentation page's own files; /docs/openapi.yaml is documented",
	"/graphql/assets/": "GraphiQL's own files, for the page GET /graphql serves a browser",
	"/examples/":       "the demo's examples (band photos, the widget): files, not API",
}

type registered struct {
	payments     bool
	method, path string
}

// registeredRoutes reads the route table, rest-shim's routes.go: every
// pattern addRoutes (the API's origin) and addPaymentsRoutes (the payments
// origin) register, their constants resolved.
func registeredRoutes(t *testing.T) []registered {
	t.Helper()
	root, _ := filepath.Abs("..")
	fset := token.NewFileSet()
	consts := map[string]string{}
	var routesFile *ast.File
	for _, dir := range []string{"rest-shim", "examples"} {
		paths, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Base(path) == "routes.go" && dir == "rest-shim" {
				routesFile = f
			}
			stringConsts(f, func(name, v string) {
				consts[f.Name.Name+"."+name] = v
				if dir == "rest-shim" {
					consts[name] = v
				}
			})
		}
	}
	var eval func(e ast.Expr) (string, bool)
	eval = func(e ast.Expr) (string, bool) {
		switch x := e.(type) {
		case *ast.BasicLit:
			v, err := strconv.Unquote(x.Value)
			return v, err == nil
		case *ast.Ident:
			v, ok := consts[x.Name]
			return v, ok
		case *ast.SelectorExpr:
			v, ok := consts[fmt.Sprint(x.X)+"."+x.Sel.Name]
			return v, ok
		case *ast.BinaryExpr:
			a, ok1 := eval(x.X)
			b, ok2 := eval(x.Y)
			return a + b, ok1 && ok2 && x.Op == token.ADD
		}
		return "", false
	}
	var out []registered
	for _, decl := range routesFile.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || (fn.Name.Name != "addRoutes" && fn.Name.Name != "addPaymentsRoutes") {
			continue
		}
		payments := fn.Name.Name == "addPaymentsRoutes"
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok {
				return false // a helper's body (trusted): its patterns are its callers'
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			callee := ""
			switch f := call.Fun.(type) {
			case *ast.SelectorExpr:
				callee = f.Sel.Name
			case *ast.Ident:
				callee = f.Name
			}
			if callee != "Handle" && callee != "HandleFunc" && callee != "trusted" {
				return true
			}
			pattern, ok := eval(call.Args[0])
			if !ok {
				t.Errorf("routes.go:%d: a route pattern that is not constant", fset.Position(call.Pos()).Line)
				return true
			}
			method, path, found := strings.Cut(pattern, " ")
			if !found {
				method, path = "", pattern
			}
			if callee == "trusted" {
				path = consts["PaymentsBasePath"] + path
			}
			out = append(out, registered{payments, method, path})
			return true
		})
	}
	if len(out) < 40 {
		t.Fatalf("routes.go: %d routes found: %v", len(out), out)
	}
	return out
}

// stringConsts calls each with every top-level string constant of f.
func stringConsts(f *ast.File, each func(name, value string)) {
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						each(id.Name, v)
					}
				}
			}
		}
	}
}

// statusAndCode are the Status and Code of a routeError or jsonbody.Error
// literal, written by position (the first two of three) or by name; nil
// when it names neither.
func statusAndCode(lit *ast.CompositeLit) (status, code ast.Expr) {
	if len(lit.Elts) == 3 {
		if _, keyed := lit.Elts[0].(*ast.KeyValueExpr); !keyed {
			return lit.Elts[0], lit.Elts[1]
		}
	}
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			switch fmt.Sprint(kv.Key) {
			case "Status":
				status = kv.Value
			case "Code":
				code = kv.Value
			}
		}
	}
	if status == nil || code == nil {
		return nil, nil
	}
	return status, code
}
