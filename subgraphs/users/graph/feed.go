package graph

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/timestamp"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
	"github.com/vitolahq/vitola/subgraphs/users"
	"github.com/vitolahq/vitola/subgraphs/users/graph/model"
)

// Feed limits: a page holds 20 sessions unless asked otherwise, 100 at most.
const (
	FeedDefaultLimit = 20
	FeedMaxLimit     = 100
	FeedMaxOffset    = 10000
)

// feedBound reads a from/to bound: an RFC 3339 date-time, or a date (a date-only
// "to" includes that whole day).
func feedBound(v *string, end bool) (string, error) {
	if v == nil || *v == "" {
		return "", nil
	}
	if t, err := time.Parse(time.RFC3339Nano, *v); err == nil {
		return timestamp.Format(t), nil
	}
	d, err := time.Parse(time.DateOnly, *v)
	if err != nil {
		return "", fmt.Errorf("%s is not an ISO date (2026-01-02) or date-time (2026-01-02T03:04:05Z)", apierr.Quote(*v))
	}
	if end {
		d = d.Add(24*time.Hour - time.Millisecond)
	}
	return timestamp.Format(d), nil
}

// feed answers Venue.sessions and Brand.sessions: public sessions of public
// profiles only (private sessions and every session of a private profile never
// appear), newest first.
func (r *Resolver) feed(ctx context.Context, q users.FeedQuery, limit, offset *int, from, to *string, featured *bool) (*model.SessionFeed, error) {
	q.Limit, q.Offset = FeedDefaultLimit, 0
	if limit != nil {
		if *limit < 1 || *limit > FeedMaxLimit {
			return nil, subgraph.Invalid(ctx, "limit", fmt.Sprintf("limit must be 1 to %d", FeedMaxLimit))
		}
		q.Limit = *limit
	}
	if offset != nil {
		if *offset < 0 || *offset > FeedMaxOffset {
			return nil, subgraph.Invalid(ctx, "offset", fmt.Sprintf("offset must be 0 to %d", FeedMaxOffset))
		}
		q.Offset = *offset
	}
	var err error
	if q.From, err = feedBound(from, false); err != nil {
		return nil, subgraph.Invalid(ctx, "from", "from: "+err.Error())
	}
	if q.To, err = feedBound(to, true); err != nil {
		return nil, subgraph.Invalid(ctx, "to", "to: "+err.Error())
	}
	if q.From != "" && q.To != "" && q.From > q.To {
		return nil, subgraph.Invalid(ctx, "range", "from is after to")
	}
	q.FeaturedOnly = featured != nil && *featured
	items, count, err := r.Data.BusinessSessions(ctx, q)
	if err != nil {
		return nil, err
	}
	out := &model.SessionFeed{Count: count, Items: make([]*model.PublicSession, len(items))}
	for i, s := range items {
		out.Items[i] = publicSession(s)
	}
	return out, nil
}

// publicSession is a feed item: the session under its own public ID (pse_, the
// same body as its ses_ ID) and the user's public profile.
func publicSession(s *users.FeedSession) *model.PublicSession {
	id, _ := ids.Retype(s.ID, ids.PublicSession)
	started := s.StartedAt
	user := s.User
	p := &model.PublicSession{ID: id, CreatedAt: s.CreatedAt, StartedAt: &started, EndedAt: s.EndedAt, DurationSeconds: s.DurationSeconds,
		Rating: s.Rating, Note: s.Note, Featured: s.Featured, User: &user}
	if s.CigarID != nil {
		p.Cigar = &model.Cigar{ID: *s.CigarID}
	}
	if s.VenueID != nil {
		p.Venue = &model.Venue{ID: *s.VenueID}
	}
	return p
}

// publicSessionByID answers node(id:) for a pse_ ID: the session exactly while a
// feed shows it (public, of a public profile), to any caller; nil otherwise, as
// for an ID that does not exist. A ses_ ID is never read as one.
func (r *Resolver) publicSessionByID(ctx context.Context, id string) (*model.PublicSession, error) {
	if !ids.Valid(id, ids.PublicSession) {
		return nil, nil
	}
	sesID, _ := ids.Retype(id, ids.SmokeSession)
	s, err := r.Data.SmokeSession(ctx, sesID)
	if errors.Is(err, users.ErrNotFound) || (err == nil && s.Visibility != "public") {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u, err := r.Store.User(ctx, s.UserID)
	if errors.Is(err, users.ErrNotFound) || (err == nil && u.Private) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return publicSession(&users.FeedSession{SmokeSession: *s, User: *publicProfile(u)}), nil
}
