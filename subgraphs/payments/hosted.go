package payments

import (
	"context"
	"errors"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/faults"
	"github.com/vitolahq/vitola/internal/secret"
	"github.com/vitolahq/vitola/subgraphs/payments/card"
)

// The hosted checkout: a browser redeems a session's one-time token and then
// acts for that session alone (the shim's signed cookie names the session and
// its account). Every rule is here; the shim only carries the cookie.

// CodeHostedSessionInvalid: the browser's session is not active (forged,
// expired, cancelled, completed, or another session's): the shim answers 401.
const CodeHostedSessionInvalid = "hosted_session_invalid"

// sessionUnavailable is the one refusal of a token that is invalid, expired
// or redeemed already: the same words for all three, so the answer tells an
// attacker nothing.
func sessionUnavailable() error {
	return Refuse(CodeSessionUnavailable, "this payment link is invalid, expired or already used: ask the merchant for a new one")
}

// HostedSession is what the checkout page shows.
type HostedSession struct {
	Session  *Session
	Purchase *Purchase
	Offer    *Offer
	Methods  []PaymentMethod
}

// Redeem spends a session's one-time token: an open, unexpired session
// becomes active, once. Anything else is session_unavailable. A page that
// names its session (the hosted URL's path) spends only a token of that
// session: a token pasted under another session's page is not spent.
func (s *Service) Redeem(ctx context.Context, token, sessionID string) (*HostedSession, error) {
	if len(token) < 20 || len(token) > 100 {
		return nil, sessionUnavailable()
	}
	sess, err := s.Store.RedeemSession(ctx, secret.Hash(token), sessionID, s.now())
	if errors.Is(err, ErrNotFound) {
		return nil, sessionUnavailable()
	}
	if err != nil {
		return nil, err
	}
	return s.hosted(ctx, sess)
}

// Hosted returns the browser's session while it is active, and once it is
// completed (a page polling a pending payment learns it was paid); a
// cancelled or expired session, or another account's, is refused.
func (s *Service) Hosted(ctx context.Context, sessionID, accountID string) (*HostedSession, error) {
	sess, err := s.Store.Session(ctx, sessionID)
	if err == nil && sess.AccountID == accountID && sess.StateAt(s.now()) == SessionCompleted {
		return s.hosted(ctx, sess)
	}
	if sess, err = s.activeSession(ctx, sessionID, accountID); err != nil {
		return nil, err
	}
	return s.hosted(ctx, sess)
}

func (s *Service) hosted(ctx context.Context, sess *Session) (*HostedSession, error) {
	p, err := s.Store.Purchase(ctx, sess.PurchaseID)
	if err != nil {
		return nil, err
	}
	o, err := s.Store.Offer(ctx, sess.OfferID)
	if err != nil {
		return nil, err
	}
	ms, err := s.methods(ctx, sess)
	if err != nil {
		return nil, err
	}
	return &HostedSession{Session: sess, Purchase: p, Offer: o, Methods: ms}, nil
}

// activeSession loads a session the browser may act for.
func (s *Service) activeSession(ctx context.Context, sessionID, accountID string) (*Session, error) {
	sess, err := s.Store.Session(ctx, sessionID)
	if errors.Is(err, ErrNotFound) || (err == nil && (sess.AccountID != accountID || sess.StateAt(s.now()) != SessionActive)) {
		return nil, Refuse(CodeHostedSessionInvalid, "this checkout session is over or not yours: open the payment link again")
	}
	return sess, err
}

// methods lists the account's saved cards usable for the session's offer
// (saved with its merchant account), default first.
func (s *Service) methods(ctx context.Context, sess *Session) ([]PaymentMethod, error) {
	p, err := s.Store.Purchase(ctx, sess.PurchaseID)
	if err != nil {
		return nil, err
	}
	all, err := s.Store.PaymentMethods(ctx, sess.AccountID)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, m := range all {
		if m.MerchantID == p.MerchantID {
			out = append(out, m)
		}
	}
	return out, nil
}

// PaymentMethods lists the session's usable saved cards.
func (s *Service) PaymentMethods(ctx context.Context, sessionID, accountID string) ([]PaymentMethod, error) {
	sess, err := s.activeSession(ctx, sessionID, accountID)
	if err != nil {
		return nil, err
	}
	return s.methods(ctx, sess)
}

