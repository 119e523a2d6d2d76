package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vitolahq/vitola/internal/idempotency"
	"github.com/vitolahq/vitola/internal/timestamp"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

// paymentsSettings are the flags every payments command takes.
type paymentsSettings struct {
	store       storeSettings
	InternalKey string
	KEKs        string
}

func (p *paymentsSettings) register(fs *flag.FlagSet, getenv func(string) string) {
	p.store.register(fs, getenv)
	secretVar(fs, &p.InternalKey, "internal-key", "VITOLA_INTERNAL_KEY", getenv, "the internal key (the default KEK derives from it) (env VITOLA_INTERNAL_KEY)")
	secretVar(fs, &p.KEKs, "payments-keks", "VITOLA_PAYMENTS_KEKS", getenv, "key-encryption keys, as serve takes them (env VITOLA_PAYMENTS_KEKS)")
}

// open opens the payments service as serve would.
func (p *paymentsSettings) open(ctx context.Context) (*payments.Service, io.Closer, error) {
	var key []byte
	if p.KEKs == "" {
		var err error
		if key, err = internalKey(p.InternalKey, p.store, false); err != nil {
			return nil, nil, fmt.Errorf("%w (or set --payments-keks)", err)
		}
	}
	svc, st, err := platform.OpenPayments(ctx, p.store.config(), platform.PaymentsOptions{KEKs: p.KEKs}, key)
	if err != nil {
		return nil, nil, err
	}
	return svc, st, nil
}

