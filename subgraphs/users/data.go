package users

import (
	"context"

	"github.com/vitolahq/vitola/internal/pagination"
)

// Connected-user data. Timestamps are RFC 3339 UTC with milliseconds, as shown.

// Collection is a user's named list of cigars.
type Collection struct {
	ID        string           `json:"id"`
	UserID    string           `json:"-"`
	Name      string           `json:"name"`
	Type      string           `json:"type"`
	Private   bool             `json:"private"`
	UpdatedAt string           `json:"updatedAt"`
	Items     []CollectionItem `json:"items"`
}

// CollectionItem is a cigar in a collection.
type CollectionItem struct {
	CigarID string `json:"cigarId"`
	AddedAt string `json:"addedAt"`
}

// Humidor holds a user's cigars.
type Humidor struct {
	ID     string        `json:"id"`
	UserID string        `json:"-"`
	Name   string        `json:"name"`
	Items  []HumidorItem `json:"items"`
}

// HumidorItem is a quantity of a cigar in a humidor.
type HumidorItem struct {
	CigarID  string `json:"cigarId"`
	Quantity int    `json:"quantity"`
	AddedAt  string `json:"addedAt"`
}

// SmokeSession is a cigar smoked, maybe at a venue.
type SmokeSession struct {
	ID              string
	UserID          string
	CigarID         *string
	BrandID         *string // the cigar's brand, recorded with the session
	VenueID         *string
	StartedAt       string
	EndedAt         *string
	DurationSeconds *int
	Rating          *float64
	Note            *string
	Featured        bool
	Visibility      string // public or private
	CreatedAt       string
}

// CheckIn is a visit to a venue.
type CheckIn struct {
	ID          string
	UserID      string
	VenueID     string
	CheckedInAt string
}

// DataStore keeps the connected-user data. Listing methods return one user's
// items by ID order, up to page.Size+1 of them, as page.Keyset reads them.
// Single-item getters return ErrNotFound for an unknown ID; callers check the
// owner.
type DataStore interface {
	Collections(ctx context.Context, userID string, page pagination.Request) ([]*Collection, error)
	Collection(ctx context.Context, id string) (*Collection, error)
	Humidors(ctx context.Context, userID string, page pagination.Request) ([]*Humidor, error)
	Humidor(ctx context.Context, id string) (*Humidor, error)
	SmokeSessions(ctx context.Context, userID string, page pagination.Request) ([]*SmokeSession, error)
	SmokeSession(ctx context.Context, id string) (*SmokeSession, error)
	CheckIns(ctx context.Context, userID string, page pagination.Request) ([]*CheckIn, error)
	CheckIn(ctx context.Context, id string) (*CheckIn, error)
	SaveCollection(ctx context.Context, c *Collection) error
	SaveHumidor(ctx context.Context, h *Humidor) error
	SaveSmokeSession(ctx context.Context, s *SmokeSession) error
	// SaveSmokeSessions saves sessions in one transaction, reporting progress.
	SaveSmokeSessions(ctx context.Context, ss []*SmokeSession, progress func(done, total int)) error
	SaveCheckIn(ctx context.Context, c *CheckIn) error
	// BusinessSessions returns one page of a venue's or a brand's feed and how
	// many sessions match in all.
	BusinessSessions(ctx context.Context, q FeedQuery) ([]*FeedSession, int, error)
}

// FeedQuery selects a business's public sessions. From and To are RFC 3339 UTC
// with milliseconds (inclusive); empty means unbounded.
type FeedQuery struct {
	VenueID, BrandID string
	From, To         string
	FeaturedOnly     bool
	Limit, Offset    int
}

// FeedSession is a public session with its user's public summary.
type FeedSession struct {
	SmokeSession
	UserDisplayName string
	UserImageURL    *string
}

// IsEntity marks the user's own data as federation entities (node(id:)
// resolves them, for their owner only).
func (Collection) IsEntity()   {}
func (Humidor) IsEntity()      {}
func (SmokeSession) IsEntity() {}
func (CheckIn) IsEntity()      {}

// GetID gives each its keyset position in the my* connections (ID order).
func (c Collection) GetID() string   { return c.ID }
func (h Humidor) GetID() string      { return h.ID }
func (s SmokeSession) GetID() string { return s.ID }
func (c CheckIn) GetID() string      { return c.ID }
