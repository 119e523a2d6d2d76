// Package venues is the venues subgraph's domain: venues and their events. An
// event may feature a brand, held as the brand's public ID: the catalog owns the
// brand itself.
package venues

import (
	"context"
	"errors"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/pagination"
)

// Venue is a place where people smoke cigars: a lounge, a shop, a bar.
type Venue struct {
	ID      string
	Name    string
	City    string
	Country string
	Website *string
}

func (Venue) IsEntity() {}

// Event happens at a venue, maybe featuring a brand.
type Event struct {
	ID       string
	VenueID  string
	BrandID  *string
	Name     string
	StartsAt time.Time
	EndsAt   time.Time
}

func (Event) IsEntity() {}

// Page is a validated connection page; stores read it with its Keyset method
// (venue positions are IDs, event positions EventPosition's two parts).
type Page = pagination.Request

// ErrNotFound is returned for an unknown venue or event.
var ErrNotFound = errors.New("not found")

// Store is the venues subgraph's storage. Listing methods return up to
// page.Size+1 items in the order Page.Keyset reads them, so that callers can
// tell whether another page exists. Events are ordered soonest first; their
// position is EventPosition.
type Store interface {
	Venue(ctx context.Context, id string) (*Venue, error)
	Venues(ctx context.Context, page Page) ([]*Venue, error)
	Event(ctx context.Context, id string) (*Event, error)
	Events(ctx context.Context, filter EventFilter, page Page) ([]*Event, error)
	// Write runs fn in one transaction: what it writes lands together or not at
	// all.
	Write(ctx context.Context, fn func(w Writer) error) error
	Counts(ctx context.Context) (venues, events int, err error)
	Ping(ctx context.Context) error
}

// VenueID is the ID of the venue with this reference: its name, unless an import
// gave it another stable key. Seeds and imports upsert venues by it.
func VenueID(ref string) string { return ids.Derive(ids.Venue, ref) }

// Writer writes inside a Store.Write transaction.
type Writer interface {
	Venue(ctx context.Context, id string) (*Venue, error)
	Event(ctx context.Context, id string) (*Event, error)
	UpsertVenue(ctx context.Context, v *Venue) error
	UpsertEvent(ctx context.Context, e *Event) error
}

// EventFilter narrows Events to one venue or one brand.
type EventFilter struct {
	VenueID string
	BrandID string
}

// EventPosition is an event's keyset position in the soonest-first order: the
// values of (starts_key, id).
func EventPosition(e *Event) []string { return []string{StartsKey(e.StartsAt), e.ID} }

// StartsKey is a start time's fixed-width text form, which sorts like the time
// itself: stores order and page events by it, so positions must use it too.
func StartsKey(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }
