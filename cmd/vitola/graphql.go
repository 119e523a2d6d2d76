package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/router"
)

// runGraphQL: `vitola graphql documents add MANIFEST.json` registers a
// client's trusted documents (Relay, GraphQL Code Generator or Apollo
// manifest) in the access store. All or nothing; the last line is the count
// added.
func runGraphQL(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[0] != "documents" || args[1] != "add" {
		return errors.New("graphql: want `graphql documents add MANIFEST.json` (- for stdin)")
	}
	fs := newFlagSet("graphql documents add", stderr)
	var store storeSettings
	store.register(fs, getenv)
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("graphql documents add: give exactly one manifest file (- for stdin), after the flags")
	}
	var raw []byte
	var err error
	if name := fs.Arg(0); name == "-" {
		raw, err = io.ReadAll(io.LimitReader(stdin, 64<<20))
	} else {
		raw, err = os.ReadFile(name)
	}
	if err != nil {
		return fmt.Errorf("graphql documents add: %w", err)
	}
	docs, err := router.ParseManifest(raw)
	if err != nil {
		return fmt.Errorf("graphql documents add: %w", err)
	}
	_, st, err := platform.OpenAccess(ctx, store.config())
	if err != nil {
		return err
	}
	defer st.Close()
	added, err := st.AddDocuments(ctx, docs)
	if err != nil {
		return fmt.Errorf("graphql documents add: %w", err)
	}
	fmt.Fprintf(stdout, "added %d trusted documents (%d already there)\n", added, len(docs)-added)
	return nil
}
