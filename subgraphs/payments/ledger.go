package payments

import (
	"context"
	"errors"
	"time"
)

// Account is a billing account. A developer key's account (KeyID set) holds
// the AI credits identify spends; a service client's account (ClientID and
// Reference set) is found by the client's own reference for its customer.
type Account struct {
	ID        string
	KeyID     string
	ClientID  string
	Reference string
	CreatedAt time.Time
	// Balances by resource type; a type without postings is absent.
	Balances map[string]Balance
}

// Balance is an account's credits of one resource type.
type Balance struct {
	// Available credits can be spent; Held credits are reserved by paid
	// requests still running.
	Available int64
	Held      int64
}

// Credits is the account's spendable AI credits.
func (a *Account) Credits() int64 {
	if a == nil {
		return 0
	}
	return a.Balances[AICredits].Available
}

// Books: an account has an available and a held book per resource type; the
// platform's books are where credits come from and go to. Only the platform's
// books may go below zero.
const (
	BookAvailable = "available"
	BookHeld      = "held"
	// Platform books.
	BookGranted  = "granted"  // credits operators granted
	BookSold     = "sold"     // credits sold by purchases and reloads
	BookConsumed = "consumed" // credits charged for paid requests
	BookMigrated = "migrated" // balances carried over from the single-entry ledger
	// PlatformOwner owns the platform's books.
	PlatformOwner = "platform"
)

// Transaction kinds.
const (
	TxGrant    = "grant"
	TxHold     = "hold"
	TxSettle   = "settle"
	TxRelease  = "release"
	TxPurchase = "purchase"
	TxReload   = "reload"
	TxRefund   = "refund"
	TxOpening  = "opening"
)

// Posting is one leg of a transaction: an amount moved into (positive) or out
// of (negative) a book.
type Posting struct {
	Owner        string // an account ID or PlatformOwner
	ResourceType string
	Book         string
	Amount       int64
}

// Transaction is a balanced set of postings (they sum to zero).
type Transaction struct {
	ID        string
	Kind      string
	AccountID string
	Reference string
	Note      string
	CreatedAt time.Time
	Postings  []Posting
}

// Reservation states.
const (
	Held     = "held"
	Settled  = "settled"
	Released = "released"
)

// Reservation holds AI credits for one paid request.
type Reservation struct {
	ID        string
	AccountID string
	Amount    int64
	// Cost is what the request was charged, once settled.
	Cost      *int64
	State     string
	Reference string
	CreatedAt time.Time
	// ExpiresAt ends a held reservation whose request died: ReleaseExpired gives
	// its credits back.
	ExpiresAt time.Time
}

// Ledger errors.
var (
	ErrInsufficientCredits = errors.New("not enough credits")
	// ErrClosed: the reservation was settled or released already.
	ErrClosed = errors.New("reservation already closed")
	// ErrBadAmount: amounts are positive (a cost may be zero), at most MaxAmount.
	ErrBadAmount = errors.New("amount must be a positive number of credits, at most 1,000,000,000")
)

// MaxAmount bounds one grant, reservation or purchase quantity.
const MaxAmount = 1_000_000_000

// Ledger keeps accounts and moves credits. Every method that moves credits
// writes a balanced transaction and the books' balances in one database
// transaction. The methods named for a key act on that developer key's
// account (created empty the first time) and its AI credits.
type Ledger interface {
	// Account returns the key's account, creating an empty one the first time.
	Account(ctx context.Context, keyID string) (*Account, error)
	// AccountByID returns an account with its balances.
	AccountByID(ctx context.Context, id string) (*Account, error)
	// Grant adds credits of resourceType to an account (an operator's grant).
	Grant(ctx context.Context, keyID string, amount int64, note string) (*Account, error)
	// Reserve holds amount credits of the key's account until expiresAt, or
	// fails with ErrInsufficientCredits having changed nothing.
	Reserve(ctx context.Context, keyID string, amount int64, reference string, expiresAt time.Time) (*Reservation, *Account, error)
	// Settle charges cost (at most the reserved amount) and gives the rest back;
	// settling again with the same cost is a harmless retry.
	Settle(ctx context.Context, keyID, reservationID string, cost int64) (*Account, error)
	// Release gives a held reservation back whole; releasing again is a
	// harmless retry.
	Release(ctx context.Context, keyID, reservationID string) (*Account, error)
	// ReleaseExpired releases held reservations that expired before now.
	ReleaseExpired(ctx context.Context, now time.Time) (int, error)
	// Transactions lists the transactions that moved an account's books,
	// oldest first, each with all its postings.
	Transactions(ctx context.Context, accountID string) ([]Transaction, error)
	Reservation(ctx context.Context, keyID, reservationID string) (*Reservation, error)
	// LatestReservation returns the key's latest reservation with this
	// reference created at or after since, or ErrNotFound: a retried request
	// finds what became of an earlier attempt's hold.
	LatestReservation(ctx context.Context, keyID, reference string, since time.Time) (*Reservation, error)
}

// SumBook sums the postings of one book among transactions: an account's
// balance recomputed from its ledger.
func SumBook(txs []Transaction, owner, resourceType, book string) int64 {
	var sum int64
	for _, t := range txs {
		for _, p := range t.Postings {
			if p.Owner == owner && p.ResourceType == resourceType && p.Book == book {
				sum += p.Amount
			}
		}
	}
	return sum
}
