// Package importer loads smoke sessions from a JSON Lines file, one session per
// line:
//
//	{"userEmail": "ana@example.com", "cigarId": "cig_…", "venue": "The Ember Room",
//	 "startedAt": "2026-11-20T20:00:00Z", "endedAt": "2026-11-20T21:10:00Z",
//	 "rating": 4.5, "note": "Cedar and cocoa.", "featured": true, "visibility": "public"}
//
// Every line is checked first; then every reference (the user, the cigar, the
// venue) is resolved; then the whole file lands in one transaction, so a bad line
// leaves the store as it was. A session is upserted by its user and ref, so
// importing the same file again changes nothing.
package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/jsonlines"
	"github.com/vitolahq/vitola/internal/timestamp"
	"github.com/vitolahq/vitola/subgraphs/users"
)

// Record is one line of a sessions file.
type Record struct {
	// Ref is the session's stable key among its user's sessions (default: its
	// startedAt).
	Ref string `json:"ref,omitempty"`
	// UserEmail or UserID names an existing user; give exactly one.
	UserEmail string `json:"userEmail,omitempty"`
	UserID    string `json:"userId,omitempty"`
	// CigarID is a catalog cigar's public ID (optional).
	CigarID string `json:"cigarId,omitempty"`
	// Venue is a venue's ref (its name unless imported with another) and VenueID
	// its public ID; both optional, at most one.
	Venue   string `json:"venue,omitempty"`
	VenueID string `json:"venueId,omitempty"`
	// StartedAt, EndedAt and CreatedAt are RFC 3339 date-times; CreatedAt (the
	// feed's order) defaults to StartedAt.
	StartedAt string  `json:"startedAt"`
	EndedAt   *string `json:"endedAt,omitempty"`
	CreatedAt string  `json:"createdAt,omitempty"`
	// DurationSeconds defaults to the time from start to end.
	DurationSeconds *int     `json:"durationSeconds,omitempty"`
	Rating          *float64 `json:"rating,omitempty"`
	Note            *string  `json:"note,omitempty"`
	Featured        bool     `json:"featured,omitempty"`
	// Visibility is public or private (the default: nothing is published unless
	// the file says so).
	Visibility string `json:"visibility,omitempty"`
	Line       int    `json:"-"`

	session users.SmokeSession
}

// Limits of a session's fields.
const (
	MaxNote   = 2000
	MaxRating = 5
	maxRef    = 200
)

// Parse reads and checks every line; it stops at the first bad line. References
// are resolved by Apply.
func Parse(r io.Reader) ([]Record, error) {
	seen := map[string]int{}
	return jsonlines.Read(r, "a session", func(rec *Record, n int) error {
		rec.Line = n
		if err := rec.check(); err != nil {
			return err
		}
		key := rec.UserEmail + "\x00" + rec.UserID + "\x00" + rec.Ref
		if prev, dup := seen[key]; dup {
			return fmt.Errorf("this user's session %q is already on line %d", rec.Ref, prev)
		}
		seen[key] = n
		return nil
	})
}

func (r *Record) check() error {
	switch {
	case (r.UserEmail == "") == (r.UserID == ""):
		return errors.New("give the session's user: userEmail or userId, not both")
	case r.UserID != "" && !ids.Valid(r.UserID, ids.User):
		return fmt.Errorf("userId %q is not a user ID (usr_…)", r.UserID)
	case r.CigarID != "" && !ids.Valid(r.CigarID, ids.Cigar):
		return fmt.Errorf("cigarId %q is not a cigar ID (cig_…)", r.CigarID)
	case r.Venue != "" && r.VenueID != "":
		return errors.New("give venue or venueId, not both")
	case r.VenueID != "" && !ids.Valid(r.VenueID, ids.Venue):
		return fmt.Errorf("venueId %q is not a venue ID (ven_…)", r.VenueID)
	case r.Rating != nil && (*r.Rating < 0 || *r.Rating > MaxRating):
		return fmt.Errorf("rating %v must be from 0 to %d", *r.Rating, MaxRating)
	case r.Note != nil && len([]rune(*r.Note)) > MaxNote:
		return fmt.Errorf("note is longer than %d characters", MaxNote)
	case r.DurationSeconds != nil && *r.DurationSeconds < 0:
		return errors.New("durationSeconds must not be negative")
	}
	s := &r.session
	s.Visibility = r.Visibility
	if s.Visibility == "" {
		s.Visibility = "private"
	}
	if s.Visibility != "public" && s.Visibility != "private" {
		return fmt.Errorf("visibility %q: want public or private", r.Visibility)
	}
	started, err := jsonlines.Time("startedAt", r.StartedAt)
	if err != nil {
		return err
	}
	s.StartedAt = timestamp.Format(started)
	s.CreatedAt = s.StartedAt
	if r.CreatedAt != "" {
		created, err := jsonlines.Time("createdAt", r.CreatedAt)
		if err != nil {
			return err
		}
		s.CreatedAt = timestamp.Format(created)
	}
	s.DurationSeconds = r.DurationSeconds
	if r.EndedAt != nil {
		ended, err := jsonlines.Time("endedAt", *r.EndedAt)
		if err != nil {
			return err
		}
		if ended.Before(started) {
			return errors.New("endedAt must not be before startedAt")
		}
		end := timestamp.Format(ended)
		s.EndedAt = &end
		if s.DurationSeconds == nil {
			d := int(ended.Sub(started) / time.Second)
			s.DurationSeconds = &d
		}
	}
	if r.Ref == "" {
		r.Ref = s.StartedAt
	}
	if r.Ref, err = jsonlines.Text("ref", r.Ref, maxRef); err != nil {
		return err
	}
	s.Rating, s.Note, s.Featured = r.Rating, r.Note, r.Featured
	if r.CigarID != "" {
		s.CigarID = &r.CigarID
	}
	return nil
}