func runPayments(ctx context.Context, c command, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	cmd := strings.TrimPrefix(c.path, "payments ")
	fs := newFlagSet(c.path)
	var ps paymentsSettings
	ps.register(fs, getenv)
	var (
		name, keyRef, callback, description, gateway, credsFile, currency, merchant, resourceType, idemKey string
		returns, origins, types, scopes, assertionKeys, denied                                             stringList
		requireAssertion                                                                                   bool
		quantity, price                                                                                    int64
	)
	switch cmd {
	case "clients create":
		fs.StringVar(&name, "name", "", "what the client is (required)")
		fs.StringVar(&keyRef, "developer-key", "", "bind the client to a developer key (its ID key_… or the key): it may sell that key AI credits")
		fs.StringVar(&callback, "callback-url", "", "where signed fulfillment callbacks go (https; http on localhost)")
		fs.Var(&returns, "return-url", "a URL a hosted session may return the browser to, repeatable (required)")
		fs.Var(&origins, "origin", "a website origin that may embed the hosted checkout in an iframe, repeatable")
		fs.Var(&types, "resource-type", "a resource type the client sells, repeatable (default ai_credits)")
		fs.Var(&scopes, "scope", "merchant_accounts:read or merchant_accounts:write, repeatable")
		fs.BoolVar(&requireAssertion, "require-assertion", false, "billing-account routes need an assertion signed with an --assertion-key")
		fs.Var(&assertionKeys, "assertion-key", "a PEM public key file (Ed25519, ECDSA P-256, RSA ≥ 2048) that signs assertions, repeatable")
		fs.Var(&denied, "deny", "an action the client may not take, repeatable: "+strings.Join(payments.Actions, ", "))
	case "resource-types add":
		fs.StringVar(&description, "description", "", "what the units are")
	case "merchants create":
		fs.StringVar(&name, "name", "", "the merchant account's name (required)")
		fs.StringVar(&gateway, "gateway", "", "sandbox or stripe (required)")
	case "merchants set-credentials":
		fs.StringVar(&credsFile, "credentials-file", "", "a file holding the gateway's credentials as a JSON object, - for standard input (required)")
	case "offers create":
		fs.StringVar(&resourceType, "resource-type", payments.AICredits, "what the offer sells")
		fs.StringVar(&name, "name", "", "the offer's name (required)")
		fs.Int64Var(&quantity, "quantity", 0, "units sold (required)")
		fs.Int64Var(&price, "price", 0, "the price in the currency's minor units, such as 500 for USD 5.00 (required)")
		fs.StringVar(&currency, "currency", "USD", "ISO 4217 currency")
		fs.StringVar(&merchant, "merchant", "", "the platform merchant account paid (required)")
		fs.StringVar(&idemKey, "idempotency-key", "", "names this creation: running the command again with it creates nothing more (required)")
	case "offers list":
		fs.StringVar(&resourceType, "resource-type", payments.AICredits, "the resource type")
	case "purchases refund":
		fs.StringVar(&description, "note", "refunded by an operator", "why, kept in the ledger")
	case "events list":
		fs.StringVar(&name, "client", "", "only this client's events")
		fs.StringVar(&description, "state", "", "only events in this state: pending, delivered or failed")
		fs.Int64Var(&quantity, "limit", 50, "at most this many, newest first")
	}
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	var arg string // the one ID or name the command takes, if any
	if len(pos) > 0 {
		arg = pos[0]
	}
	// Read what the command needs from files before opening any store.
	var keyPEMs []string
	for _, f := range assertionKeys {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("payments clients create: --assertion-key: %w", err)
		}
		keyPEMs = append(keyPEMs, string(b))
	}
	var creds []byte
	if cmd == "merchants set-credentials" {
		if creds, err = readFileOrStdin(credsFile, stdin); err != nil {
			return fmt.Errorf("payments merchants set-credentials: --credentials-file: %w", err)
		}
	}
	svc, closer, err := ps.open(ctx)
	if err != nil {
		return err
	}
	defer closer.Close()
	switch cmd {
	case "clients create":
		keyID := ""
		if keyRef != "" {
			keys, st, err := platform.OpenAccess(ctx, ps.store.config())
			if err != nil {
				return err
			}
			k, err := keys.FindKey(ctx, keyRef)
			st.Close()
			if err != nil {
				return fmt.Errorf("payments clients create: --developer-key: %w", err)
			}
			if k.Publishable || k.RevokedAt != nil {
				return fmt.Errorf("payments clients create: --developer-key %s is publishable or revoked: bind an active secret key", k.ID)
			}
			keyID = k.ID
		}
		c, secret, signing, err := svc.CreateClient(ctx, payments.NewClient{Name: name, KeyID: keyID, CallbackURL: callback, ReturnURLs: returns, Origins: origins,
			ResourceTypes: types, Scopes: scopes, RequireAssertion: requireAssertion, AssertionKeys: keyPEMs, Denied: denied})
		if err != nil {
			return fmt.Errorf("payments clients create: %w", err)
		}
		fmt.Fprintf(stdout, "created service client %s (%s); its secret and its callback signing secret are shown this once:\n", c.ID, c.Name)
		fmt.Fprintf(stdout, "%s %s %s\n", c.ID, secret, signing)
	case "clients list":
		cs, err := svc.Store.ListClients(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tKEY\tSELLS\tSTATE\tCREATED")
		active := 0
		for _, c := range cs {
			state := "active"
			if c.RevokedAt != nil {
				state = "revoked " + timestamp.Format(*c.RevokedAt)
			} else {
				active++
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, orDash(c.KeyID), strings.Join(c.ResourceTypes, ","), state, timestamp.Format(c.CreatedAt))
		}
		tw.Flush()
		fmt.Fprintf(stdout, "%d clients, %d active\n", len(cs), active)
	case "clients rotate-secret":
		secret, until, err := svc.RotateClientSecret(ctx, arg)
		if err != nil {
			return fmt.Errorf("payments clients rotate-secret: %w", err)
		}
		fmt.Fprintf(stdout, "new secret of %s (the previous one works until %s); shown this once:\n%s\n", arg, timestamp.Format(until), secret)
	case "clients rotate-signing-secret":
		secret, until, err := svc.RotateSigningSecret(ctx, arg)
		if err != nil {
			return fmt.Errorf("payments clients rotate-signing-secret: %w", err)
		}
		fmt.Fprintf(stdout, "new callback signing secret of %s (the previous one signs beside it until %s); shown this once:\n%s\n", arg, timestamp.Format(until), secret)
	case "purchases refund":
		p, err := svc.RefundPurchase(ctx, arg, description)
		if err != nil {
			return fmt.Errorf("payments purchases refund: %w", err)
		}
		fmt.Fprintf(stdout, "refunded %d %s (minor units) and took back %d %s\n%s %s\n", p.Amount, p.Currency, p.Quantity, p.ResourceType, p.ID, p.State)
	case "clients callbacks-on":
		if err := svc.Store.SetCallbacksOn(ctx, arg, true, time.Now()); err != nil {
			return fmt.Errorf("payments clients callbacks-on: %w", err)
		}
		fmt.Fprintf(stdout, "callbacks on for %s\n", arg)
	case "events list":
		es, err := svc.Store.Events(ctx, name, description, int(max(1, min(quantity, 1000))))
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tCLIENT\tTYPE\tSUBJECT\tSTATE\tATTEMPTS\tCREATED\tLAST ERROR")
		for _, e := range es {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.ID, e.ClientID, e.Type, e.SubjectID, e.State, e.Attempts, timestamp.Format(e.CreatedAt), orDash(e.LastError))
		}
		tw.Flush()
		fmt.Fprintf(stdout, "%d events\n", len(es))
	case "events attempts":
		as, err := svc.Store.Attempts(ctx, arg)
		if err != nil {
			return err
		}
		for _, a := range as {
			status := "no answer"
			if a.Status != 0 {
				status = fmt.Sprint(a.Status)
			}
			fmt.Fprintf(stdout, "%d\t%s\t%s\t%s\t%s\n", a.Attempt, timestamp.Format(a.StartedAt), a.Duration.Round(time.Millisecond), status, orDash(a.Error))
		}
		fmt.Fprintf(stdout, "%d attempts\n", len(as))
	case "events retry", "events replay":
		redo := svc.Store.RetryEvent
		if cmd == "events replay" {
			redo = svc.Store.ReplayEvent
		}
		if err := redo(ctx, arg, time.Now()); err != nil {
			return fmt.Errorf("payments %s: %w", cmd, err)
		}
		fmt.Fprintf(stdout, "%s will be sent now\n", arg)
	case "clients revoke":
		if err := svc.RevokeClient(ctx, arg); err != nil {
			return fmt.Errorf("payments clients revoke: %w", err)
		}
		fmt.Fprintf(stdout, "revoked %s\n", arg)
	case "resource-types add":
		if !payments.ValidResourceTypeName(arg) {
			return fmt.Errorf("payments resource-types add: %q: use 2 to 63 lower-case letters, digits and '_', starting with a letter", arg)
		}
		if err := svc.Store.AddResourceType(ctx, payments.ResourceType{Name: arg, Description: description, CreatedAt: time.Now()}); err != nil {
			return fmt.Errorf("payments resource-types add: %w", err)
		}
		fmt.Fprintf(stdout, "added resource type %s\n", arg)
	case "resource-types list":
		ts, err := svc.Store.ResourceTypes(ctx)
		if err != nil {
			return err
		}
		for _, t := range ts {
			fmt.Fprintf(stdout, "%s\t%s\n", t.Name, t.Description)
		}
		fmt.Fprintf(stdout, "%d resource types\n", len(ts))
	case "merchants create":
		m, err := svc.CreateMerchant(ctx, "", payments.NewMerchant{Name: name, Gateway: gateway})
		if err != nil {
			return fmt.Errorf("payments merchants create: %w", err)
		}
		fmt.Fprintf(stdout, "created merchant account (no credentials yet: payments merchants set-credentials %s --credentials-file FILE)\n%s\n", m.ID, m.ID)
	case "merchants set-credentials":
		m, err := svc.SetMerchantCredentials(ctx, "", arg, creds)
		if err != nil {
			return fmt.Errorf("payments merchants set-credentials: %w", err)
		}
		fmt.Fprintf(stdout, "%s %s\n", m.ID, m.Status)
	case "merchants revoke-credentials":
		m, err := svc.RevokeMerchantCredentials(ctx, "", arg)
		if err != nil {
			return fmt.Errorf("payments merchants revoke-credentials: %w", err)
		}
		fmt.Fprintf(stdout, "%s %s\n", m.ID, m.Status)
	case "merchants list":
		ms, err := svc.Store.Merchants(ctx, "")
		if err != nil {
			return err
		}
		for _, m := range ms {
			fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\n", m.ID, m.Gateway, m.Status, m.Name)
		}
		fmt.Fprintf(stdout, "%d merchant accounts\n", len(ms))
	case "merchants rewrap":
		n, err := svc.RewrapAll(ctx)
		if err != nil {
			return fmt.Errorf("payments merchants rewrap: %w", err)
		}
		fmt.Fprintf(stdout, "rewrapped %d records under %s\n", n, svc.Keys.Current())
	case "offers create":
		return createPlatformOffer(ctx, ps, svc, payments.NewOffer{ResourceType: resourceType, Name: name, Quantity: quantity, Price: price,
			Currency: currency, MerchantID: merchant}, idemKey, stdout)
	case "offers list":
		os, err := svc.Store.ActiveOffers(ctx, "", resourceType)
		if err != nil {
			return err
		}
		for _, o := range os {
			fmt.Fprintf(stdout, "%s\t%d %s\t%d %s\t%s\n", o.ID, o.Quantity, o.ResourceType, o.Price, o.Currency, o.Name)
		}
		fmt.Fprintf(stdout, "%d offers\n", len(os))
	}
	return nil
}

