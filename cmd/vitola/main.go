// Command vitola runs the Vitola platform and its admin commands.
//
//	vitola serve [flags]              the platform (or one --component of it)
//	vitola keys create|list|revoke|set developer keys
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
	"flag"
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
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "vitola:", err)
		}
		os.Exit(1)
	}
}

// usage is the command list `vitola help` prints; serve's components come
// from the list --component checks, so the two cannot disagree.
var usage = `Usage: vitola <command> [flags]

Commands:
  serve     run the platform: every component in one process (default), or one
            --component (` + strings.Join(components, ", ") + `)
  keys      developer keys: keys create --name NAME [--entitlement api.ai],
            keys list, keys revoke ID,
            keys set ID --trusted-documents-only=true|false
  graphql   graphql documents add MANIFEST.json: register trusted documents
            (Relay, GraphQL Code Generator or Apollo manifest; - for stdin)
  migrate   create or upgrade every store's schema, then exit
  import    import catalog|venues|events|sessions FILE: load JSON Lines
            (- for stdin; formats in README); all or nothing
  evidence  evidence add --cigar CIGAR_ID FILE...: reference photos of a
            cigar's band for recognition (--flat for scans); all or nothing
  credits   credits add --key KEY --amount N: grant a key credits (paid AI
            routes); credits balance --key KEY
  users     users create --email E --password P|- --display-name N: an account
  oauth     oauth clients create --name N --redirect-uri URI [--public],
            oauth token --user EMAIL --client ID --scope "…", oauth keys rotate
  payments  payments clients|resource-types|merchants|offers …: the payments
            API's service clients, what they sell and who is paid

Run 'vitola <command> -h' for a command's flags. Every flag also reads an
environment variable, named in its help; a flag given wins over the variable.
`

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[1], args[2:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "keys":
		return runKeys(ctx, rest, getenv, stdout, stderr)
	case "graphql":
		return runGraphQL(ctx, rest, getenv, stdin, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, getenv, stdout, stderr)
	case "import":
		return runImport(ctx, rest, getenv, stdin, stdout, stderr)
	case "evidence":
		return runEvidence(ctx, rest, getenv, stdout, stderr)
	case "credits":
		return runCredits(ctx, rest, getenv, stdout, stderr)
	case "users":
		return runUsers(ctx, rest, getenv, stdin, stdout, stderr)
	case "oauth":
		return runOAuth(ctx, rest, getenv, stdout, stderr)
	case "payments":
		return runPayments(ctx, rest, getenv, stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}
