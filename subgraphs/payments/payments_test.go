package payments_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vitolahq/vitola/internal/envelope"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/payments/gateway/sandbox"
	"github.com/vitolahq/vitola/subgraphs/payments/sqlstore"
)

const audience = "https://pay.vitola.test/api/v1"

// clock is the tests' injectable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

type fixture struct {
	svc   *payments.Service
	st    *sqlstore.Store
	clock *clock
	sbx   *sandbox.Gateway
}

// open makes a payments service on each backend, with the sandbox gateway.
func each(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
			st := sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations), c.now)
			keys := &envelope.Keyring{}
			keys.Add("k1", make([]byte, 32))
			sbx := &sandbox.Gateway{DB: st.DB(), Now: c.now}
			svc := &payments.Service{Store: st, Keys: keys, Audience: audience, Now: c.now, Gateways: map[string]payments.Gateway{sandbox.Name: sbx}}
			fn(t, &fixture{svc: svc, st: st, clock: c, sbx: sbx})
		})
	}
}

// must takes a call's value and error: must(f())(t) fails t on the error.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// code returns a refusal's code ("" for other errors).
func code(err error) string {
	var c *payments.CodedError
	if errors.As(err, &c) {
		return c.Code
	}
	return ""
}

// signer is a client backend's assertion key.
type signer struct {
	priv ed25519.PrivateKey
	pem  string
}

func newSigner(t *testing.T) signer {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(pub)
	return signer{priv: priv, pem: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}
}

func (s signer) sign(t *testing.T, claims jwt.RegisteredClaims) string {
	t.Helper()
	return must(jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims).SignedString(s.priv))(t)
}

func TestBillingAccountAssertions(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		mine, other := newSigner(t), newSigner(t)
		c, _ := must2(t)(f.svc.CreateClient(ctx, payments.NewClient{Name: "shop", ReturnURLs: []string{"https://shop.example/paid"},
			RequireAssertion: true, AssertionKeys: []string{mine.pem}}))
		now := f.clock.t
		valid := func(jti string) jwt.RegisteredClaims {
			return jwt.RegisteredClaims{Issuer: c.ID, Subject: "customer-1", Audience: jwt.ClaimStrings{audience}, ID: jti,
				IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(2 * time.Minute))}
		}
		resolve := func(assertion string) error {
			_, err := f.svc.ResolveAccount(ctx, c, payments.AccountRequest{Reference: "customer-1", Assertion: assertion})
			return err
		}
		if err := resolve(mine.sign(t, valid("a-1"))); err != nil {
			t.Fatalf("a valid assertion: %v", err)
		}
		tests := []struct {
			name      string
			assertion string
			says      string
		}{
			{"missing", "", "must send an assertion"},
			{"replayed", mine.sign(t, valid("a-1")), "used before"},
			{"another key", other.sign(t, valid("a-2")), "not a JWT signed with this client's registered key"},
			{"expired", mine.sign(t, func() jwt.RegisteredClaims {
				c := valid("a-3")
				c.IssuedAt, c.ExpiresAt = jwt.NewNumericDate(now.Add(-10*time.Minute)), jwt.NewNumericDate(now.Add(-8*time.Minute))
				return c
			}()), "expired"},
			{"lives too long", mine.sign(t, func() jwt.RegisteredClaims {
				c := valid("a-4")
				c.ExpiresAt = jwt.NewNumericDate(now.Add(time.Hour))
				return c
			}()), "at most"},
			{"another account", mine.sign(t, func() jwt.RegisteredClaims { c := valid("a-5"); c.Subject = "customer-2"; return c }()), "sub must be"},
			{"another audience", mine.sign(t, func() jwt.RegisteredClaims {
				c := valid("a-6")
				c.Audience = jwt.ClaimStrings{"https://elsewhere.example/api/v1"}
				return c
			}()), "aud must be"},
			{"another client's ID", mine.sign(t, func() jwt.RegisteredClaims { c := valid("a-7"); c.Issuer = "pcl_someoneelse0000"; return c }()), "iss must be"},
			{"no jti", mine.sign(t, valid("")), "jti"},
			{"not a JWT", "not.a.jwt", "not a JWT"},
		}
		for _, tt := range tests {
			err := resolve(tt.assertion)
			if code(err) != payments.CodeAssertionRequired || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("%s: %v, want billing_account_assertion_required saying %q", tt.name, err, tt.says)
			}
		}
		// A spent jti is forgotten only after its assertion could no longer
		// be used anyway.
		f.clock.t = now.Add(10 * time.Minute)
		if err := resolve(mine.sign(t, valid("a-1"))); code(err) != payments.CodeAssertionRequired {
			t.Fatalf("an old assertion after its jti was forgotten: %v", err)
		}
	})
}

