// Package sandbox is the built-in test gateway: a pretend card network with
// documented test cards, kept in the payments store so that every replica
// answers alike. It moves no money. Its credentials are {"apiKey": "..."}:
// any non-empty key, so the credential path is the same as a real gateway's.
//
// Test cards (any future expiry; CVC of 3 digits, 4 for American Express):
//
//	4242 4242 4242 4242   Visa: charges succeed
//	5555 5555 5555 4444   Mastercard: charges succeed
//	3782 822463 10005     American Express: charges succeed
//	4000 0000 0000 0002   declined when saved (card_declined)
//	4000 0000 0000 9995   saved; charges declined (insufficient_funds)
//	4000 0000 0000 0341   saved; charges declined (card_declined)
//	4000 0000 0000 0119   saved; a charge goes through but its answer is
//	                      lost (a timeout): the outcome is unknown until the
//	                      reconciler asks again with the same key
//
// Any other valid card number behaves as 4242 4242 4242 4242.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/secret"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/payments/card"
)

// Name is the gateway's name in merchant accounts.
const Name = "sandbox"

// Behaviours of test cards.
const (
	succeed            = "succeed"
	declineOnSave      = "decline_on_save"
	insufficientFunds  = "insufficient_funds"
	declineOnCharge    = "decline_on_charge"
	timeoutAfterCharge = "timeout_after_charge"
)

var testCards = map[string]string{
	"4000000000000002": declineOnSave,
	"4000000000009995": insufficientFunds,
	"4000000000000341": declineOnCharge,
	"4000000000000119": timeoutAfterCharge,
}

// Gateway is the sandbox gateway over the payments store.
type Gateway struct {
	DB  *sqldb.DB
	Now func() time.Time
}

var _ payments.Gateway = (*Gateway)(nil)

func (g *Gateway) Name() string { return Name }

func (g *Gateway) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// CheckCredentials wants {"apiKey": "..."}.
func (g *Gateway) CheckCredentials(creds []byte) error {
	var c struct {
		APIKey string `json:"apiKey"`
	}
	if err := json.Unmarshal(creds, &c); err != nil || c.APIKey == "" {
		return errors.New(`the sandbox gateway wants {"apiKey": "…"} (any non-empty key)`)
	}
	return nil
}

func (g *Gateway) Vault(ctx context.Context, creds []byte, c payments.Card) (payments.VaultedCard, error) {
	if err := g.CheckCredentials(creds); err != nil {
		return payments.VaultedCard{}, err
	}
	checked, err := card.Check(c.Number, c.ExpMonth, c.ExpYear, c.CVC, g.now())
	if err != nil {
		return payments.VaultedCard{}, &payments.Declined{Code: "invalid_card", Message: err.Error()}
	}
	behaviour := testCards[checked.Number]
	if behaviour == "" {
		behaviour = succeed
	}
	if behaviour == declineOnSave {
		return payments.VaultedCard{}, &payments.Declined{Code: "card_declined", Message: "the card was declined: try another card"}
	}
	ref := "sbx_card_" + secret.Base62(24)
	if _, err := g.DB.ExecContext(ctx, g.DB.Rebind(`INSERT INTO sandbox_cards (reference, last4, behaviour, created_at) VALUES (?, ?, ?, ?)`),
		ref, checked.Last4, behaviour, g.now().UnixMilli()); err != nil {
		return payments.VaultedCard{}, fmt.Errorf("sandbox vault: %w", err)
	}
	return payments.VaultedCard{Reference: ref, Brand: checked.Brand, Last4: checked.Last4, ExpMonth: checked.ExpMonth, ExpYear: checked.ExpYear}, nil
}

