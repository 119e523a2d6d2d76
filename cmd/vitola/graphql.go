package main

import (
	"context"
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
func runGraphQL(ctx context.Context, c command, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlagSet(c.path)
	var store storeSettings
	store.register(fs, getenv)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	var raw []byte
	if name := pos[0]; name == "-" {
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
