package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/vitolahq/vitola/platform"
	paymentssql "github.com/vitolahq/vitola/subgraphs/payments/sqlstore"
)

// runCredits grants and shows a developer key's credits until credits can be
// bought: `vitola credits add --key KEY --amount N`, `vitola credits balance --key KEY`.
// KEY is the key's ID (key_…) or the key itself.
func runCredits(ctx context.Context, c command, args []string, getenv func(string) string, stdout io.Writer) error {
	sub := strings.TrimPrefix(c.path, "credits ")
	fs := newFlagSet(c.path)
	var store storeSettings
	store.register(fs, getenv)
	key := fs.String("key", "", "the developer key: its ID (key_…) or the key itself (required)")
	amount := fs.String("amount", "", "with add: how many credits to grant, a whole number from 1 to 1000000000")
	note := fs.String("note", "granted by an operator", "with add: why, kept in the ledger")
	if _, err := c.parse(fs, args); err != nil {
		return err
	}
	var n int64
	switch {
	case *key == "":
		return c.misuse(fs, "--key is required (the key's ID, key_…, or the key itself)")
	case sub == "add":
		var err error
		if n, err = strconv.ParseInt(*amount, 10, 64); err != nil || n < 1 {
			return c.misuse(fs, "--amount %q: want a whole number of credits from 1 to 1000000000", *amount)
		}
	case *amount != "":
		return c.misuse(fs, "--amount goes with add")
	}
	keys, st, err := platform.OpenAccess(ctx, store.config())
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := keys.FindKey(ctx, *key)
	if err != nil {
		return fmt.Errorf("credits %s: %w", sub, err)
	}
	if k.Publishable {
		return fmt.Errorf("credits %s: %s is a publishable key, which never pays for anything", sub, k.ID)
	}
	ledger, err := paymentssql.Open(ctx, store.config())
	if err != nil {
		return err
	}
	defer ledger.Close()
	if sub == "balance" {
		a, err := ledger.Account(ctx, k.ID)
		if err != nil {
			return fmt.Errorf("credits balance: %w", err)
		}
		fmt.Fprintf(stdout, "%s has %d credits\n", k.ID, a.Credits())
		return nil
	}
	a, err := ledger.Grant(ctx, k.ID, n, *note)
	if err != nil {
		return fmt.Errorf("credits add: %w", err)
	}
	fmt.Fprintf(stdout, "granted %d credits to %s: %d credits now\n", n, k.ID, a.Credits())
	return nil
}
