// Package docs_test checks the repository's Markdown: every relative link and
// anchor in README.md and the pages under docs/ (and the other READMEs a
// reader meets: sdk/, examples/, webui/) points at something that exists in
// the repository. Web links are not fetched: the check runs offline.
package docs_test

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root, two levels above this package.
const root = "../.."

// pages lists the Markdown a reader meets: README.md at the root and every .md
// file under the folders people browse, leaving out installed packages,
// caches and test data (fixtures, not documentation).
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md"}
	for _, dir := range []string{"docs", "sdk", "examples", "webui", "tools", "schema"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return filepath.SkipDir
				}
				return err
			}
			if d.IsDir() {
				switch d.Name() {
				case "node_modules", "testdata", "dist", ".cache", "third_party":
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(d.Name(), ".md") {
				rel, err := filepath.Rel(root, path)
				if err != nil {
					return err
				}
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("listing %s: %v", dir, err)
		}
	}
	return out
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan   = regexp.MustCompile("`[^`]*`")
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// link is one link found in a page, with its line for the error message.
type link struct {
	line   int
	target string
}

// scan returns a page's links and the anchors its headings (and explicit
// <a id>) define, outside fenced code blocks and code spans.
func scan(text string) (links []link, anchors map[string]bool) {
	anchors = map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			slug := slugify(m[2])
			if n := seen[slug]; n > 0 {
				anchors[fmt.Sprintf("%s-%d", slug, n)] = true
			} else {
				anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		plain := codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(plain, -1) {
			links = append(links, link{i + 1, m[1]})
		}
		if m := refDef.FindStringSubmatch(plain); m != nil {
			links = append(links, link{i + 1, m[1]})
		}
	}
	return links, anchors
}

// slugify makes a heading's anchor as GitHub does: lower case, markup and
// punctuation other than hyphens and underscores dropped, spaces to hyphens.
func slugify(h string) string {
	h = codeSpan.ReplaceAllStringFunc(h, func(s string) string { return strings.Trim(s, "`") })
	h = inlineLink.ReplaceAllStringFunc(h, func(s string) string { return s[strings.Index(s, "[")+1 : strings.Index(s, "]")] })
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r > 127 && !strings.ContainsRune("’‘“”—–…·×→", r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestLinks(t *testing.T) {
	files := pages(t)
	anchorsOf := map[string]map[string]bool{}
	linksOf := map[string][]link{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		linksOf[f], anchorsOf[f] = scan(string(b))
	}
	checked := 0
	for _, f := range files {
		for _, l := range linksOf[f] {
			if msg := check(f, l.target, anchorsOf); msg != "" {
				t.Errorf("%s:%d: link %q: %s", f, l.line, l.target, msg)
			}
			checked++
		}
	}
	t.Logf("%d links in %d pages checked", checked, len(files))
}

// check returns what is wrong with one link of page from, or "".
func check(from, target string, anchorsOf map[string]map[string]bool) string {
	u, err := url.Parse(target)
	if err != nil {
		return "not a valid URL"
	}
	if u.Scheme != "" || strings.HasPrefix(target, "//") {
		return "" // a web or mail link: not fetched offline
	}
	page := from
	if u.Path != "" {
		if strings.HasPrefix(u.Path, "/") {
			return "an absolute path: write it relative to the page, so it works where the repository is browsed"
		}
		joined := filepath.ToSlash(filepath.Join(filepath.Dir(from), u.Path))
		if joined == ".." || strings.HasPrefix(joined, "../") {
			return "points outside the repository: a reader who cloned it has no such file"
		}
		info, err := os.Stat(filepath.Join(root, joined))
		if err != nil {
			return "no such file or folder in the repository"
		}
		if info.IsDir() || !strings.HasSuffix(joined, ".md") {
			return "" // a folder, or a source file (a #L12 anchor is the code host's)
		}
		page = joined
	}
	if u.Fragment == "" {
		return ""
	}
	anchors, ok := anchorsOf[page]
	if !ok {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			return "cannot read the linked page"
		}
		_, anchors = scan(string(b))
		anchorsOf[page] = anchors
	}
	if !anchors[strings.ToLower(u.Fragment)] {
		return fmt.Sprintf("%s has no heading with the anchor #%s", page, u.Fragment)
	}
	return ""
}

// The checker itself, on cases whose answer is known.
func TestLinkCheckerCatches(t *testing.T) {
	text := strings.Join([]string{
		"# Getting started",
		"## Keys & quotas",
		"## Keys & quotas",
		"## `vitola serve`",
		"```sh",
		"# not a heading",
		"[not a link](nowhere.md)",
		"```",
		"See [a](#getting-started), [b](#keys--quotas-1), [c](#vitola-serve) and `[d](nowhere.md)`.",
		"[ref]: https://example.com",
	}, "\n")
	links, anchors := scan(text)
	for _, want := range []string{"getting-started", "keys--quotas", "keys--quotas-1", "vitola-serve"} {
		if !anchors[want] {
			t.Errorf("anchor %q not found in %v", want, anchors)
		}
	}
	if anchors["not-a-heading"] {
		t.Error("a comment in a fenced block was taken for a heading")
	}
	var got []string
	for _, l := range links {
		got = append(got, l.target)
	}
	if want := "#getting-started #keys--quotas-1 #vitola-serve https://example.com"; strings.Join(got, " ") != want {
		t.Errorf("links = %q, want %q", got, want)
	}
	pages := map[string]map[string]bool{"README.md": anchors}
	for _, tt := range []struct{ target, wantPart string }{
		{"#getting-started", ""},
		{"#missing", "no heading"},
		{"../elsewhere/page.md", "outside the repository"},
		{"/README.md", "absolute path"},
		{"docs/none.md", "no such file"},
		{"https://example.com/x", ""},
	} {
		msg := check("README.md", tt.target, pages)
		if (tt.wantPart == "") != (msg == "") || !strings.Contains(msg, tt.wantPart) {
			t.Errorf("check(%q) = %q, want it to contain %q", tt.target, msg, tt.wantPart)
		}
	}
}

// TestEveryPageInTheTableOfContents: every page under docs/ is reachable from
// docs/README.md, the table of contents.
func TestEveryPageInTheTableOfContents(t *testing.T) {
	toc, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	links, _ := scan(string(toc))
	linked := map[string]bool{}
	for _, l := range links {
		if u, err := url.Parse(l.target); err == nil && u.Scheme == "" {
			linked[filepath.ToSlash(filepath.Join("docs", u.Path))] = true
		}
	}
	for _, p := range pages(t) {
		if strings.HasPrefix(p, "docs/") && p != "docs/README.md" && !linked[p] {
			t.Errorf("%s is not linked from docs/README.md, the table of contents", p)
		}
	}
}
