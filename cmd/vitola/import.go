package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/vitolahq/vitola/logging"
	"github.com/vitolahq/vitola/subgraphs/catalog/importer"
	catalogsql "github.com/vitolahq/vitola/subgraphs/catalog/sqlstore"
)

// runImport loads data files into the stores: `vitola import catalog FILE` (FILE
// "-" reads standard input). Nothing is written unless every line is good.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "catalog" {
		return errors.New("import: want `vitola import catalog FILE` (JSON Lines, one cigar per line; see README)")
	}
	fs := newFlagSet("import catalog", stderr)
	var store storeSettings
	store.register(fs, getenv)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("import catalog: give exactly one FILE (or - for standard input)")
	}
	name := fs.Arg(0)
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("import catalog: %w", err)
		}
		defer f.Close()
		in = f
	}
	start := time.Now()
	recs, err := importer.Parse(in)
	if err != nil {
		return fmt.Errorf("import catalog %s: %w (nothing was imported)", name, err)
	}
	st, err := catalogsql.Open(ctx, store.config())
	if err != nil {
		return err
	}
	defer st.Close()
	progress := progressPrinter(stderr, "cigars")
	sum, err := importer.Apply(ctx, st, recs, progress)
	if err != nil {
		return fmt.Errorf("import catalog %s: %w (nothing was imported)", name, err)
	}
	fmt.Fprintf(stdout, "imported %d cigars (%d new, %d new brands) and %d products from %s in %s\n",
		sum.Cigars, sum.NewCigars, sum.NewBrands, sum.Products, name, time.Since(start).Round(time.Millisecond))
	return nil
}

// progressPrinter reports progress on stderr: one updating line on a terminal,
// plain lines otherwise.
func progressPrinter(w io.Writer, what string) func(done, total int) {
	tty := logging.IsTerminal(w)
	return func(done, total int) {
		if tty {
			fmt.Fprintf(w, "\r%d/%d %s", done, total, what)
			if done == total {
				fmt.Fprintln(w)
			}
			return
		}
		fmt.Fprintf(w, "%d/%d %s\n", done, total, what)
	}
}
