package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The command line is one table (commands) read by one parser: every command
// takes its flags and positional arguments in any order ("--" ends the
// flags), answers -h/--help with its own usage on standard output and exit
// status 0, and answers wrong usage with its usage on standard error, a
// message naming what was wrong and a non-zero exit status.

// command is one command of the CLI.
type command struct {
	path  string   // the words after "vitola": "keys set"
	usage string   // what follows them in its synopsis: "KEY --trusted-documents-only=true|false"
	args  []string // its positional arguments in order; a last one ending in "..." takes one or more
	about string   // what it does and what its last line of output says
}

// commands lists every command. Groups ("keys", "payments clients") are the
// leading words several commands share.
var commands = []command{
	{path: "serve", usage: "[flags]", about: "run the platform: every component in one process (the default), or one --component"},

	{path: "keys create", usage: "--name NAME [--entitlement api.ai] [--publishable --origin ORIGIN…]", about: "a developer key (or a publishable key for websites); last line: the key, shown only now"},
	{path: "keys list", about: `every developer key; last line: "N keys, M active"`},
	{path: "keys revoke", usage: "KEY", args: []string{"KEY"}, about: `revoke a key (KEY: its ID key_… or the key itself); last line: "revoked KEY"`},
	{path: "keys set", usage: "KEY --trusted-documents-only=true|false", args: []string{"KEY"}, about: `change a key's settings (KEY: its ID key_… or the key itself); last line: "key_… trusted-documents-only=true"`},
	{path: "keys limits set", usage: "KEY [--rps N|default] [--cost-per-minute N|default]", args: []string{"KEY"}, about: "a key's own quotas (KEY: its ID key_… or the key itself); default: the server's; last line: the key's limits"},

	{path: "graphql documents add", usage: "MANIFEST.json", args: []string{"MANIFEST.json"}, about: `register trusted documents from a Relay, GraphQL Code Generator or Apollo manifest (- for stdin); last line: "added N trusted documents (M already there)"`},
	{path: "migrate", about: "create or upgrade every store's schema, then exit"},
	{path: "import", usage: "KIND FILE", args: []string{"KIND", "FILE"}, about: "load JSON Lines (KIND: catalog, venues, events or sessions; FILE - for stdin; formats in docs/operations/importing.md); all or nothing"},
	{path: "evidence add", usage: "--cigar CIGAR_ID FILE...", args: []string{"FILE..."}, about: "reference photos of a cigar's band for recognition (--flat for scans); all or nothing"},
	{path: "credits add", usage: "--key KEY --amount N [--note WHY]", about: "grant a developer key credits for the paid AI routes; last line: its credits now"},
	{path: "credits balance", usage: "--key KEY", about: `a developer key's credits; last line: "key_… has N credits"`},
	{path: "users create", usage: "--email E --password P|- --display-name N [--first-name F] [--last-name L] [--private]", about: "an account (--password - reads it from stdin); last line: the user's ID"},

	{path: "oauth clients create", usage: "--name N --redirect-uri URI… [--public]", about: "an OAuth client; last line: its ID (and secret, when confidential)"},
	{path: "oauth token", usage: `--user EMAIL --client CLIENT_ID --scope "SCOPE …"`, about: "an access token for scripts and tests; last line: the token"},
	{path: "oauth keys rotate", about: "a new signing key; the others keep verifying; last line: its key ID"},

	{path: "payments clients create", usage: "--name N [--developer-key KEY] [--callback-url URL] --return-url URL… [--origin ORIGIN…] [--resource-type T…] [--scope merchant_accounts:read|write …] [--require-assertion --assertion-key FILE…] [--deny ACTION…]",
		about: "a service client; last line: its ID, its secret and its callback signing secret (both shown once), separated by spaces"},
	{path: "payments clients list", about: `last line: "N clients, M active"`},
	{path: "payments clients rotate-secret", usage: "ID", args: []string{"ID"}, about: "last line: the new secret (the old one works 24 h more)"},
	{path: "payments clients revoke", usage: "ID", args: []string{"ID"}, about: `last line: "revoked ID"`},
	{path: "payments clients rotate-signing-secret", usage: "ID", args: []string{"ID"}, about: "last line: the new signing secret (the old one signs beside it 24 h more)"},
	{path: "payments clients callbacks-on", usage: "ID", args: []string{"ID"}, about: "send callbacks again after a 410 turned them off"},
	{path: "payments purchases refund", usage: "PURCHASE_ID [--note N]", args: []string{"PURCHASE_ID"}, about: "money back through the gateway, units back from the account (refused when they were spent)"},
	{path: "payments events list", usage: "[--client ID] [--state pending|delivered|failed] [--limit N]", about: `the callback events, newest first; last line: "N events"`},
	{path: "payments events attempts", usage: "EVENT_ID", args: []string{"EVENT_ID"}, about: "every delivery attempt of an event"},
	{path: "payments events retry", usage: "EVENT_ID", args: []string{"EVENT_ID"}, about: "a pending or failed event is sent now"},
	{path: "payments events replay", usage: "EVENT_ID", args: []string{"EVENT_ID"}, about: "an event is sent again, even if delivered"},
	{path: "payments resource-types add", usage: "NAME [--description D]", args: []string{"NAME"}, about: "a kind of unit clients sell"},
	{path: "payments resource-types list"},
	{path: "payments merchants create", usage: "--name N --gateway sandbox|stripe", about: "a merchant account of the platform's own; last line: its ID"},
	{path: "payments merchants set-credentials", usage: "ID --credentials-file FILE|-", args: []string{"ID"}, about: "the gateway's credentials, a JSON object"},
	{path: "payments merchants revoke-credentials", usage: "ID", args: []string{"ID"}},
	{path: "payments merchants list"},
	{path: "payments merchants rewrap", about: "seal every record under the current KEK"},
	{path: "payments offers create", usage: "--resource-type T --name N --quantity Q --price MINOR --currency USD --merchant ID --idempotency-key K", about: "a platform offer; last line: its ID"},
	{path: "payments offers list", usage: "--resource-type T"},
}

