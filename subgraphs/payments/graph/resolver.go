// Package graph is the payments subgraph's internal GraphQL API (gqlgen). Only
// the shim calls it; every field acts for the caller named in the internal
// token (a developer key, or a service client the shim authenticated), never
// for one given as an argument.
package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/internal/timestamp"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/payments/graph/model"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// Resolver holds the subgraph's dependencies.
type Resolver struct {
	Payments *payments.Service
}

// NewHandler returns the subgraph's GraphQL handler (without the internal-token
// check, which the caller wraps around it).
func NewHandler(svc *payments.Service) http.Handler {
	return subgraph.NewGraphQLServer(NewExecutableSchema(Config{Resolvers: &Resolver{Payments: svc}}))
}

// Error codes of the credits API (extensions.code). The payments API's codes
// are payments.Code* in upper case.
const (
	CodeInsufficientCredits = "INSUFFICIENT_CREDITS"
	CodeNotFound            = "NOT_FOUND"
	CodeClosed              = "RESERVATION_CLOSED"
	CodeBadInput            = "BAD_USER_INPUT"
	CodeForbidden           = "FORBIDDEN"
)

// maxLookback bounds creditReservation's withinSeconds: a week, longer than
// any idempotency record lives.
const maxLookback = 7 * 24 * 3600

// keyCaller is the developer key the call acts for: only the shim, acting for
// a key, may move credits.
func keyCaller(ctx context.Context) (string, error) {
	id, _ := trust.FromContext(ctx)
	if id.Caller != "shim" || id.KeyID == "" {
		return "", fail(ctx, CodeForbidden, "credits are moved only by the shim, for a developer key", nil)
	}
	return id.KeyID, nil
}

// shimOnly refuses any caller but the shim.
func shimOnly(ctx context.Context) error {
	if id, _ := trust.FromContext(ctx); id.Caller != "shim" {
		return fail(ctx, CodeForbidden, "only the shim authenticates service clients", nil)
	}
	return nil
}

// client is the service client the call acts for, checked for action.
func (r *Resolver) client(ctx context.Context, action string) (*payments.Client, error) {
	id, _ := trust.FromContext(ctx)
	if id.Caller != "shim" || id.ClientID == "" {
		return nil, fail(ctx, CodeForbidden, "the payments API is called only by the shim, for an authenticated service client", nil)
	}
	c, err := r.Payments.ActiveClient(ctx, id.ClientID, action)
	if err != nil {
		return nil, domainError(ctx, err)
	}
	return c, nil
}

func fail(ctx context.Context, code, msg string, ext map[string]any) error {
	e := map[string]any{"code": code}
	for k, v := range ext {
		e[k] = v
	}
	return &gqlerror.Error{Message: msg, Path: graphql.GetPath(ctx), Extensions: e}
}

// domainError gives the domain's refusals their codes; anything else stays
// an internal error (logged by the server, never shown).
func domainError(ctx context.Context, err error) error {
	var coded *payments.CodedError
	switch {
	case errors.As(err, &coded):
		return fail(ctx, strings.ToUpper(coded.Code), coded.Message, nil)
	case errors.Is(err, payments.ErrInvalid):
		return fail(ctx, CodeBadInput, strings.TrimPrefix(err.Error(), payments.ErrInvalid.Error()+": "), nil)
	case errors.Is(err, payments.ErrInsufficientCredits):
		return fail(ctx, CodeInsufficientCredits, err.Error(), nil)
	case errors.Is(err, payments.ErrBadAmount):
		return fail(ctx, CodeBadInput, err.Error(), nil)
	case errors.Is(err, payments.ErrClosed):
		return fail(ctx, CodeClosed, err.Error(), nil)
	case errors.Is(err, payments.ErrNotFound):
		return fail(ctx, CodeNotFound, "not found", nil)
	}
	return err
}

// ledgerError gives the credits API's errors their codes, with the balance
// when there were too few credits.
func ledgerError(ctx context.Context, err error, a *payments.Account) error {
	if errors.Is(err, payments.ErrInsufficientCredits) {
		return fail(ctx, CodeInsufficientCredits, err.Error(), map[string]any{"balance": a.Credits()})
	}
	if errors.Is(err, payments.ErrNotFound) {
		return fail(ctx, CodeNotFound, "no such reservation for this key", nil)
	}
	return domainError(ctx, err)
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// optStamp formats an optional time.
func optStamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timestamp.Format(*t)
	return &s
}

func creditAccount(a *payments.Account) *model.CreditAccount {
	return &model.CreditAccount{ID: a.ID, Balance: a.Credits()}
}

// billingAccount shows an account with a balance for every type the client
// sells.
func billingAccount(c *payments.Client, a *payments.Account, rule *payments.AutoReload) *model.BillingAccount {
	ref := a.Reference
	if a.KeyID != "" {
		ref = a.KeyID
	}
	out := &model.BillingAccount{ID: a.ID, AccountReference: ref, CreatedAt: timestamp.Format(a.CreatedAt), Balances: []*model.ResourceBalance{}}
	for _, t := range c.ResourceTypes {
		b := a.Balances[t]
		out.Balances = append(out.Balances, &model.ResourceBalance{ResourceType: t, Available: b.Available, Held: b.Held})
	}
	if rule != nil {
		ar := &model.AutoReload{Enabled: rule.Enabled, ConsecutiveFailures: int64(rule.Failures), DisabledReason: optString(rule.DisabledReason),
			UpdatedAt: timestamp.Format(rule.UpdatedAt), OfferID: optString(rule.OfferID), PaymentMethodID: optString(rule.PaymentMethodID)}
		if rule.Enabled {
			ar.Threshold = &rule.Threshold
		}
		out.AutoReload = ar
	}
	return out
}