// must2 unwraps a function's two results and its error.
func must2(t *testing.T) func(*payments.Client, string, string, error) (*payments.Client, string) {
	return func(c *payments.Client, s, _ string, err error) (*payments.Client, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return c, s
	}
}

// shop is a client with a ready merchant account, an offer of its own
// resource type, and a platform offer of AI credits.
type shop struct {
	client      *payments.Client
	merchant    *payments.MerchantAccount
	offer       *payments.Offer
	aiOffer     *payments.Offer
	account     *payments.Account
	platformMer *payments.MerchantAccount
}

func newShop(t *testing.T, f *fixture, keyID string) shop {
	t.Helper()
	ctx := context.Background()
	if err := f.st.AddResourceType(ctx, payments.ResourceType{Name: "passes", CreatedAt: f.clock.t}); err != nil && !errors.Is(err, payments.ErrConflict) {
		t.Fatal(err)
	}
	c, _ := must2(t)(f.svc.CreateClient(ctx, payments.NewClient{Name: "shop", KeyID: keyID, ReturnURLs: []string{"https://shop.example/paid"},
		Origins: []string{"https://shop.example"}, ResourceTypes: []string{payments.AICredits, "passes"}, Scopes: []string{payments.ScopeMerchantWrite}}))
	m := must(f.svc.CreateMerchant(ctx, c.ID, payments.NewMerchant{Name: "shop", Gateway: sandbox.Name}))(t)
	if _, err := f.svc.CreateOffer(ctx, c, payments.NewOffer{ResourceType: "passes", Name: "5 passes", Quantity: 5, Price: 1000, Currency: "usd", MerchantID: m.ID}); code(err) != payments.CodeMerchantNotReady {
		t.Fatalf("an offer on a merchant without credentials: %v", err)
	}
	m = must(f.svc.SetMerchantCredentials(ctx, c.ID, m.ID, []byte(`{"apiKey":"sbx-shop"}`)))(t)
	o := must(f.svc.CreateOffer(ctx, c, payments.NewOffer{ResourceType: "passes", Name: "5 passes", Quantity: 5, Price: 1000, Currency: "usd", MerchantID: m.ID}))(t)
	pm := must(f.svc.CreateMerchant(ctx, "", payments.NewMerchant{Name: "platform", Gateway: sandbox.Name}))(t)
	pm = must(f.svc.SetMerchantCredentials(ctx, "", pm.ID, []byte(`{"apiKey":"sbx-platform"}`)))(t)
	ai := must(f.svc.CreateOffer(ctx, nil, payments.NewOffer{ResourceType: payments.AICredits, Name: "100", Quantity: 100, Price: 500, Currency: "USD", MerchantID: pm.ID}))(t)
	a := must(f.svc.ResolveAccount(ctx, c, payments.AccountRequest{Reference: "customer-1"}))(t)
	return shop{client: c, merchant: m, offer: o, aiOffer: ai, account: a, platformMer: pm}
}