// helpRequest is -h or --help: run prints usage on standard output and
// succeeds. flags is the command's flag set (nil for a group's or the whole
// CLI's usage), from which the reference pages under docs/ are generated.
type helpRequest struct {
	usage string
	flags *flag.FlagSet
}

func (h *helpRequest) Error() string { return "help requested" }
func (h *helpRequest) Unwrap() error { return flag.ErrHelp }

// usageError is a command used wrongly: run prints usage on standard error
// and fails with err.
type usageError struct {
	usage string
	err   error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func isHelpFlag(s string) bool { return s == "-h" || s == "--help" || s == "-help" }

// findCommand reads a command's words from args (what follows "vitola") and
// returns the command and the arguments after its words.
func findCommand(args []string) (command, []string, error) {
	group := ""
	for i, w := range args {
		p := strings.TrimSpace(group + " " + w)
		if j := slices.IndexFunc(commands, func(c command) bool { return c.path == p }); j >= 0 {
			return commands[j], args[i+1:], nil
		}
		if isHelpFlag(w) {
			return command{}, nil, &helpRequest{usage: groupUsage(group)}
		}
		if len(subcommands(p)) == 0 {
			if strings.HasPrefix(w, "-") && group != "" {
				return command{}, nil, &usageError{groupUsage(group), fmt.Errorf("%s: name the subcommand (%s) before its flags", group, orList(subcommands(group)))}
			}
			if group == "" {
				return command{}, nil, &usageError{usage, fmt.Errorf("unknown command %q", w)}
			}
			return command{}, nil, &usageError{groupUsage(group), fmt.Errorf("%s: unknown subcommand %q (want %s)", group, w, orList(subcommands(group)))}
		}
		group = p
	}
	if group == "" {
		return command{}, nil, &usageError{usage, errors.New("no command given")}
	}
	return command{}, nil, &usageError{groupUsage(group), fmt.Errorf("%s: want a subcommand: %s", group, orList(subcommands(group)))}
}

// commandAt is the command listed at path.
func commandAt(path string) command {
	i := slices.IndexFunc(commands, func(c command) bool { return c.path == path })
	if i < 0 {
		panic("vitola: no command " + path + " in the table")
	}
	return commands[i]
}

// subcommands are the words that may follow group.
func subcommands(group string) []string {
	var words []string
	for _, c := range commands {
		if rest, ok := strings.CutPrefix(c.path, group+" "); ok {
			w, _, _ := strings.Cut(rest, " ")
			if !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
	}
	return words
}

func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// groupUsage lists the commands of a group; the whole CLI's is usage.
func groupUsage(group string) string {
	if group == "" {
		return usage
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Usage of vitola %s:\n\n", group)
	for _, c := range commands {
		if strings.HasPrefix(c.path, group+" ") {
			fmt.Fprintf(&b, "  %s\n", c.synopsis())
			if c.about != "" {
				fmt.Fprintf(&b, "      %s\n", c.about)
			}
		}
	}
	fmt.Fprintf(&b, "\nRun 'vitola %s COMMAND -h' for a command's flags. Flags and arguments\ncome in any order; -- ends the flags.\n", group)
	return b.String()
}

func (c command) synopsis() string { return strings.TrimSpace("vitola " + c.path + " " + c.usage) }

// help is the command's usage: its synopsis, what it does and its flags.
func (c command) help(fs *flag.FlagSet) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Usage: %s\n", c.synopsis())
	if c.about != "" {
		fmt.Fprintf(&b, "\n%s\n", c.about)
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		b.WriteString("\nFlags (before or after the arguments; -- ends them):\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return b.String()
}

// misuse is wrong usage of the command: what was wrong, after its usage.
func (c command) misuse(fs *flag.FlagSet, format string, a ...any) error {
	return &usageError{c.help(fs), fmt.Errorf(c.path+": "+format, a...)}
}

// newFlagSet is a command's flag set; parse reports its errors and usage.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("vitola "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse reads the command's arguments: the flags declared on fs and its
// positional arguments, in any order; after "--" everything is positional.
// It returns the positional arguments, as many as the command takes.
func (c command) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case len(a) < 2 || a[0] != '-': // as the flag package sees it: "-" is an argument
			positional = append(positional, a)
		default:
			flags = append(flags, a)
			// A flag that takes a value takes the next argument unless given
			// as --name=value, whatever that argument looks like.
			name, _, inline := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
			if f := fs.Lookup(name); f != nil && !inline && !isBoolFlag(f) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		}
	}
	if err := fs.Parse(flags); errors.Is(err, flag.ErrHelp) {
		return nil, &helpRequest{c.help(fs), fs}
	} else if err != nil {
		return nil, c.misuse(fs, "%v", err)
	}
	want := len(c.args)
	variadic := want > 0 && strings.HasSuffix(c.args[want-1], "...")
	switch {
	case len(positional) < want:
		return nil, c.misuse(fs, "%s is missing", strings.TrimSuffix(c.args[len(positional)], "..."))
	case len(positional) > want && !variadic:
		return nil, c.misuse(fs, "unexpected argument %q", positional[want])
	}
	return positional, nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
