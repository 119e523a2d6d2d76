package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The command-line and settings references under docs/reference are
// generated from the CLI itself: the command table and each command's flag
// set, as `vitola COMMAND -h` sees them. This test fails while a page is
// stale; `make docs` (VITOLA_UPDATE=1) writes them again.

const (
	cliPage      = "../../docs/reference/cli.md"
	settingsPage = "../../docs/reference/settings.md"
	generatedBy  = "<!-- Generated from the CLI's command table and flags by `make docs` (cmd/vitola TestReferenceDocs). Do not edit: change the code and run `make docs`. -->\n\n"
)

// flagDoc is one flag of one command, as the reference shows it.
type flagDoc struct {
	name, env, def, about string
	boolean               bool
}

var envNote = regexp.MustCompile(`\s*\(env ([A-Z0-9_]+)\)`)

// commandFlags asks the command for its help, exactly as -h does, and
// returns its flags.
func commandFlags(t *testing.T, c command) []flagDoc {
	t.Helper()
	args := append([]string{"vitola"}, strings.Fields(c.path)...)
	err := dispatch(context.Background(), append(args, "--help"), func(string) string { return "" }, strings.NewReader(""), io.Discard, io.Discard)
	var help *helpRequest
	if !errors.As(err, &help) || help.flags == nil {
		t.Fatalf("vitola %s --help: want the command's help, got %v", c.path, err)
	}
	var out []flagDoc
	help.flags.VisitAll(func(f *flag.Flag) {
		d := flagDoc{name: f.Name, def: f.DefValue, about: f.Usage, boolean: isBoolFlag(f)}
		if m := envNote.FindStringSubmatch(f.Usage); m != nil {
			d.env = m[1]
			d.about = strings.TrimSpace(envNote.ReplaceAllString(f.Usage, ""))
		}
		if d.boolean && d.def == "false" {
			d.def = ""
		}
		out = append(out, d)
	})
	return out
}

// cell makes text safe in a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

func anchor(c command) string { return strings.ReplaceAll("vitola "+c.path, " ", "-") }

func renderCLI(t *testing.T) []byte {
	var b bytes.Buffer
	b.WriteString(generatedBy)
	b.WriteString("# Command-line reference\n\n")
	b.WriteString("Every command of `vitola`, as `vitola COMMAND -h` prints it. Flags and arguments come in\n" +
		"any order, and `--` ends the flags. A flag with an environment variable reads it when the\n" +
		"flag is not given: the flag wins over the variable, which wins over the default. Every\n" +
		"variable, with the commands that read it, is in [settings](settings.md).\n\n" +
		"An admin command prints its result alone on its last line and exits non-zero on any failure.\n\n")
	b.WriteString("## Commands\n\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "- [`vitola %s`](#%s)", c.path, anchor(c))
		if c.about != "" {
			fmt.Fprintf(&b, ": %s", c.about)
		}
		b.WriteString("\n")
	}
	for _, c := range commands {
		fmt.Fprintf(&b, "\n## `vitola %s`\n\n```\n%s\n```\n", c.path, c.synopsis())
		if c.about != "" {
			fmt.Fprintf(&b, "\n%s.\n", strings.TrimSuffix(upperFirst(c.about), "."))
		}
		flags := commandFlags(t, c)
		if len(flags) == 0 {
			b.WriteString("\nNo flags.\n")
			continue
		}
		b.WriteString("\n| flag | environment | default | what it sets |\n| --- | --- | --- | --- |\n")
		for _, f := range flags {
			name := "--" + f.name
			if !f.boolean {
				name += " VALUE"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, code(f.env), cell(code(f.def)), cell(f.about))
		}
	}
	return b.Bytes()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func renderSettings(t *testing.T) []byte {
	type setting struct {
		flag, def, about string
		commands         []string
	}
	byEnv := map[string]*setting{}
	for _, c := range commands {
		for _, f := range commandFlags(t, c) {
			if f.env == "" {
				continue
			}
			s := byEnv[f.env]
			if s == nil {
				// The first command in the table that reads it words it:
				// serve, for the server's settings.
				s = &setting{flag: "--" + f.name, def: f.def, about: f.about}
				byEnv[f.env] = s
			}
			s.commands = append(s.commands, c.path)
		}
	}
	envs := make([]string, 0, len(byEnv))
	for env := range byEnv {
		envs = append(envs, env)
	}
	slices.Sort(envs)
	var b bytes.Buffer
	b.WriteString(generatedBy)
	b.WriteString("# Settings reference\n\n")
	b.WriteString("Every setting is a flag of the command that reads it and an environment variable: a flag\n" +
		"given wins over the variable, which wins over the default. Every default is meant to work:\n" +
		"`vitola serve` with none of these set runs the whole platform on SQLite files under `./data`.\n" +
		"The [command-line reference](cli.md) gives each command's flags in full.\n\n")
	fmt.Fprintf(&b, "%d variables.\n\n", len(envs))
	b.WriteString("| variable | flag | default | read by | what it sets |\n| --- | --- | --- | --- | --- |\n")
	for _, env := range envs {
		s := byEnv[env]
		var readBy []string
		for _, p := range s.commands {
			readBy = append(readBy, fmt.Sprintf("[%s](cli.md#%s)", p, anchor(commandAt(p))))
		}
		if len(readBy) > 4 {
			readBy = append(readBy[:3], fmt.Sprintf("and %d more", len(readBy)-3))
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", env, s.flag, cell(code(s.def)), strings.Join(readBy, ", "), cell(s.about))
	}
	return b.Bytes()
}

func TestReferenceDocs(t *testing.T) {
	for _, p := range []struct {
		path   string
		render func(*testing.T) []byte
	}{{cliPage, renderCLI}, {settingsPage, renderSettings}} {
		got := p.render(t)
		if os.Getenv("VITOLA_UPDATE") == "1" {
			if err := os.MkdirAll(filepath.Dir(p.path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p.path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p.path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale (or missing): run `make docs` and commit it", strings.TrimPrefix(p.path, "../../"))
		}
	}
}
