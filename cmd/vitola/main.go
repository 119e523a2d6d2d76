// Command vitola runs the Vitola platform and its admin commands.
//
//	vitola serve [flags]              the platform (or one --component of it)
//	vitola keys create|list|revoke|set|limits set   developer keys
//	vitola graphql documents add      register trusted documents from a client's manifest
//	vitola migrate                    bring every store to the newest schema
//	vitola import KIND FILE           load catalog, venues, events or sessions from JSON Lines
//	vitola credits add|balance        a developer key's credits
//	vitola evidence add               reference band images of a catalog cigar
//	vitola payments …                 service clients, resource types, offers, merchant accounts
//
// Every admin command prints its result alone on the last line of standard
// output and exits non-zero on any failure.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "vitola:", err)
		os.Exit(1)
	}
}

// usage is the command list `vitola help` prints; serve's components come
// from the list --component checks, so the two cannot disagree.
var usage = `Usage: vitola <command> [subcommand] [arguments and flags]

Commands:
  serve     run the platform: every component in one process (default), or one
            --component (` + strings.Join(components, ", ") + `)
  keys      developer keys: keys create --name NAME [--entitlement api.ai],
            keys list, keys revoke ID,
            keys set ID --trusted-documents-only=true|false,
            keys limits set ID [--rps N|default] [--cost-per-minute N|default]
  graphql   graphql documents add MANIFEST.json: register trusted documents
            (Relay, GraphQL Code Generator or Apollo manifest; - for stdin)
  migrate   create or upgrade every store's schema, then exit
  import    import catalog|venues|events|sessions FILE: load JSON Lines
            (- for stdin; formats in docs/operations/importing.md); all or nothing
  evidence  evidence add --cigar CIGAR_ID FILE...: reference photos of a
            cigar's band for recognition (--flat for scans); all or nothing
  credits   credits add --key KEY --amount N: grant a key credits (paid AI
            routes); credits balance --key KEY
  users     users create --email E --password P|- --display-name N: an account
  oauth     oauth clients create --name N --redirect-uri URI [--public],
            oauth token --user EMAIL --client ID --scope "…", oauth keys rotate
  payments  payments clients|purchases|events|resource-types|merchants|offers …:
            the payments API's service clients, their purchases and callback
            events, what they sell and who is paid

Run 'vitola <command> -h' (or a subcommand's, 'vitola keys set -h') for its
usage and flags. Flags and arguments come in any order; -- ends the flags.
Every flag also reads an environment variable, named in its help; a flag
given wins over the variable.
`

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, getenv, stdin, stdout, stderr)
	var help *helpRequest
	var misuse *usageError
	switch {
	case errors.As(err, &help):
		fmt.Fprint(stdout, help.usage)
		return nil
	case errors.As(err, &misuse):
		fmt.Fprint(stderr, misuse.usage)
		return misuse.err
	}
	return err
}

// dispatch runs the command args name (args[0] is the program's name).
func dispatch(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 1 && (args[1] == "help" || isHelpFlag(args[1])) {
		return &helpRequest{usage: usage}
	}
	c, rest, err := findCommand(args[min(1, len(args)):])
	if err != nil {
		return err
	}
	switch name, _, _ := strings.Cut(c.path, " "); name {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "keys":
		return runKeys(ctx, c, rest, getenv, stdout)
	case "graphql":
		return runGraphQL(ctx, c, rest, getenv, stdin, stdout)
	case "migrate":
		return runMigrate(ctx, c, rest, getenv, stdout)
	case "import":
		return runImport(ctx, c, rest, getenv, stdin, stdout, stderr)
	case "evidence":
		return runEvidence(ctx, c, rest, getenv, stdout)
	case "credits":
		return runCredits(ctx, c, rest, getenv, stdout)
	case "users":
		return runUsers(ctx, c, rest, getenv, stdin, stdout)
	case "oauth":
		return runOAuth(ctx, c, rest, getenv, stdout)
	case "payments":
		return runPayments(ctx, c, rest, getenv, stdin, stdout)
	}
	return fmt.Errorf("%s: no such command", c.path) // a command listed without a case here
}
