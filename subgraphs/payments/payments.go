// Package payments is the payments subgraph's domain. It starts with credits:
// every developer key has a billing account whose spendable balance is the sum
// of its ledger entries. Paid requests reserve credits before they work, settle
// the actual cost after, and release the reservation when they fail, so a
// failure never costs anything and two requests cannot spend the same credit.
package payments

import (
	"context"
	"errors"
	"time"
)

// Account is a developer key's billing account.
type Account struct {
	ID    string
	KeyID string
	// Balance is the spendable balance: the sum of the account's ledger entries
	// (credits held by open reservations are not spendable).
	Balance   int64
	CreatedAt time.Time
}

// Entry kinds. Amounts are signed changes of the spendable balance.
const (
	EntryGrant   = "grant"   // credits granted (vitola credits add, later purchases)
	EntryReserve = "reserve" // credits held for a request (negative)
	EntrySettle  = "settle"  // the unused part of a reservation given back (zero or positive)
	EntryRelease = "release" // a failed request's reservation given back (positive)
)

// Entry is one ledger line.
type Entry struct {
	ID            string
	AccountID     string
	Kind          string
	Amount        int64
	ReservationID *string
	Note          string
	CreatedAt     time.Time
}

// Reservation states.
const (
	Held     = "held"
	Settled  = "settled"
	Released = "released"
)

// Reservation holds credits for one request.
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

// Errors.
var (
	ErrInsufficientCredits = errors.New("not enough credits")
	ErrNotFound            = errors.New("not found")
	// ErrClosed: the reservation was settled or released already.
	ErrClosed = errors.New("reservation already closed")
	// ErrBadAmount: amounts are positive (a cost may be zero), at most MaxAmount.
	ErrBadAmount = errors.New("amount must be a positive number of credits, at most 1,000,000,000")
)

// MaxAmount bounds one grant or reservation.
const MaxAmount = 1_000_000_000

// Ledger keeps accounts, their entries and reservations. Every method that
// moves credits writes the entry and the balance in one transaction.
type Ledger interface {
	// Account returns the key's account, creating an empty one the first time.
	Account(ctx context.Context, keyID string) (*Account, error)
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
	Entries(ctx context.Context, accountID string) ([]Entry, error)
	Reservation(ctx context.Context, keyID, reservationID string) (*Reservation, error)
	// LatestReservation returns the key's latest reservation with this
	// reference created at or after since, or ErrNotFound: a retried request
	// finds what became of an earlier attempt's hold.
	LatestReservation(ctx context.Context, keyID, reference string, since time.Time) (*Reservation, error)
}