// operatorScope scopes the idempotency keys of operators' commands.
const operatorScope = "operator"

// createPlatformOffer creates a platform offer once per idempotency key: a
// command run again with the key prints the offer it created.
func createPlatformOffer(ctx context.Context, ps paymentsSettings, svc *payments.Service, n payments.NewOffer, key string, stdout io.Writer) error {
	if !idempotency.ValidKey(key) {
		return errors.New("payments offers create: --idempotency-key is required: " + idempotency.ErrInvalid.Error())
	}
	_, st, err := platform.OpenAccess(ctx, ps.store.config())
	if err != nil {
		return err
	}
	defer st.Close()
	idem := idempotency.New(st.Idempotency())
	body, _ := json.Marshal(n)
	d, err := idem.Begin(ctx, operatorScope, key, idempotency.RequestHash("CLI", "payments offers create", body))
	switch {
	case err != nil:
		return err
	case d.Outcome == idempotency.Replay:
		fmt.Fprintf(stdout, "the offer of this idempotency key exists already\n%s\n", d.Response.Body)
		return nil
	case d.Outcome == idempotency.Mismatch:
		return errors.New("payments offers create: this --idempotency-key created another offer: use a new key for a new offer")
	case d.Outcome == idempotency.InFlight:
		return errors.New("payments offers create: another command with this --idempotency-key is running")
	}
	o, err := svc.CreateOffer(ctx, nil, n)
	if err != nil {
		idem.Release(ctx, d.Claim)
		return fmt.Errorf("payments offers create: %w", err)
	}
	if err := idem.Finish(ctx, d.Claim, idempotency.Response{Status: 201, Body: []byte(o.ID)}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created offer: %d %s for %d %s (minor units)\n%s\n", o.Quantity, o.ResourceType, o.Price, o.Currency, o.ID)
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// readFileOrStdin reads a named file, or standard input for "-".
func readFileOrStdin(name string, stdin io.Reader) ([]byte, error) {
	switch name {
	case "":
		return nil, errors.New("give a file, or - for standard input")
	case "-":
		return io.ReadAll(io.LimitReader(stdin, 1<<20))
	}
	return os.ReadFile(name)
}
