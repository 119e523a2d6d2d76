package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vitolahq/vitola/internal/faults"
)

// Timing of the background worker's charges.
const (
	// DefaultChargeLease is how long a claimed purchase is a worker's:
	// longer than a gateway call may take, so no other replica repeats it
	// meanwhile; after it, the attempt is repeated under the same key.
	DefaultChargeLease = 2 * time.Minute
	// reconcileDelay is when a charge whose outcome was unknown is asked
	// about again.
	reconcileDelay = 30 * time.Second
)

func (s *Service) chargeLease() time.Duration {
	if s.ChargeLease > 0 {
		return s.ChargeLease
	}
	return DefaultChargeLease
}

// ReconcileWindow is how long after an attempt began the worker repeats it
// to learn its outcome: gateways keep idempotency keys for a limited time
// (Stripe 24 hours), after which the same key could charge again. A charge
// still pending after it stays pending for an operator to settle with the
// gateway (its key is in the charge's metadata).
const ReconcileWindow = 20 * time.Hour

// reloadBackoff is how long a failed reload's rule waits before the next:
// 1, 4, then 16 minutes.
func reloadBackoff(failures int) time.Duration {
	return time.Minute << (2 * min(failures, 4))
}

// ChargeResult is what one attempt at a purchase came to.
type ChargeResult struct {
	Succeeded bool
	// Declined is the gateway's refusal (the purchase did not go through).
	Declined *Declined
	// Pending: the gateway did not say; the reconciler will.
	Pending bool
}

// charge runs a claimed attempt of a purchase through its gateway and
// records the outcome. Only errors of the platform itself are returned; a
// decline is a result.
func (s *Service) charge(ctx context.Context, p *Purchase) (ChargeResult, error) {
	m, err := s.Store.Merchant(ctx, p.MerchantID)
	if err != nil {
		return ChargeResult{}, err
	}
	pm, err := s.Store.PaymentMethod(ctx, p.AccountID, p.PaymentMethodID)
	if errors.Is(err, ErrNotFound) {
		return s.decline(ctx, p, &Declined{Code: "payment_method_missing", Message: "the saved card was removed"})
	}
	if err != nil {
		return ChargeResult{}, err
	}
	g, creds, err := s.credentials(m)
	var coded *CodedError
	if errors.As(err, &coded) {
		return s.decline(ctx, p, &Declined{Code: "merchant_not_ready", Message: "the merchant account cannot take payments now"})
	}
	if err != nil {
		return ChargeResult{}, err
	}
	ref, err := s.Keys.Open(pm.Vault, pm.ID)
	if err != nil {
		return ChargeResult{}, fmt.Errorf("open vault reference of %s: %w", pm.ID, err)
	}
	ch, err := g.Charge(ctx, creds, ChargeRequest{Reference: string(ref), Amount: p.Amount, Currency: p.Currency, Key: p.AttemptKey,
		Description: fmt.Sprintf("%d %s", p.Quantity, p.ResourceType)})
	var declined *Declined
	switch {
	case errors.As(err, &declined):
		return s.decline(ctx, p, declined)
	case err != nil:
		// Unknown outcome, a timeout, a network error: the gateway may have
		// charged. The same key asks again later and never charges twice.
		if err := s.Store.MarkPending(ctx, p.ID, p.AttemptKey, s.now().Add(reconcileDelay)); err != nil {
			return ChargeResult{}, err
		}
		return ChargeResult{Pending: true}, nil
	}
	faults.Point("payments.after-capture")
	if _, err := s.Store.CompletePurchase(ctx, p.ID, p.AttemptKey, ch.ID); err != nil {
		return ChargeResult{}, err
	}
	return ChargeResult{Succeeded: true}, nil
}

func (s *Service) decline(ctx context.Context, p *Purchase, d *Declined) (ChargeResult, error) {
	rule, err := s.Store.AutoReload(ctx, p.AccountID)
	failures := 0
	if err == nil {
		failures = rule.Failures
	}
	if _, err := s.Store.FailPurchase(ctx, p.ID, p.AttemptKey, d.Code, d.Message, s.now().Add(reloadBackoff(failures))); err != nil {
		return ChargeResult{}, err
	}
	return ChargeResult{Declined: d}, nil
}

// RunWorker does one round of background charges: queued reloads, and
// purchases whose outcome is pending or whose worker died. It returns how
// many purchases it worked on. Every replica may run it: claims never
// overlap.
func (s *Service) RunWorker(ctx context.Context) (int, error) {
	now := s.now()
	ps, err := s.Store.ClaimPurchases(ctx, now, now.Add(s.chargeLease()), 20)
	if err != nil {
		return 0, err
	}
	for i := range ps {
		if _, err := s.charge(ctx, &ps[i]); err != nil {
			return i, fmt.Errorf("charge %s: %w", ps[i].ID, err)
		}
	}
	return len(ps), nil
}

// RefundPurchase gives a succeeded purchase's money back through its gateway
// and takes its units back from the account, recording it (and its event).
// Units already spent cannot be taken back: ErrInsufficientCredits before
// any money moves. Running it again after a failure refunds once (the
// gateway refund is keyed by the purchase).
func (s *Service) RefundPurchase(ctx context.Context, id, note string) (*Purchase, error) {
	p, err := s.Store.Purchase(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.State != PurchaseSucceeded {
		return nil, fmt.Errorf("%w: purchase %s is %s; only a succeeded purchase is refunded", ErrConflict, id, p.State)
	}
	a, err := s.Store.AccountByID(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	if a.Balances[p.ResourceType].Available < p.Quantity {
		return nil, fmt.Errorf("%w: the account has spent some of the purchase's %d units", ErrInsufficientCredits, p.Quantity)
	}
	m, err := s.Store.Merchant(ctx, p.MerchantID)
	if err != nil {
		return nil, err
	}
	g, creds, err := s.credentials(m)
	if err != nil {
		return nil, err
	}
	if err := g.Refund(ctx, creds, p.ChargeID, p.Amount, "refund:"+p.ID); err != nil {
		return nil, err
	}
	if err := s.Store.RefundPurchase(ctx, id, note); err != nil {
		return nil, err
	}
	return s.Store.Purchase(ctx, id)
}
