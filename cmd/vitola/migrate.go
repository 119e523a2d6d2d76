package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/schema"
)

// runMigrate opens every store, which migrates it under its lock, and closes it.
func runMigrate(ctx context.Context, c command, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlagSet(c.path)
	var store storeSettings
	store.register(fs, getenv)
	if _, err := c.parse(fs, args); err != nil {
		return err
	}
	cfg := store.config()
	_, st, err := platform.OpenAccess(ctx, cfg)
	if err != nil {
		return err
	}
	st.Close()
	done := []string{"access"}
	for _, name := range schema.All {
		sg, err := platform.OpenSubgraph(ctx, name, cfg, platform.SubgraphOptions{Logger: zerolog.Nop()})
		if err != nil {
			return err
		}
		sg.Store.Close()
		done = append(done, name)
	}
	fmt.Fprintf(stdout, "migrated %s (%s)\n", strings.Join(done, ", "), cfg.Backend())
	return nil
}