// CancelSession ends the browser's active session; its open purchase is
// cancelled. A purchase being charged finishes and its outcome stands.
func (s *Service) CancelSession(ctx context.Context, sessionID, accountID string) (*Session, error) {
	sess, err := s.activeSession(ctx, sessionID, accountID)
	if err != nil {
		return nil, err
	}
	if err := s.Store.CancelSession(ctx, sess.ID, s.now()); err != nil {
		return nil, err
	}
	return s.Store.Session(ctx, sess.ID)
}

// CardInput is raw card data from the PCI route.
type CardInput struct {
	Number      string
	ExpMonth    int
	ExpYear     int
	CVC         string
	Name        string
	MakeDefault bool
}

// AddCard checks a card, vaults it at the session's merchant account's
// gateway, and saves the vault reference for the account. The card number and
// CVC go to the gateway only: nothing stores, logs or returns them.
func (s *Service) AddCard(ctx context.Context, sessionID, accountID string, in CardInput) (*PaymentMethod, error) {
	sess, err := s.activeSession(ctx, sessionID, accountID)
	if err != nil {
		return nil, err
	}
	if _, err := card.Check(in.Number, in.ExpMonth, in.ExpYear, in.CVC, s.now()); err != nil {
		return nil, Invalid("%v", err)
	}
	p, err := s.Store.Purchase(ctx, sess.PurchaseID)
	if err != nil {
		return nil, err
	}
	pm, err := s.AddPaymentMethod(ctx, sess.AccountID, p.MerchantID, Card{Number: in.Number, ExpMonth: in.ExpMonth, ExpYear: in.ExpYear, CVC: in.CVC, Name: in.Name}, in.MakeDefault)
	var d *Declined
	if errors.As(err, &d) {
		return nil, Refuse(CodeCardDeclined, "%s", d.Message)
	}
	return pm, err
}

// CodeCardDeclined: a gateway refused a card (saving it or charging it).
const CodeCardDeclined = "card_declined"

// TokenVault is a gateway that saves a card from a token its own browser
// library made (the card never reaching the platform).
type TokenVault interface {
	VaultToken(ctx context.Context, creds []byte, token string) (VaultedCard, error)
}

// AddTokenMethod saves a card from a gateway token for the account.
func (s *Service) AddTokenMethod(ctx context.Context, sessionID, accountID, token string, makeDefault bool) (*PaymentMethod, error) {
	sess, err := s.activeSession(ctx, sessionID, accountID)
	if err != nil {
		return nil, err
	}
	p, err := s.Store.Purchase(ctx, sess.PurchaseID)
	if err != nil {
		return nil, err
	}
	m, err := s.Store.Merchant(ctx, p.MerchantID)
	if err != nil {
		return nil, err
	}
	g, creds, err := s.credentials(m)
	if err != nil {
		return nil, err
	}
	tv, ok := g.(TokenVault)
	if !ok {
		return nil, Invalid("gatewayToken: the %s gateway takes cards on the card route (/api/pci/v1/payment-methods)", g.Name())
	}
	v, err := tv.VaultToken(ctx, creds, token)
	var d *Declined
	if errors.As(err, &d) {
		return nil, Refuse(CodeCardDeclined, "%s", d.Message)
	}
	if err != nil {
		return nil, err
	}
	return s.savePaymentMethod(ctx, sess.AccountID, m.ID, v, makeDefault)
}

// SetDefaultMethod makes a saved card the account's default.
func (s *Service) SetDefaultMethod(ctx context.Context, sessionID, accountID, id string) (*PaymentMethod, error) {
	if _, err := s.activeSession(ctx, sessionID, accountID); err != nil {
		return nil, err
	}
	if err := s.Store.SetDefaultMethod(ctx, accountID, id); errors.Is(err, ErrNotFound) {
		return nil, methodNotFound(id)
	} else if err != nil {
		return nil, err
	}
	return s.Store.PaymentMethod(ctx, accountID, id)
}

// DeleteMethod removes a saved card (its vault reference is erased).
func (s *Service) DeleteMethod(ctx context.Context, sessionID, accountID, id string) error {
	if _, err := s.activeSession(ctx, sessionID, accountID); err != nil {
		return err
	}
	if err := s.Store.DeleteMethod(ctx, accountID, id, s.now()); errors.Is(err, ErrNotFound) {
		return methodNotFound(id)
	} else if err != nil {
		return err
	}
	return nil
}

