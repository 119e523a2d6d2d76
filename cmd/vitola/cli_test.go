package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runCLI runs vitola with args and returns what it printed.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), append([]string{"vitola"}, args...), noEnv, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

// TestEveryCommandAnswersHelp: every command `vitola help` lists, each of its
// subcommands and every group of them answer -h and --help with their own
// usage on standard output and success; a group without its subcommand, and
// a command without its arguments, fail with their own usage on standard
// error.
func TestEveryCommandAnswersHelp(t *testing.T) {
	help, _, err := runCLI(t, "help")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+)  `).FindAllStringSubmatch(help, -1) {
		listed = append(listed, m[1])
	}
	if tops := topCommands(); !slices.Equal(listed, tops) {
		t.Fatalf("vitola help lists %v; the commands are %v", listed, topCommands())
	}
	// Every leaf, and every group of leaves, of the commands help lists.
	want := map[string]string{} // path -> the first line of its usage
	for _, c := range commands {
		words := strings.Fields(c.path)
		want[c.path] = "Usage: vitola " + c.path
		for i := 1; i < len(words); i++ {
			want[strings.Join(words[:i], " ")] = "Usage of vitola " + strings.Join(words[:i], " ") + ":"
		}
	}
	for path, first := range want {
		for _, flag := range []string{"-h", "--help"} {
			args := append(strings.Fields(path), flag)
			stdout, stderr, err := runCLI(t, args...)
			if err != nil || stderr != "" || !strings.HasPrefix(stdout, first+"\n") && !strings.HasPrefix(stdout, first+" ") {
				t.Errorf("vitola %s: err %v, stdout %.80q, stderr %.80q; want success and stdout starting %q", strings.Join(args, " "), err, stdout, stderr, first)
			}
		}
	}
	// Wrong usage: the command's own usage on stderr, what was wrong in the
	// error, nothing on stdout.
	for _, tc := range []struct {
		args      []string
		usage, is string
	}{
		{[]string{"payments", "events"}, "Usage of vitola payments events:", "payments events: want a subcommand: list, attempts, retry or replay"},
		{[]string{"payments", "events", "nope"}, "Usage of vitola payments events:", `payments events: unknown subcommand "nope"`},
		{[]string{"keys", "set", "--trusted-documents-only=true"}, "Usage: vitola keys set KEY", "keys set: KEY is missing"},
		{[]string{"keys", "set", "a", "b", "--trusted-documents-only"}, "Usage: vitola keys set KEY", `keys set: unexpected argument "b"`},
		{[]string{"keys", "list", "--nme", "x"}, "Usage: vitola keys list", "keys list: flag provided but not defined: -nme"},
		{[]string{"keys", "create"}, "Usage: vitola keys create", "keys create: --name is required"},
		{[]string{"import", "catalog"}, "Usage: vitola import KIND FILE", "import: FILE is missing"},
		{[]string{"evidence", "add", "--cigar", "cig_x"}, "Usage: vitola evidence add", "evidence add: FILE is missing"},
		{[]string{"frobnicate"}, "Usage: vitola <command>", `unknown command "frobnicate"`},
		{[]string{"keys", "--data", "x", "list"}, "Usage of vitola keys:", "keys: name the subcommand (create, list, revoke, set or limits) before its flags"},
	} {
		stdout, stderr, err := runCLI(t, tc.args...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.is) || !strings.HasPrefix(stderr, tc.usage) || stdout != "" {
			t.Errorf("vitola %s: err %v, stderr %.60q, stdout %.60q; want an error %q after usage %q", strings.Join(tc.args, " "), err, stderr, stdout, tc.is, tc.usage)
		}
	}
}

// TestArgumentsAndFlagsInAnyOrder: every keys subcommand that names a key
// takes it before the flags, after them, between them and after "--"; so do
// the other commands with arguments.
func TestArgumentsAndFlagsInAnyOrder(t *testing.T) {
	data := t.TempDir()
	newKey := func() string {
		t.Helper()
		if _, err := admin(t, "keys", "create", "--name", "order", "--data", data); err != nil {
			t.Fatal(err)
		}
		out, _, _ := runCLI(t, "keys", "list", "--data", data)
		ids := regexp.MustCompile(`(?m)^(key_[0-9a-z]+) `).FindAllStringSubmatch(out, -1)
		return ids[len(ids)-1][1]
	}
	id := newKey()
	for _, tc := range []struct {
		args []string
		last string
	}{
		{[]string{"keys", "set", id, "--trusted-documents-only=true", "--data", data}, id + " trusted-documents-only=true"},
		{[]string{"keys", "set", "--data", data, "--trusted-documents-only=false", id}, id + " trusted-documents-only=false"},
		{[]string{"keys", "set", "--data", data, id, "--trusted-documents-only"}, id + " trusted-documents-only=true"},
		{[]string{"keys", "set", "--trusted-documents-only=false", "--data", data, "--", id}, id + " trusted-documents-only=false"},
		{[]string{"keys", "limits", "set", id, "--rps", "5", "--data", data}, id + ": rps=5 cost-per-minute=default"},
		{[]string{"keys", "limits", "set", "--data", data, "--cost-per-minute", "900", id}, id + ": rps=5 cost-per-minute=900"},
		{[]string{"keys", "limits", "set", "--rps", "default", id, "--data", data}, id + ": rps=default cost-per-minute=900"},
		{[]string{"keys", "list", "--data", data}, "1 keys, 1 active"},
		{[]string{"keys", "revoke", id, "--data", data}, "revoked " + id},
	} {
		last, err := admin(t, tc.args...)
		if err != nil || last != tc.last {
			t.Errorf("vitola %s: last line %q, %v; want %q", strings.Join(tc.args, " "), last, err, tc.last)
		}
	}
	id = newKey()
	if last, err := admin(t, "keys", "revoke", "--data", data, id); err != nil || last != "revoked "+id {
		t.Errorf("keys revoke with the key last: %q, %v", last, err)
	}
	// Revoked by the key itself, it prints the key's ID: a key is shown once.
	plain, err := admin(t, "keys", "create", "--name", "by key", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	if last, err := admin(t, "keys", "revoke", "--data", data, plain); err != nil || !strings.HasPrefix(last, "revoked key_") || strings.Contains(last, plain) {
		t.Errorf("keys revoke by the key: %q, %v; want its ID, not the key", last, err)
	}

	manifest := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(manifest, []byte(`{"a1": "query A { __typename }"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"graphql", "documents", "add", manifest, "--data", data},
		{"graphql", "documents", "add", "--data", data, manifest},
	} {
		if last, err := admin(t, args...); err != nil || !strings.HasPrefix(last, "added ") {
			t.Errorf("vitola %s: %q, %v", strings.Join(args, " "), last, err)
		}
	}
	for _, tc := range []struct {
		args []string
		last string
	}{
		{[]string{"payments", "resource-types", "add", "tokens_a", "--description", "A", "--data", data}, "added resource type tokens_a"},
		{[]string{"payments", "resource-types", "add", "--data", data, "--description", "B", "tokens_b"}, "added resource type tokens_b"},
	} {
		if last, err := admin(t, tc.args...); err != nil || last != tc.last {
			t.Errorf("vitola %s: %q, %v; want %q", strings.Join(tc.args, " "), last, err, tc.last)
		}
	}
}