func offer(o *payments.Offer) *model.Offer {
	return &model.Offer{ID: o.ID, ResourceType: o.ResourceType, Name: o.Name, Quantity: o.Quantity,
		Price: &model.Money{Amount: o.Price, Currency: o.Currency}, MerchantAccountID: o.MerchantID, CreatedAt: timestamp.Format(o.CreatedAt)}
}

func merchant(m *payments.MerchantAccount) *model.MerchantAccount {
	return &model.MerchantAccount{ID: m.ID, Name: m.Name, Gateway: m.Gateway, Status: m.Status, CredentialsConfigured: m.Credentials != nil,
		CredentialsUpdatedAt: optStamp(m.CredentialsUpdatedAt), CreatedAt: timestamp.Format(m.CreatedAt), UpdatedAt: timestamp.Format(m.UpdatedAt)}
}

// session shows a session as of now (an expired session says so before the
// sweeper writes it).
func session(s *payments.Session, p *payments.Purchase, now time.Time) *model.PaymentSession {
	return sessionWithDocument(s, p, now, payments.SessionDocument(s, p, now))
}

// sessionWithDocument shows a session at now with its document, rendered at
// that moment.
func sessionWithDocument(s *payments.Session, p *payments.Purchase, now time.Time, doc payments.Document) *model.PaymentSession {
	return &model.PaymentSession{ID: s.ID, State: s.StateAt(now), BillingAccountID: s.AccountID, OfferID: s.OfferID, ReturnURL: s.ReturnURL,
		CancelURL: s.CancelURL, ParentOrigin: optString(s.ParentOrigin), ExpiresAt: timestamp.Format(s.ExpiresAt), CreatedAt: timestamp.Format(s.CreatedAt),
		RedeemedAt: optStamp(s.RedeemedAt), ClosedAt: optStamp(s.ClosedAt), Purchase: purchase(p), Document: doc}
}

func purchase(p *payments.Purchase) *model.Purchase {
	return &model.Purchase{ID: p.ID, Kind: p.Kind, State: p.State, ResourceType: p.ResourceType, Quantity: p.Quantity,
		Price: &model.Money{Amount: p.Amount, Currency: p.Currency}, FailureCode: optString(p.FailureCode), FailureMessage: optString(p.FailureMessage),
		CreatedAt: timestamp.Format(p.CreatedAt), UpdatedAt: timestamp.Format(p.UpdatedAt)}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// account shows a client's account with its reload rule.
func (r *Resolver) account(ctx context.Context, c *payments.Client, a *payments.Account) (*model.BillingAccount, error) {
	rule, err := r.Payments.Store.AutoReload(ctx, a.ID)
	if errors.Is(err, payments.ErrNotFound) {
		rule = nil
	} else if err != nil {
		return nil, err
	}
	return billingAccount(c, a, rule), nil
}

// checkout is the hosted checkout session and account the call acts for.
func checkout(ctx context.Context) (session, account string, err error) {
	id, _ := trust.FromContext(ctx)
	if id.Caller != "shim" || id.CheckoutSession == "" || id.CheckoutAccount == "" {
		return "", "", fail(ctx, strings.ToUpper(payments.CodeHostedSessionInvalid), "the hosted checkout acts only for a browser's checkout session", nil)
	}
	return id.CheckoutSession, id.CheckoutAccount, nil
}

// hosted shows the browser's session; any reports a session that is no
// longer active (after a cancel or a confirm) instead of refusing it.
func (r *Resolver) hosted(ctx context.Context, sid, acc string, any bool) (*model.HostedSession, error) {
	var h *payments.HostedSession
	var err error
	if any {
		h, err = r.Payments.HostedAnyState(ctx, sid, acc)
	} else {
		h, err = r.Payments.Hosted(ctx, sid, acc)
	}
	if err != nil {
		return nil, domainError(ctx, err)
	}
	return hostedSession(h, time.Now()), nil
}

func hostedSession(h *payments.HostedSession, now time.Time) *model.HostedSession {
	s := h.Session
	return &model.HostedSession{ID: s.ID, State: s.StateAt(now), BillingAccountID: s.AccountID, ExpiresAt: timestamp.Format(s.ExpiresAt),
		ReturnURL: s.ReturnURL, CancelURL: s.CancelURL, Purchase: purchase(h.Purchase), PaymentMethods: paymentMethods(h.Methods),
		Offer: &model.HostedOffer{ID: h.Offer.ID, Name: h.Offer.Name, ResourceType: h.Offer.ResourceType, Quantity: h.Offer.Quantity}}
}

func paymentMethod(pm *payments.PaymentMethod) *model.PaymentMethod {
	return &model.PaymentMethod{ID: pm.ID, Brand: pm.Brand, Last4: pm.Last4, ExpMonth: int64(pm.ExpMonth), ExpYear: int64(pm.ExpYear),
		IsDefault: pm.Default, CreatedAt: timestamp.Format(pm.CreatedAt)}
}

func paymentMethods(ms []payments.PaymentMethod) []*model.PaymentMethod {
	out := make([]*model.PaymentMethod, len(ms))
	for i := range ms {
		out[i] = paymentMethod(&ms[i])
	}
	return out
}

// documentedSession shows a session from its document alone (a replayed
// create's): the document names every field, as the model does.
func documentedSession(doc payments.Document) (*model.PaymentSession, error) {
	var m model.PaymentSession
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("kept payment session document: %w", err)
	}
	m.Document = doc
	return &m, nil
}