func TestSessionRules(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := newShop(t, f, "")
		base := payments.NewSession{AccountID: s.account.ID, OfferID: s.offer.ID, ReturnURL: "https://shop.example/paid?order=7"}
		with := func(edit func(*payments.NewSession)) payments.NewSession { n := base; edit(&n); return n }
		tests := []struct {
			name string
			in   payments.NewSession
			code string
		}{
			{"return URL of another host", with(func(n *payments.NewSession) { n.ReturnURL = "https://evil.example/paid" }), payments.CodeReturnNotAllowed},
			{"return URL of another path", with(func(n *payments.NewSession) { n.ReturnURL = "https://shop.example/other" }), payments.CodeReturnNotAllowed},
			{"return URL over http", with(func(n *payments.NewSession) { n.ReturnURL = "http://shop.example/paid" }), payments.CodeReturnNotAllowed},
			{"cancel URL not registered", with(func(n *payments.NewSession) { n.CancelURL = "https://shop.example/cancel" }), payments.CodeReturnNotAllowed},
			{"parent origin not registered", with(func(n *payments.NewSession) { n.ParentOrigin = "https://evil.example" }), payments.CodeOriginNotAllowed},
			{"another client's account", with(func(n *payments.NewSession) { n.AccountID = "acc_0000000000000000" }), payments.CodeAccountNotFound},
			{"unknown offer", with(func(n *payments.NewSession) { n.OfferID = "off_0000000000000000" }), payments.CodeOfferNotFound},
		}
		for _, tt := range tests {
			if _, err := f.svc.CreateSession(ctx, s.client, tt.in); code(err) != tt.code {
				t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
			}
		}
		for _, ttl := range []time.Duration{time.Second, 25 * time.Hour} {
			if _, err := f.svc.CreateSession(ctx, s.client, with(func(n *payments.NewSession) { n.TTL = ttl })); !errors.Is(err, payments.ErrInvalid) {
				t.Errorf("lifetime %s: %v", ttl, err)
			}
		}
		created, err := f.svc.CreateSession(ctx, s.client, with(func(n *payments.NewSession) { n.ParentOrigin = "https://SHOP.example/" }))
		if err != nil {
			t.Fatal(err)
		}
		sess, p, token := created.Session, created.Purchase, created.Token
		if len(token) < 43 || strings.Contains(sess.TokenHash, token) || sess.ParentOrigin != "https://shop.example" ||
			sess.ExpiresAt != f.clock.t.Add(payments.DefaultSessionTTL) || p.Amount != 1000 || p.Currency != "USD" || p.State != payments.PurchaseOpen {
			t.Fatalf("session %+v purchase %+v", sess, p)
		}
		// Another client sees none of it.
		other, _ := must2(t)(f.svc.CreateClient(ctx, payments.NewClient{Name: "other", ReturnURLs: []string{"https://other.example/"}}))
		if _, _, err := f.svc.SessionStatus(ctx, other, sess.ID); code(err) != payments.CodeSessionNotFound {
			t.Fatalf("another client's session: %v", err)
		}
		if _, err := f.svc.SetMerchantCredentials(ctx, other.ID, s.merchant.ID, []byte(`{"apiKey":"x"}`)); code(err) != payments.CodeMerchantNotFound {
			t.Fatalf("another client's merchant account: %v", err)
		}
		// The session expires at its time, before the sweeper writes it.
		f.clock.t = sess.ExpiresAt
		got, _, err := f.svc.SessionStatus(ctx, s.client, sess.ID)
		if err != nil || got.StateAt(f.clock.t) != payments.SessionExpired {
			t.Fatalf("at expiry: %+v %v", got, err)
		}
		// Revoked credentials stop new sessions.
		must(f.svc.RevokeMerchantCredentials(ctx, s.client.ID, s.merchant.ID))(t)
		if _, err := f.svc.CreateSession(ctx, s.client, base); code(err) != payments.CodeMerchantNotReady {
			t.Fatalf("a session after the credentials were revoked: %v", err)
		}
		// Clients never sell ai_credits through offers of their own.
		if _, err := f.svc.CreateOffer(ctx, s.client, payments.NewOffer{ResourceType: payments.AICredits, Name: "x", Quantity: 1, Price: 1, Currency: "USD", MerchantID: s.merchant.ID}); code(err) != payments.CodeActionNotAllowed {
			t.Fatalf("a client's ai_credits offer: %v", err)
		}
	})
}