func methodNotFound(id string) error {
	return Refuse(CodePaymentMethodMissing, "no saved payment method %s for this account", apierr.Clip(id))
}

// ConfirmResult is a confirmed purchase and how its charge went.
type ConfirmResult struct {
	Purchase *Purchase
	Session  *Session
	Charge   ChargeResult
}

// Confirm charges the session's purchase to a saved card of the account:
// captured through the gateway and, in one transaction, the purchase recorded,
// the account credited and the session completed. Of concurrent confirms one
// charges; the others find the purchase being paid (409) or paid. A declined
// card leaves the purchase open for another card; an unknown outcome leaves it
// pending for the reconciler, never charged twice.
func (s *Service) Confirm(ctx context.Context, sessionID, accountID, purchaseID, methodID string) (*ConfirmResult, error) {
	sess, err := s.activeSession(ctx, sessionID, accountID)
	if err != nil {
		return nil, err
	}
	if purchaseID != sess.PurchaseID {
		return nil, Refuse(CodePurchaseNotFound, "no purchase %s in this checkout session", apierr.Clip(purchaseID))
	}
	pm, err := s.Store.PaymentMethod(ctx, accountID, methodID)
	if errors.Is(err, ErrNotFound) {
		return nil, methodNotFound(methodID)
	}
	if err != nil {
		return nil, err
	}
	p, err := s.Store.Purchase(ctx, purchaseID)
	if err != nil {
		return nil, err
	}
	if pm.MerchantID != p.MerchantID {
		return nil, Invalid("paymentMethodId: that card was saved for another merchant: add it again here")
	}
	claimed, err := s.Store.ClaimCheckout(ctx, purchaseID, pm.ID, s.now().Add(s.chargeLease()))
	if errors.Is(err, ErrConflict) {
		return nil, Refuse(CodePurchaseInProgress, "this purchase is being paid or is paid already: load the session to see how it went")
	}
	if err != nil {
		return nil, err
	}
	res, err := s.charge(ctx, claimed)
	if err != nil {
		return nil, err
	}
	faults.Point("payments.after-commit")
	if p, err = s.Store.Purchase(ctx, purchaseID); err != nil {
		return nil, err
	}
	if sess, err = s.Store.Session(ctx, sessionID); err != nil {
		return nil, err
	}
	return &ConfirmResult{Purchase: p, Session: sess, Charge: res}, nil
}

// Codes of the hosted checkout.
const (
	CodePurchaseNotFound   = "purchase_not_found"
	CodePurchaseInProgress = "purchase_in_progress"
)

// savePaymentMethod seals a vault reference and saves it for the account.
func (s *Service) savePaymentMethod(ctx context.Context, accountID, merchantID string, v VaultedCard, makeDefault bool) (*PaymentMethod, error) {
	pm := newPaymentMethod(accountID, merchantID, v, makeDefault, s.now())
	var err error
	if pm.Vault, err = s.Keys.Seal([]byte(v.Reference), pm.ID); err != nil {
		return nil, err
	}
	return pm, s.Store.AddPaymentMethod(ctx, pm)
}

// HostedAnyState returns the browser's session whatever its state now (after
// a cancel or a confirm, the page shows how it ended), still only the
// account's own.
func (s *Service) HostedAnyState(ctx context.Context, sessionID, accountID string) (*HostedSession, error) {
	sess, err := s.Store.Session(ctx, sessionID)
	if errors.Is(err, ErrNotFound) || (err == nil && sess.AccountID != accountID) {
		return nil, Refuse(CodeHostedSessionInvalid, "this checkout session is not yours: open the payment link again")
	}
	if err != nil {
		return nil, err
	}
	return s.hosted(ctx, sess)
}

// FrameOrigins lists the origins that may embed a session's checkout: the
// parent origin the session was created for, else the client's registered
// origins; none for an unknown session.
func (s *Service) FrameOrigins(ctx context.Context, sessionID string) ([]string, error) {
	sess, err := s.Store.Session(ctx, sessionID)
	if errors.Is(err, ErrNotFound) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	if sess.ParentOrigin != "" {
		return []string{sess.ParentOrigin}, nil
	}
	c, err := s.Store.Client(ctx, sess.ClientID)
	if errors.Is(err, ErrNotFound) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return c.Origins, nil
}
