package internal_test

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/vitolahq/vitola/"

// TestComponentBoundaries keeps the parts apart in the code they build
// (`go list -deps`; tests may import what they test against):
//   - the edge (rest-shim, router, access) imports no subgraph's code,
//     directly or through another package; subgraphs/subgraph, the transport
//     every subgraph serves and the edge calls, is shared;
//   - no subgraph imports another;
//   - the shared helpers (internal/, subgraphs/subgraph) import neither a
//     subgraph nor the edge, so that sharing them shares nothing else.
//
// A type HTTP and a subgraph both need lives in a contract package under
// internal/ (internal/accesstoken); a rule lives in the subgraph that owns the
// data and reaches the edge as a typed GraphQL error.
func TestComponentBoundaries(t *testing.T) {
	imports := moduleImports(t)
	type finding struct{ component, entry, chain string }
	// One finding per component and import that crosses a boundary, with the
	// shortest chain that leads there from a package of the component.
	found := map[[3]string]finding{}
	for _, pkg := range sortedKeys(imports) {
		from := component(pkg)
		forbidden := rule(from)
		if forbidden == nil {
			continue
		}
		// Breadth first, so the chain reported is a shortest one; only the
		// first forbidden package on a path is reported (what it imports in
		// turn is its own component's business).
		parent := map[string]string{pkg: ""}
		queue := []string{pkg}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, dep := range imports[p] {
				if _, seen := parent[dep]; seen {
					continue
				}
				parent[dep] = p
				if forbidden(component(dep)) {
					key := [3]string{from, p, dep} // the import that crosses the boundary
					chain := []string{short(dep)}
					for q := p; q != ""; q = parent[q] {
						chain = append([]string{short(q)}, chain...)
					}
					if f, ok := found[key]; !ok || strings.Count(f.chain, "→") > len(chain)-1 {
						found[key] = finding{from, short(dep), strings.Join(chain, " → ")}
					}
					continue
				}
				queue = append(queue, dep)
			}
		}
	}
	if len(found) == 0 {
		return
	}
	var lines []string
	for _, f := range found {
		lines = append(lines, "\n\t"+f.component+" imports "+f.entry+": "+f.chain)
	}
	sort.Strings(lines)
	t.Errorf("components import code across their boundaries:%s\n"+
		"The edge (rest-shim, router, access) knows no subgraph's code and no subgraph another's: move a type both sides need "+
		"into a contract package under internal/ that imports neither, and let the subgraph that owns the data enforce its "+
		"rules, answering a typed GraphQL error (extensions.code) that the shim maps to HTTP.", strings.Join(lines, ""))
}

// component names the part a package belongs to: "rest-shim", "router",
// "access", "subgraphs/<name>", "subgraphs/subgraph", "internal", or "" for
// the rest (cmd, platform, examples, ...), which may assemble anything.
func component(pkg string) string {
	rel := strings.TrimPrefix(pkg, module)
	parts := strings.Split(rel, "/")
	switch parts[0] {
	case "rest-shim", "router", "access", "internal":
		return parts[0]
	case "subgraphs":
		if len(parts) > 1 {
			return "subgraphs/" + parts[1]
		}
	}
	return ""
}

func isSubgraph(c string) bool {
	return strings.HasPrefix(c, "subgraphs/") && c != "subgraphs/subgraph"
}

func isEdge(c string) bool { return c == "rest-shim" || c == "router" || c == "access" }

// rule is what a component may not import (nil: anything goes).
func rule(from string) func(to string) bool {
	switch {
	case isEdge(from):
		return isSubgraph
	case isSubgraph(from):
		return func(to string) bool { return isSubgraph(to) && to != from }
	case from == "internal", from == "subgraphs/subgraph":
		return func(to string) bool { return isSubgraph(to) || isEdge(to) }
	}
	return nil
}

// moduleImports runs `go list -deps` over the module: each of its packages
// and the module packages it imports.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module) {
			continue
		}
		var deps []string
		for _, d := range fields[1:] {
			if strings.HasPrefix(d, module) {
				deps = append(deps, d)
			}
		}
		imports[fields[0]] = deps
	}
	if len(imports) < 10 {
		t.Fatalf("go list found %d packages of the module: is the test run from the module?", len(imports))
	}
	return imports
}

func short(pkg string) string { return strings.TrimPrefix(pkg, module) }

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// testOnly are packages only tests may import: a second band generator kept
// apart from the product (and from bandart, which the demo uses) so that
// accuracy measured on it stays independent.
var testOnly = []string{"subgraphs/matching/bandgen"}

func TestTestOnlyPackagesAreImportedByTestsOnly(t *testing.T) {
	imports := moduleImports(t)
	for _, pkg := range sortedKeys(imports) {
		for _, dep := range imports[pkg] {
			for _, only := range testOnly {
				if dep == module+only {
					t.Errorf("%s imports %s, which only tests may import", short(pkg), only)
				}
			}
		}
	}
}