func TestPolicies(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		c, secret := must2(t)(f.svc.CreateClient(ctx, payments.NewClient{Name: "limited", ReturnURLs: []string{"https://x.example/"},
			Denied: []string{payments.ActionCreateSession}, Scopes: []string{payments.ScopeMerchantRead}}))
		if _, err := f.svc.ActiveClient(ctx, c.ID, payments.ActionCreateSession); code(err) != payments.CodeActionNotAllowed {
			t.Fatalf("a denied action: %v", err)
		}
		if _, err := f.svc.ActiveClient(ctx, c.ID, payments.ActionCreateMerchant); code(err) != payments.CodeActionNotAllowed {
			t.Fatalf("an action without its scope: %v", err)
		}
		if _, err := f.svc.ActiveClient(ctx, c.ID, payments.ActionListMerchants); err != nil {
			t.Fatalf("an allowed action: %v", err)
		}
		// Secrets: the current one, the previous one for its grace period.
		if _, err := f.svc.Authenticate(ctx, c.ID, secret); err != nil {
			t.Fatal(err)
		}
		next, _, err := f.svc.RotateClientSecret(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{secret, next} {
			if _, err := f.svc.Authenticate(ctx, c.ID, s); err != nil {
				t.Fatalf("during the grace period: %v", err)
			}
		}
		f.clock.t = f.clock.t.Add(payments.SecretGrace)
		if _, err := f.svc.Authenticate(ctx, c.ID, secret); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("the old secret after the grace period: %v", err)
		}
		for _, bad := range []struct{ id, secret string }{{c.ID, next + "x"}, {c.ID, ""}, {"pcl_0000000000000000", next}, {"nonsense", next}} {
			if _, err := f.svc.Authenticate(ctx, bad.id, bad.secret); !errors.Is(err, payments.ErrNotFound) {
				t.Fatalf("%+v: %v", bad, err)
			}
		}
		if err := f.svc.RevokeClient(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Authenticate(ctx, c.ID, next); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("a revoked client: %v", err)
		}
		if _, err := f.svc.ActiveClient(ctx, c.ID, payments.ActionListOffers); code(err) != payments.CodeClientNotActive {
			t.Fatalf("a revoked client acting: %v", err)
		}
	})
}

// A replica acts on a client's row for ClientCacheTTL at most: a client
// revoked elsewhere (the CLI, another replica) is refused within it, and the
// replica that revoked it refuses it at once.
func TestRevocationReachesEveryReplica(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		c, secret := must2(t)(f.svc.CreateClient(ctx, payments.NewClient{Name: "revoked soon", ReturnURLs: []string{"https://x.example/"}}))
		other := &payments.Service{Store: f.st, Keys: f.svc.Keys, Audience: audience, Now: f.clock.now}
		for _, s := range []*payments.Service{f.svc, other} { // both replicas hold the row now
			if _, err := s.Authenticate(ctx, c.ID, secret); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ActiveClient(ctx, c.ID, payments.ActionListOffers); err != nil {
				t.Fatal(err)
			}
		}
		revoked := time.Now()
		if err := f.svc.RevokeClient(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Authenticate(ctx, c.ID, secret); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("the revoking replica still authenticates the client: %v", err)
		}
		for {
			_, authErr := other.Authenticate(ctx, c.ID, secret)
			_, activeErr := other.ActiveClient(ctx, c.ID, payments.ActionListOffers)
			if errors.Is(authErr, payments.ErrNotFound) && code(activeErr) == payments.CodeClientNotActive {
				break
			}
			if time.Since(revoked) > payments.ClientCacheTTL+time.Second/2 {
				t.Fatalf("another replica still accepts the client %s after the revocation (%v, %v)", time.Since(revoked), authErr, activeErr)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("another replica refused the client %s after the revocation (bound %s)", time.Since(revoked).Round(time.Millisecond), payments.ClientCacheTTL)
	})
}

