package internal_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// notSource are folders at the root that hold no part of the platform's code
// (tools' caches, build output, local data, installed npm packages).
var notSource = map[string]bool{"bin": true, "data": true, "node_modules": true}

// architecturePage holds the table of folders, under its "## Folders" heading.
const architecturePage = "docs/internals/architecture.md"

// TestLayoutTableListsEveryPackage keeps the root readable: every folder at the
// root that holds Go code, and every package under internal/, must be listed in
// the architecture page's table of folders, and everything it lists must exist.
func TestLayoutTableListsEveryPackage(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	listed := layoutTable(t, filepath.Join(root, architecturePage))

	var found []string
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || notSource[e.Name()] {
			continue
		}
		if holdsGo(t, filepath.Join(root, e.Name())) {
			found = append(found, e.Name()+"/")
		}
	}
	helpers, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range helpers {
		if e.IsDir() && holdsGo(t, filepath.Join(root, "internal", e.Name())) {
			found = append(found, "internal/"+e.Name()+"/")
		}
	}

	for _, f := range found {
		if !listed[f] {
			t.Errorf("%s holds Go code but "+architecturePage+"'s table of folders does not list it: add a row (a shared helper belongs under internal/)", f)
		}
	}
	foundSet := map[string]bool{}
	for _, f := range found {
		foundSet[f] = true
	}
	var stale []string
	for l := range listed {
		if !foundSet[l] {
			if _, err := os.Stat(filepath.Join(root, l)); err != nil {
				stale = append(stale, l)
			}
		}
	}
	sort.Strings(stale)
	for _, l := range stale {
		t.Errorf("%s's table of folders lists %s, which does not exist: remove or fix the row", architecturePage, l)
	}
}

// layoutTable reads the folders named in the first column of the tables under
// the page's "## Folders" heading.
func layoutTable(t *testing.T, page string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n## Folders\n")
	if start < 0 {
		t.Fatalf(`%s has no "## Folders" section`, architecturePage)
	}
	section := text[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	folder := regexp.MustCompile("`([a-z0-9_./-]+/)`")
	listed := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line[1:], "|", 2)[0]
		for _, m := range folder.FindAllStringSubmatch(first, -1) {
			listed[m[1]] = true
		}
	}
	if len(listed) == 0 {
		t.Fatalf("%s's Folders section has no table of folders", architecturePage)
	}
	return listed
}

// holdsGo reports whether dir or any folder below it (npm's excepted) holds a
// .go file.
func holdsGo(t *testing.T, dir string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != dir {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".go") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
