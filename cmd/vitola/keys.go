package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vitolahq/vitola/access"

	"github.com/vitolahq/vitola/platform"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runKeys(ctx context.Context, c command, args []string, getenv func(string) string, stdout io.Writer) error {
	if c.path == "keys limits set" {
		return runKeyLimits(ctx, c, args, getenv, stdout)
	}
	fs := newFlagSet(c.path)
	var store storeSettings
	store.register(fs, getenv)
	var name string
	var ents, origins stringList
	var publishable bool
	var trustedOnly optionalBool
	switch c.path {
	case "keys create":
		fs.StringVar(&name, "name", "", "what the key is for (required)")
		fs.Var(&ents, "entitlement", "an entitlement to grant, repeatable: api.ai")
		fs.BoolVar(&publishable, "publishable", false, "a publishable key for websites: public routes only, from its --origin list only")
		fs.Var(&origins, "origin", "with --publishable: a website origin (https://host[:port]) the key works from, repeatable")
	case "keys set":
		fs.Var(&trustedOnly, "trusted-documents-only", "true: the key runs on /graphql only trusted documents (vitola graphql documents add); false: any operation")
	}
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	// Check the arguments before touching any store.
	switch {
	case c.path == "keys create" && name == "":
		return c.misuse(fs, "--name is required")
	case c.path == "keys create" && publishable && len(ents) > 0:
		return c.misuse(fs, "a publishable key carries no entitlement")
	case c.path == "keys create" && !publishable && len(origins) > 0:
		return c.misuse(fs, "--origin goes with --publishable")
	case c.path == "keys set" && !trustedOnly.set:
		return c.misuse(fs, "give a setting to change: --trusted-documents-only=true|false")
	}
	keys, st, err := platform.OpenAccess(ctx, store.config())
	if err != nil {
		return err
	}
	defer st.Close()

	switch sub := strings.TrimPrefix(c.path, "keys "); sub {
	case "create":
		create := func() (access.Key, string, error) { return keys.CreateKey(ctx, name, ents) }
		if publishable {
			create = func() (access.Key, string, error) { return keys.CreatePublishableKey(ctx, name, origins) }
		}
		k, plain, err := create()
		if err != nil {
			return fmt.Errorf("keys create: %w", err)
		}
		if k.Publishable {
			fmt.Fprintf(stdout, "Created publishable key %s (%q) for %s. It is shown only now:\n", k.ID, k.Name, strings.Join(k.Origins, ", "))
		} else {
			fmt.Fprintf(stdout, "Created developer key %s (%q, entitlements: %s). It is shown only now:\n", k.ID, k.Name, listOrNone(k.Entitlements))
		}
		fmt.Fprintln(stdout, plain)
	case "list":
		list, err := keys.ListKeys(ctx)
		if err != nil {
			return fmt.Errorf("keys list: %w", err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tKIND\tENTITLEMENTS\tLIMITS\tTRUSTED DOCUMENTS ONLY\tCREATED\tSTATUS")
		revoked := 0
		for _, k := range list {
			status := "active"
			if k.RevokedAt != nil {
				status = "revoked " + k.RevokedAt.Format(time.RFC3339)
				revoked++
			}
			kind := "secret"
			if k.Publishable {
				kind = "publishable " + strings.Join(k.Origins, ",")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s\n", k.ID, k.Name, kind, listOrNone(k.Entitlements), describeLimits(k.Limits), k.TrustedDocumentsOnly, k.CreatedAt.Format(time.RFC3339), status)
		}
		tw.Flush()
		fmt.Fprintf(stdout, "%d keys, %d active\n", len(list), len(list)-revoked)
	case "set":
		k, err := keys.SetTrustedDocumentsOnly(ctx, pos[0], trustedOnly.value)
		if err != nil {
			return fmt.Errorf("keys set: %w", err)
		}
		fmt.Fprintf(stdout, "%s trusted-documents-only=%t\n", k.ID, k.TrustedDocumentsOnly)
	case "revoke":
		if err := keys.RevokeKey(ctx, pos[0]); err != nil {
			return fmt.Errorf("keys revoke: %w", err)
		}
		id, _ := access.KeyID(pos[0]) // revoked by it, so well formed
		fmt.Fprintf(stdout, "revoked %s\n", id)
	}
	return nil
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ",")
}

// limitValue is a --rps or --cost-per-minute value: a whole number of at least
// 1, or "default" (the platform's setting); unset, the key's value stays.
type limitValue struct {
	set bool
	n   int64 // 0: default
}

func (v *limitValue) String() string { return "" }
func (v *limitValue) Set(s string) error {
	if s == "default" {
		*v = limitValue{set: true}
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return access.ErrBadLimit
	}
	*v = limitValue{set: true, n: n}
	return nil
}

// runKeyLimits is `vitola keys limits set KEY --rps N --cost-per-minute N`.
func runKeyLimits(ctx context.Context, c command, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlagSet(c.path)
	var store storeSettings
	store.register(fs, getenv)
	var rps, cost limitValue
	fs.Var(&rps, "rps", "requests per second this key may send, or default (the server's --quota-rps)")
	fs.Var(&cost, "cost-per-minute", "GraphQL cost this key may spend per minute, or default (the server's --quota-cost-per-minute)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	name := pos[0]
	if !rps.set && !cost.set {
		return c.misuse(fs, "give --rps, --cost-per-minute or both")
	}
	keys, st, err := platform.OpenAccess(ctx, store.config())
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := keys.FindKey(ctx, name)
	if err != nil {
		return fmt.Errorf("keys limits set: %w", err)
	}
	l := k.Limits
	if rps.set {
		l.RPS = rps.n
	}
	if cost.set {
		l.CostPerMinute = cost.n
	}
	if err := keys.SetKeyLimits(ctx, k.ID, l); err != nil {
		return fmt.Errorf("keys limits set: %w", err)
	}
	fmt.Fprintf(stdout, "%s: %s\n", k.ID, describeLimits(l))
	return nil
}

// describeLimits shows a key's own limits, "default" where it has none.
func describeLimits(l access.Limits) string {
	show := func(n int64) string {
		if n == 0 {
			return "default"
		}
		return strconv.FormatInt(n, 10)
	}
	return "rps=" + show(l.RPS) + " cost-per-minute=" + show(l.CostPerMinute)
}

// optionalBool is a boolean flag that knows whether it was given.
type optionalBool struct{ set, value bool }

func (b *optionalBool) String() string   { return strconv.FormatBool(b.value) }
func (b *optionalBool) IsBoolFlag() bool { return true }
func (b *optionalBool) Set(v string) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return errors.New("want true or false")
	}
	b.set, b.value = true, x
	return nil
}