// Refs finds what sessions refer to in the other subgraphs' stores (the catalog
// owns cigars, the venues subgraph venues). Their errors name what was not found.
type Refs interface {
	// CigarBrand returns the brand ID of the cigar with this public ID.
	CigarBrand(ctx context.Context, cigarID string) (string, error)
	// VenueID returns the public ID of the venue with this public ID or ref.
	VenueID(ctx context.Context, id, ref string) (string, error)
}

// Store is what the import needs of the users subgraph's store.
type Store interface {
	User(ctx context.Context, id string) (*users.User, error)
	UserByEmail(ctx context.Context, email string) (*users.User, error)
	SaveSmokeSessions(ctx context.Context, ss []*users.SmokeSession, progress func(done, total int)) error
}

// Summary says what an import did.
type Summary struct{ Sessions, Public int }

// Apply resolves every record's user, cigar and venue, then writes all the
// sessions in one transaction, reporting progress.
func Apply(ctx context.Context, store Store, refs Refs, recs []Record, progress func(done, total int)) (Summary, error) {
	var sum Summary
	out := make([]*users.SmokeSession, 0, len(recs))
	seen := map[string]int{}
	for _, r := range recs {
		s, err := resolve(ctx, store, refs, r)
		if err != nil {
			return Summary{}, &jsonlines.LineError{Line: r.Line, Err: err}
		}
		// userEmail and userId may name the same user on two lines.
		if prev, dup := seen[s.ID]; dup {
			return Summary{}, &jsonlines.LineError{Line: r.Line, Err: fmt.Errorf("the same session as line %d (same user and ref)", prev)}
		}
		seen[s.ID] = r.Line
		out = append(out, s)
		sum.Sessions++
		if s.Visibility == "public" {
			sum.Public++
		}
	}
	if err := store.SaveSmokeSessions(ctx, out, progress); err != nil {
		return Summary{}, err
	}
	return sum, nil
}

func resolve(ctx context.Context, store Store, refs Refs, r Record) (*users.SmokeSession, error) {
	s := r.session
	u, err := user(ctx, store, r)
	if err != nil {
		return nil, err
	}
	s.UserID = u.ID
	s.ID = ids.Derive(ids.SmokeSession, u.ID+"\x00"+r.Ref)
	if s.CigarID != nil {
		brand, err := refs.CigarBrand(ctx, *s.CigarID)
		if err != nil {
			return nil, err
		}
		s.BrandID = &brand
	}
	if r.Venue != "" || r.VenueID != "" {
		id, err := refs.VenueID(ctx, r.VenueID, r.Venue)
		if err != nil {
			return nil, err
		}
		s.VenueID = &id
	}
	return &s, nil
}

func user(ctx context.Context, store Store, r Record) (*users.User, error) {
	var u *users.User
	var err error
	if r.UserID != "" {
		u, err = store.User(ctx, r.UserID)
	} else {
		u, err = store.UserByEmail(ctx, strings.ToLower(strings.TrimSpace(r.UserEmail)))
	}
	if errors.Is(err, users.ErrNotFound) {
		return nil, fmt.Errorf("user %s has no account: create it first (vitola users create)", r.UserEmail+r.UserID)
	}
	return u, err
}
