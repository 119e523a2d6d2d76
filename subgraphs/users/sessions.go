package users

import (
	"fmt"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/timestamp"
)

// Limits of a session a user records.
const (
	MaxNoteRunes       = 2000
	MaxSessionDuration = 24 * time.Hour
	// MaxClockSkew is how far in the future a start may be (a phone's clock).
	MaxClockSkew = 5 * time.Minute
)

// NewSession is what a connected user's app sends to record a smoke session.
// CigarID, BrandID and VenueID were checked against their subgraphs by the
// caller (the shim); BrandID is the cigar's.
type NewSession struct {
	CigarID, BrandID, VenueID *string
	// StartedAt and EndedAt are RFC 3339; no StartedAt: now.
	StartedAt, EndedAt *string
	DurationSeconds    *int
	Rating             *float64
	Note               *string
	Visibility         string
}

// SessionError is a field of a NewSession that breaks a rule: Code is
// INVALID_<FIELD> (the shim answers it as a 400 invalid_<field>), Message says
// how to fix it.
type SessionError struct{ Code, Message string }

func (e *SessionError) Error() string { return e.Message }

func bad(code, format string, a ...any) error {
	return &SessionError{Code: code, Message: fmt.Sprintf(format, a...)}
}

// Prepare validates n and returns the session to store for userID.
func (n NewSession) Prepare(userID string, now time.Time) (*SmokeSession, error) {
	now = now.UTC().Truncate(time.Millisecond)
	if n.Visibility != "public" && n.Visibility != "private" {
		return nil, bad("INVALID_VISIBILITY", "visibility must be public or private")
	}
	// The shim passes IDs it read from their subgraphs: a malformed one is its bug.
	for _, f := range []struct {
		field, prefix string
		v             *string
	}{{"cigar", ids.Cigar, n.CigarID}, {"brand", ids.Brand, n.BrandID}, {"venue", ids.Venue, n.VenueID}} {
		if f.v != nil && !ids.Valid(*f.v, f.prefix) {
			return nil, fmt.Errorf("%s must be a %s ID (%s_...)", f.field, f.field, f.prefix)
		}
	}
	started := now
	if n.StartedAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *n.StartedAt)
		if err != nil {
			return nil, bad("INVALID_STARTED_AT", "startedAt must be an RFC 3339 date-time (2026-11-28T20:00:00Z)")
		}
		if t.After(now.Add(MaxClockSkew)) {
			return nil, bad("INVALID_STARTED_AT", "startedAt is in the future")
		}
		started = t.UTC().Truncate(time.Millisecond)
	}
	s := &SmokeSession{ID: ids.New(ids.SmokeSession), UserID: userID, CigarID: n.CigarID, BrandID: n.BrandID, VenueID: n.VenueID,
		StartedAt: timestamp.Format(started), Note: n.Note, Visibility: n.Visibility, CreatedAt: timestamp.Format(now)}
	if n.EndedAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *n.EndedAt)
		if err != nil {
			return nil, bad("INVALID_ENDED_AT", "endedAt must be an RFC 3339 date-time (2026-11-28T21:00:00Z)")
		}
		if t.Before(started) || t.Sub(started) > MaxSessionDuration {
			return nil, bad("INVALID_ENDED_AT", "endedAt must be after startedAt, within %d hours", int(MaxSessionDuration.Hours()))
		}
		end := timestamp.Format(t)
		s.EndedAt = &end
		d := int(t.Sub(started).Seconds())
		s.DurationSeconds = &d
	}
	if n.DurationSeconds != nil {
		if *n.DurationSeconds < 0 || *n.DurationSeconds > int(MaxSessionDuration.Seconds()) {
			return nil, bad("INVALID_DURATION_SECONDS", "durationSeconds must be 0 to %d", int(MaxSessionDuration.Seconds()))
		}
		d := *n.DurationSeconds
		s.DurationSeconds = &d
	}
	if n.Rating != nil {
		if *n.Rating < 0 || *n.Rating > 5 {
			return nil, bad("INVALID_RATING", "rating must be 0 to 5")
		}
		r := *n.Rating
		s.Rating = &r
	}
	if n.Note != nil && len([]rune(*n.Note)) > MaxNoteRunes {
		return nil, bad("INVALID_NOTE", "note must be at most %d characters", MaxNoteRunes)
	}
	return s, nil
}