func (g *Gateway) Charge(ctx context.Context, creds []byte, req payments.ChargeRequest) (payments.Charge, error) {
	if err := g.CheckCredentials(creds); err != nil {
		return payments.Charge{}, err
	}
	if req.Key == "" || req.Amount < 1 {
		return payments.Charge{}, errors.New("sandbox charge: a key and a positive amount are required")
	}
	// A charge made with this key before is the answer, whatever the card.
	var charged string
	err := g.DB.GetContext(ctx, &charged, g.DB.Rebind(`SELECT charge_id FROM sandbox_charges WHERE idempotency_key = ?`), req.Key)
	if err == nil {
		return payments.Charge{ID: charged}, nil
	}
	if !sqldb.IsNoRows(err) {
		return payments.Charge{}, fmt.Errorf("sandbox charge: %w", err)
	}
	var behaviour string
	err = g.DB.GetContext(ctx, &behaviour, g.DB.Rebind(`SELECT behaviour FROM sandbox_cards WHERE reference = ?`), req.Reference)
	if sqldb.IsNoRows(err) {
		return payments.Charge{}, &payments.Declined{Code: "card_declined", Message: "the saved card is unknown to the gateway: add it again"}
	}
	if err != nil {
		return payments.Charge{}, fmt.Errorf("sandbox charge: %w", err)
	}
	switch behaviour {
	case insufficientFunds:
		return payments.Charge{}, &payments.Declined{Code: "insufficient_funds", Message: "the card has insufficient funds: try another card"}
	case declineOnCharge:
		return payments.Charge{}, &payments.Declined{Code: "card_declined", Message: "the card was declined: try another card"}
	}
	id := ids.New("sbxch")
	if _, err := g.DB.ExecContext(ctx, g.DB.Rebind(`INSERT INTO sandbox_charges (idempotency_key, charge_id, reference, amount, currency, created_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`), req.Key, id, req.Reference, req.Amount, req.Currency, g.now().UnixMilli()); err != nil {
		return payments.Charge{}, fmt.Errorf("sandbox charge: %w", err)
	}
	// Of two charges racing with one key, both answer the one stored.
	if err := g.DB.GetContext(ctx, &charged, g.DB.Rebind(`SELECT charge_id FROM sandbox_charges WHERE idempotency_key = ?`), req.Key); err != nil {
		return payments.Charge{}, fmt.Errorf("sandbox charge: %w", err)
	}
	if behaviour == timeoutAfterCharge {
		return payments.Charge{}, payments.ErrOutcomeUnknown
	}
	return payments.Charge{ID: charged}, nil
}

// Refund accepts a refund of a charge it made (nothing moves).
func (g *Gateway) Refund(ctx context.Context, creds []byte, chargeID string, amount int64, key string) error {
	if err := g.CheckCredentials(creds); err != nil {
		return err
	}
	var n int
	if err := g.DB.GetContext(ctx, &n, g.DB.Rebind(`SELECT COUNT(*) FROM sandbox_charges WHERE charge_id = ? AND amount >= ?`), chargeID, amount); err != nil {
		return fmt.Errorf("sandbox refund: %w", err)
	}
	if n == 0 {
		return errors.New("sandbox refund: no such charge of that amount")
	}
	return nil
}

// Charges counts the charges made with a card reference (tests check that a
// purchase was charged once).
func (g *Gateway) Charges(ctx context.Context, reference string) (int, error) {
	var n int
	err := g.DB.GetContext(ctx, &n, g.DB.Rebind(`SELECT COUNT(*) FROM sandbox_charges WHERE reference = ?`), reference)
	return n, err
}

// Test tokens stand for cards a browser library would have tokenized:
// POST /payment-methods {"gatewayToken": "tok_visa"} saves 4242 4242 4242 4242.
var testTokens = map[string]string{
	"tok_visa":               "4242424242424242",
	"tok_mastercard":         "5555555555554444",
	"tok_amex":               "378282246310005",
	"tok_card_declined":      "4000000000000002",
	"tok_insufficient_funds": "4000000000009995",
	"tok_charge_declined":    "4000000000000341",
	"tok_charge_timeout":     "4000000000000119",
}

// VaultToken saves the card a test token stands for.
func (g *Gateway) VaultToken(ctx context.Context, creds []byte, token string) (payments.VaultedCard, error) {
	number, ok := testTokens[token]
	if !ok {
		return payments.VaultedCard{}, &payments.Declined{Code: "invalid_token", Message: "unknown sandbox token: use tok_visa, tok_mastercard, tok_amex, tok_card_declined, tok_insufficient_funds, tok_charge_declined or tok_charge_timeout"}
	}
	cvc := "123"
	if len(number) == 15 {
		cvc = "1234"
	}
	return g.Vault(ctx, creds, payments.Card{Number: number, ExpMonth: 12, ExpYear: g.now().Year() + 3, CVC: cvc})
}