// TestDocsCommandsParse: every `vitola …` command README and the docs pages
// show, in a code block or inline, names a command and only flags it takes, with values of
// their kind: each one, placeholders filled and -h added, prints that
// command's usage. Optional parts ([--flag X]) are taken as given,
// alternatives (a|b) as their first.
func TestDocsCommandsParse(t *testing.T) {
	readme := docsText(t)
	command := `(?:\./bin/)?vitola (?:` + strings.Join(topCommands(), "|") + `|help)\b`
	var examples []string
	var prose []string
	lines := strings.Split(readme, "\n")
	fenced := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			prose = append(prose, l)
			continue
		}
		m := regexp.MustCompile(command + `.*`).FindString(l)
		if m == "" {
			continue
		}
		for strings.HasSuffix(strings.TrimSpace(m), `\`) && i+1 < len(lines) { // a continued line
			i++
			m = strings.TrimSuffix(strings.TrimSpace(m), `\`) + " " + lines[i]
		}
		examples = append(examples, m)
	}
	for _, m := range regexp.MustCompile("`("+command+"[^`]*)`").FindAllStringSubmatch(strings.Join(prose, " "), -1) {
		examples = append(examples, m[1])
	}
	if len(examples) < 30 {
		t.Fatalf("found %d commands in the docs, want them all", len(examples))
	}
	placeholder := regexp.MustCompile(`^[A-Z][A-Z_]*$`)
	for _, ex := range examples {
		line := regexp.MustCompile(`\s+#.*$|\s*\|\s*tail.*$`).ReplaceAllString(ex, "") // a comment, a pipe
		var args []string
		for _, tok := range regexp.MustCompile(`"[^"]*"|\S+`).FindAllString(line, -1) {
			if tok == `\` { // a comment after a line's \ ends the command there
				t.Errorf("the docs' %q: a comment follows a continued line", strings.TrimSpace(ex))
			}
			tok = strings.Trim(tok, `"[]`)
			tok, _, _ = strings.Cut(tok, "|")
			tok = strings.TrimSuffix(strings.TrimSuffix(tok, "…"), "...")
			if placeholder.MatchString(tok) || strings.HasPrefix(tok, "$") {
				tok = "1"
			}
			if tok != "" {
				args = append(args, tok)
			}
		}
		stdout, stderr, err := runCLI(t, append(args[1:], "-h")...)
		if err != nil || !strings.HasPrefix(stdout, "Usage: vitola ") && !strings.HasPrefix(stdout, "Usage of vitola ") {
			t.Errorf("the docs' %q (run as %q): %v\n%s", strings.TrimSpace(ex), args, err, stderr)
		}
	}
}

// topCommands are the first words of every command.
func topCommands() []string {
	var tops []string
	for _, c := range commands {
		if top, _, _ := strings.Cut(c.path, " "); !slices.Contains(tops, top) {
			tops = append(tops, top)
		}
	}
	return tops
}