// A new session is checked against rows a replica caches (sessionParts):
// a merchant account whose credentials another replica revoked is refused
// within ClientCacheTTL, at once by the replica that revoked them; and an
// account cached for one client is still no other client's.
func TestSessionPartsCached(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := newShop(t, f, "")
		other := &payments.Service{Store: f.st, Keys: f.svc.Keys, Audience: audience, Now: f.clock.now, Gateways: f.svc.Gateways}
		n := payments.NewSession{AccountID: s.account.ID, OfferID: s.offer.ID, ReturnURL: "https://shop.example/paid"}
		for _, svc := range []*payments.Service{f.svc, other} {
			for range 3 { // the first reads fill the caches
				if _, err := svc.CreateSession(ctx, s.client, n); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Another client never gets the cached account.
		stranger, _ := must2(t)(f.svc.CreateClient(ctx, payments.NewClient{Name: "stranger", ReturnURLs: []string{"https://shop.example/paid"},
			ResourceTypes: []string{"passes"}}))
		if _, err := f.svc.CreateSession(ctx, stranger, n); code(err) != payments.CodeAccountNotFound {
			t.Fatalf("another client's cached account: %v", err)
		}
		revoked := time.Now()
		must(f.svc.RevokeMerchantCredentials(ctx, s.client.ID, s.merchant.ID))(t)
		if _, err := f.svc.CreateSession(ctx, s.client, n); code(err) != payments.CodeMerchantNotReady {
			t.Fatalf("the revoking replica still creates sessions: %v", err)
		}
		for {
			_, err := other.CreateSession(ctx, s.client, n)
			if code(err) == payments.CodeMerchantNotReady {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if time.Since(revoked) > payments.ClientCacheTTL+2*time.Second {
				t.Fatalf("another replica still creates sessions %s after the revocation", time.Since(revoked))
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("another replica refused the merchant %s after the revocation (bound %s)", time.Since(revoked).Round(time.Millisecond), payments.ClientCacheTTL)
	})
}

// Auto-reload through the sandbox gateway: a debit below the threshold buys
// the offer once; declines count and turn the rule off at the third; a charge
// whose answer was lost is settled by the reconciler without a second charge.
func TestAutoReloadThroughTheSandbox(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := newShop(t, f, "key_reload")
		keyAccount := must(f.svc.ResolveAccount(ctx, s.client, payments.AccountRequest{Reference: "key_reload"}))(t)
		must(f.st.Grant(ctx, "key_reload", 30, "test"))(t)
		save := func(number string) *payments.PaymentMethod {
			return must(f.svc.AddPaymentMethod(ctx, keyAccount.ID, s.platformMer.ID, payments.Card{Number: number, ExpMonth: 12, ExpYear: 2030, CVC: "123"}, true))(t)
		}
		configure := func(pm *payments.PaymentMethod) {
			_, _, err := f.svc.ConfigureAutoReload(ctx, s.client, payments.AutoReloadRequest{AccountRequest: payments.AccountRequest{Reference: "key_reload"},
				Enabled: true, Threshold: 20, OfferID: s.aiOffer.ID, PaymentMethodID: pm.ID})
			if err != nil {
				t.Fatal(err)
			}
		}
		debit := func(n int64) {
			t.Helper()
			if _, _, err := f.st.Reserve(ctx, "key_reload", n, "identify", f.clock.t.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		work := func() int { return must(f.svc.RunWorker(ctx))(t) }
		credits := func() int64 { return must(f.st.Account(ctx, "key_reload"))(t).Credits() }

		good := save("4242424242424242")
		configure(good)
		debit(5) // 25 left: above the threshold
		if n := work(); n != 0 {
			t.Fatalf("a reload above the threshold: %d", n)
		}
		debit(6) // 19 left
		if n := work(); n != 1 || credits() != 119 {
			t.Fatalf("reload: %d worked, %d credits, want 119", n, credits())
		}
		if n, _ := f.sbx.Charges(ctx, sandboxReference(t, f, good)); n != 1 {
			t.Fatalf("%d charges", n)
		}

		// Declines: 3 in a row turn the rule off.
		declined := save("4000000000009995")
		configure(declined)
		for i := range payments.MaxReloadFailures {
			debit(100) // below the threshold again
			if n := work(); n != 1 {
				t.Fatalf("reload %d after a decline: %d worked", i+1, n)
			}
			must(f.st.Grant(ctx, "key_reload", 100, "test"))(t)
			f.clock.t = f.clock.t.Add(time.Hour) // past the backoff
		}
		rule := must(f.st.AutoReload(ctx, keyAccount.ID))(t)
		if rule.Enabled || rule.Failures != payments.MaxReloadFailures || !strings.Contains(rule.DisabledReason, "insufficient_funds") {
			t.Fatalf("after 3 declines: %+v", rule)
		}
		debit(100)
		if n := work(); n != 0 {
			t.Fatalf("a disabled rule reloaded: %d", n)
		}

		// A timeout: pending, then settled by the reconciler, charged once.
		lost := save("4000000000000119")
		configure(lost)
		before := credits()
		debit(before - 1)
		if n := work(); n != 1 || credits() != 1 {
			t.Fatalf("a charge with a lost answer credited: %d worked, %d credits", n, credits())
		}
		if n := work(); n != 0 {
			t.Fatalf("a pending charge retried before its delay: %d", n)
		}
		f.clock.t = f.clock.t.Add(time.Minute)
		if n := work(); n != 1 || credits() != 101 {
			t.Fatalf("reconciled: %d worked, %d credits, want 101", n, credits())
		}
		if n, _ := f.sbx.Charges(ctx, sandboxReference(t, f, lost)); n != 1 {
			t.Fatalf("the lost charge was made %d times", n)
		}
		c, err := f.st.CheckLedger(ctx)
		if err != nil || c != (sqlstore.LedgerCheck{}) {
			t.Fatalf("ledger: %+v %v", c, err)
		}
	})
}

// sandboxReference opens a payment method's sealed vault reference.
func sandboxReference(t *testing.T, f *fixture, pm *payments.PaymentMethod) string {
	t.Helper()
	return string(must(f.svc.Keys.Open(pm.Vault, pm.ID))(t))
}

// A create's key gives a retry the first answer, as it was, even after what
// the create was checked against has changed; the key with another request
// is refused as reused, before any other refusal; after the key's retention
// it is new work.
func TestSessionKeys(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := newShop(t, f, "")
		keyed := func(key, hash string) payments.NewSession {
			return payments.NewSession{AccountID: s.account.ID, OfferID: s.offer.ID, ReturnURL: "https://shop.example/paid",
				Key: &payments.SessionKey{Key: key, RequestHash: hash}}
		}
		first, err := f.svc.CreateSession(ctx, s.client, keyed("order-1", "h1"))
		if err != nil || first.Replayed || first.Session == nil {
			t.Fatalf("first create: %+v %v", first, err)
		}
		if want := payments.SessionDocument(first.Session, first.Purchase, f.clock.t); !bytes.Equal(first.Document, want) {
			t.Fatalf("document %s, want %s", first.Document, want)
		}
		f.clock.t = f.clock.t.Add(time.Minute)
		again, err := f.svc.CreateSession(ctx, s.client, keyed("order-1", "h1"))
		if err != nil || !again.Replayed || again.Session != nil || again.Token != first.Token || !bytes.Equal(again.Document, first.Document) {
			t.Fatalf("the retry: %+v %v", again, err)
		}
		if _, err := f.svc.CreateSession(ctx, s.client, keyed("order-1", "h2")); code(err) != payments.CodeKeyReused {
			t.Fatalf("the key with another request: %v", err)
		}
		// The merchant can no longer take payments: new work is refused, the
		// retry still gets its answer, and a reused key is told so first.
		must(f.svc.RevokeMerchantCredentials(ctx, s.client.ID, s.merchant.ID))(t)
		if _, err := f.svc.CreateSession(ctx, s.client, keyed("order-2", "h1")); code(err) != payments.CodeMerchantNotReady {
			t.Fatalf("new work: %v", err)
		}
		if again, err := f.svc.CreateSession(ctx, s.client, keyed("order-1", "h1")); err != nil || !again.Replayed || again.Token != first.Token {
			t.Fatalf("the retry after the refusal's cause: %+v %v", again, err)
		}
		if _, err := f.svc.CreateSession(ctx, s.client, keyed("order-1", "h2")); code(err) != payments.CodeKeyReused {
			t.Fatalf("the key with another request, refused anyway: %v", err)
		}
		// Past its retention the key is new work (refused here for the merchant).
		must(f.svc.SetMerchantCredentials(ctx, s.client.ID, s.merchant.ID, []byte(`{"apiKey":"sbx-shop"}`)))(t)
		f.clock.t = first.Session.CreatedAt.Add(payments.SessionKeyRetention)
		later, err := f.svc.CreateSession(ctx, s.client, keyed("order-1", "h2"))
		if err != nil || later.Replayed || later.Session.ID == first.Session.ID {
			t.Fatalf("the key after its retention: %+v %v", later, err)
		}
	})
}
