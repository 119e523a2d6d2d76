package payments

import (
	"context"
	"errors"
	"fmt"
)

// Gateway moves money for a merchant account: it keeps cards in its vault and
// charges them. Implementations: gateway/sandbox (built in, documented test
// cards) and gateway/stripe (the official client).
//
// Every call gets the merchant account's decrypted credentials (the gateway's
// own JSON); the gateway never stores them.
type Gateway interface {
	// Name is the gateway's name in merchant accounts ("sandbox", "stripe").
	Name() string
	// CheckCredentials checks credentials' shape before they are stored; the
	// error names the field, never its value.
	CheckCredentials(creds []byte) error
	// Vault stores a card and returns a reusable reference to it. A card the
	// gateway refuses outright is a *Declined.
	Vault(ctx context.Context, creds []byte, card Card) (VaultedCard, error)
	// Charge captures an amount from a vaulted card. Key makes it idempotent at
	// the gateway: a call with a key used before answers the first charge and
	// never charges twice. A decline is a *Declined; ErrOutcomeUnknown means
	// the gateway may or may not have charged (a timeout): the reconciler
	// calls Charge again with the same key, which settles it either way.
	Charge(ctx context.Context, creds []byte, req ChargeRequest) (Charge, error)
	// Refund gives a captured charge's amount back; key makes it idempotent
	// (a repeated call refunds once).
	Refund(ctx context.Context, creds []byte, chargeID string, amount int64, key string) error
}

// Card is raw card data, held only while it is sent to a gateway's vault. It
// never prints its number or CVC.
type Card struct {
	Number   string
	ExpMonth int
	ExpYear  int
	CVC      string
	Name     string
}

// String redacts the card: %v of a Card shows its brand-neutral last four.
func (c Card) String() string {
	last4 := ""
	if len(c.Number) >= 4 {
		last4 = c.Number[len(c.Number)-4:]
	}
	return fmt.Sprintf("card ending %s", last4)
}

// GoString redacts %#v too.
func (c Card) GoString() string { return c.String() }

// VaultedCard is what a vault returns: a reference and what may be shown.
type VaultedCard struct {
	Reference string
	Brand     string
	Last4     string
	ExpMonth  int
	ExpYear   int
}

// ChargeRequest is one capture.
type ChargeRequest struct {
	Reference   string // the vaulted card
	Amount      int64  // minor units
	Currency    string // ISO 4217
	Key         string // idempotency key at the gateway
	Description string
}

// Charge is a capture that went through.
type Charge struct {
	ID string
}

// Declined is a gateway's refusal of a card or a charge.
type Declined struct {
	// Code is stable: card_declined, insufficient_funds, expired_card,
	// incorrect_cvc, processing_error.
	Code    string
	Message string
}

func (d *Declined) Error() string { return d.Message }

// ErrOutcomeUnknown: the gateway did not say whether a charge went through.
var ErrOutcomeUnknown = errors.New("the gateway did not say whether the charge went through")
