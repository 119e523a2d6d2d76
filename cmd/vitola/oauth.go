package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vitolahq/vitola/subgraphs/users"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

// runOAuth administers the authorization server:
//
//	vitola oauth clients create --name N --redirect-uri URI [--redirect-uri …] [--public]
//	vitola oauth token --user EMAIL --client CLIENT_ID --scope "profile:read email:read"
//	vitola oauth keys rotate
func runOAuth(ctx context.Context, c command, args []string, getenv func(string) string, stdout io.Writer) error {
	sub := strings.TrimPrefix(c.path, "oauth ")
	fs := newFlagSet(c.path)
	var store storeSettings
	store.register(fs, getenv)
	var api publicSettings
	api.register(fs, getenv)
	var name, user, client, scope string
	var redirects stringList
	var public bool
	switch sub {
	case "clients create":
		fs.StringVar(&name, "name", "", "the application's name (required)")
		fs.Var(&redirects, "redirect-uri", "an exact redirect URI, repeatable (required)")
		fs.BoolVar(&public, "public", false, "a public client (no secret; PKCE only), such as a mobile or browser app")
	case "token":
		fs.StringVar(&user, "user", "", "the user's email (required)")
		fs.StringVar(&client, "client", "", "the client ID the token is for (required)")
		fs.StringVar(&scope, "scope", "", "space-separated scopes (required)")
	}
	if _, err := c.parse(fs, args); err != nil {
		return err
	}
	switch {
	case sub == "clients create" && (name == "" || len(redirects) == 0):
		return c.misuse(fs, "--name and at least one --redirect-uri are required")
	case sub == "token" && (user == "" || client == "" || scope == ""):
		return c.misuse(fs, "--user, --client and --scope are required")
	}
	st, err := userssql.Open(ctx, store.config())
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()

	switch sub {
	case "clients create":
		c, secret, err := oauth.NewClient(name, redirects, public, now)
		if err != nil {
			return fmt.Errorf("oauth clients create: %w", err)
		}
		if err := st.CreateClient(ctx, c); err != nil {
			return err
		}
		if public {
			fmt.Fprintf(stdout, "Created public client %q. Its ID:\n%s\n", c.Name, c.ID)
			return nil
		}
		fmt.Fprintf(stdout, "Created confidential client %q. Its ID and secret (the secret is shown only now):\n%s %s\n", c.Name, c.ID, secret)
	case "token":
		scopes, err := oauth.ParseScope(scope)
		if err != nil {
			return fmt.Errorf("oauth token: %w", err)
		}
		u, err := st.UserByEmail(ctx, user)
		if errors.Is(err, users.ErrNotFound) {
			return fmt.Errorf("oauth token: no user with email %q", user)
		} else if err != nil {
			return err
		}
		if _, err := st.Client(ctx, client); errors.Is(err, oauth.ErrNotFound) {
			return fmt.Errorf("oauth token: no client %q", client)
		} else if err != nil {
			return err
		}
		keys, err := oauth.LiveKeys(ctx, st, now)
		if err != nil {
			return err
		}
		tok, _, err := keys.Sign(api.url(), u.ID, client, scopes, now)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Access token for %s (%s), valid %s:\n%s\n", u.Email, strings.Join(scopes, " "), oauth.AccessTokenTTL, tok)
	case "keys rotate":
		k, err := oauth.Rotate(ctx, st, now)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "New signing key; the others keep verifying for %s:\n%s\n", oauth.AccessTokenTTL, k.KID)
	}
	return nil
}
