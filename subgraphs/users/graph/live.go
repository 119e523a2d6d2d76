package graph

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/internal/bus"
	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
	"github.com/vitolahq/vitola/subgraphs/users"
	"github.com/vitolahq/vitola/subgraphs/users/graph/model"
)

// Live events: a write publishes on the bus after its transaction commits;
// every replica's subscription resolvers read the bus (internal/bus says why
// Redis pub/sub, and what is lost when Redis is down).

// Topics of the users subgraph on the bus.
const (
	TopicSessions    = "users.sessions"
	TopicRevocations = "users.revocations"
)

// PublishTimeout bounds one publication: a bus that is down or slow loses
// the event (logged, counted in the bus's Stats) instead of stalling the write.
const PublishTimeout = 500 * time.Millisecond

// RevocationRecheck is how often an open mySmokeSessionStarted checks its
// token even without a revocation event (one lost while Redis was down, or a
// family revoked because a refresh token or a code was replayed, which
// publishes none).
const RevocationRecheck = 30 * time.Second

// sessionEvent is a smoke session just recorded, with its owner's public
// profile when both the session and the profile are public: what the feed
// would show, decided when it is published.
type sessionEvent struct {
	Session users.SmokeSession `json:"session"`
	Profile *users.User        `json:"profile,omitempty"`
}

// revocationEvent names the access token (jti) or the refresh-token family
// revoked.
type revocationEvent struct {
	TokenID  string `json:"tid,omitempty"`
	FamilyID string `json:"fam,omitempty"`
}

// publish hands v to the bus within PublishTimeout, even when the request
// that wrote it is gone; a failure is logged, never returned.
func (r *Resolver) publish(ctx context.Context, topic string, v any) {
	if r.Bus == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		r.Log.Error().Err(err).Str("topic", topic).Msg("live event not encoded")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), PublishTimeout)
	defer cancel()
	if err := r.Bus.Publish(ctx, topic, b); err != nil {
		r.Log.Warn().Err(err).Str("topic", topic).Msg("live event lost: the bus did not take it (the write itself is saved)")
	}
}

// publishSession announces a session just saved.
func (r *Resolver) publishSession(ctx context.Context, s *users.SmokeSession) {
	ev := sessionEvent{Session: *s}
	if s.Visibility == "public" {
		u, err := r.Store.User(ctx, s.UserID)
		if err != nil {
			r.Log.Warn().Err(err).Msg("live session event: owner not read; sent to its owner only")
		} else if !u.Private {
			ev.Profile = publicProfile(u)
		}
	}
	r.publish(ctx, TopicSessions, ev)
}

// PublishRevocation tells every replica's streams that an access token (jti)
// or a family was revoked.
func (r *Resolver) PublishRevocation(ctx context.Context, tokenID, familyID string) {
	r.publish(ctx, TopicRevocations, revocationEvent{TokenID: tokenID, FamilyID: familyID})
}

// feedEvent is the PublicSession a sessionStarted stream sends for ev, or nil
// when ev is not for it: the feed's rules (a public session of a public
// profile), then the venue and brand filters.
func feedEvent(ev *sessionEvent, venue, brand string) *model.PublicSession {
	s := &ev.Session
	if ev.Profile == nil || s.Visibility != "public" {
		return nil
	}
	if venue != "" && (s.VenueID == nil || *s.VenueID != venue) {
		return nil
	}
	if brand != "" && (s.BrandID == nil || *s.BrandID != brand) {
		return nil
	}
	return publicSession(&users.FeedSession{SmokeSession: *s, User: *ev.Profile})
}

// sessionStartedArgs checks sessionStarted's filters: at least one, each an ID
// of its kind.
func sessionStartedArgs(ctx context.Context, venue, brand *string) (string, string, error) {
	v, b := deref(venue), deref(brand)
	if v == "" && b == "" {
		return "", "", subgraph.BadInput(ctx, "give venue, brand or both: sessionStarted streams one venue's or one brand's sessions")
	}
	if v != "" && !ids.Valid(v, ids.Venue) {
		return "", "", subgraph.BadInput(ctx, "venue must be a venue ID (ven_...)")
	}
	if b != "" && !ids.Valid(b, ids.Brand) {
		return "", "", subgraph.BadInput(ctx, "brand must be a brand ID (brd_...)")
	}
	return v, b, nil
}

// tokenRevoked ends a connected user's stream when its token is revoked:
// asked once the stream listens (fresh), on each revocation event (payload)
// and every RevocationRecheck (neither). An event about another token costs
// nothing; otherwise the store answers, uncached when fresh (a revocation
// whose event was published before the stream listened, which the cached
// verdict of the subscribe-time check may not know yet) or on an event (it
// was published after the revocation committed).
func (r *Resolver) tokenRevoked(caller trust.Identity) endCheck {
	return func(ctx context.Context, payload []byte, fresh bool) *gqlerror.Error {
		if caller.TokenID == "" || r.Auth == nil {
			return nil
		}
		var revoked bool
		var err error
		switch {
		case fresh:
			revoked, err = r.Auth.Grants.AccessTokenRevoked(ctx, caller.TokenID, caller.FamilyID)
		case payload == nil:
			revoked, err = r.Auth.AccessTokenRevoked(ctx, caller.TokenID, caller.FamilyID)
		default:
			var ev revocationEvent
			if json.Unmarshal(payload, &ev) != nil {
				return nil
			}
			if !(ev.TokenID != "" && ev.TokenID == caller.TokenID) && !(ev.FamilyID != "" && ev.FamilyID == caller.FamilyID) {
				return nil // another token's: nothing to ask the store
			}
			revoked, err = r.Auth.Grants.AccessTokenRevoked(ctx, caller.TokenID, caller.FamilyID)
		}
		if err != nil {
			r.Log.Warn().Err(err).Msg("subscription: revocation check failed; the stream goes on")
			return nil
		}
		if revoked {
			return subgraph.StreamError("TOKEN_REVOKED", "the access token this subscription was opened with has been revoked")
		}
		return nil
	}
}

// endCheck says whether a stream must end (its error), asked once the stream
// listens (fresh), on each revocation event (payload) and now and then.
type endCheck func(ctx context.Context, payload []byte, fresh bool) *gqlerror.Error

// stream runs one subscription: it reads topic from the bus and sends what
// pick makes of each event (nil: not for this subscriber) until the
// subscriber leaves, the bus drops it (a slow consumer: its bus buffer fills
// while the router is not reading), or ended (when set) returns an error.
func stream[T any](ctx context.Context, r *Resolver, topic string, pick func(payload []byte) *T,
	ended endCheck) (<-chan *T, error) {
	if r.Bus == nil {
		return nil, coded(ctx, "UNAVAILABLE", "live events are not served here")
	}
	events := r.Bus.Subscribe(topic)
	var revocations *bus.Subscription
	var revoked <-chan []byte
	var recheck <-chan time.Time
	var ticker *time.Ticker
	if ended != nil {
		revocations = r.Bus.Subscribe(TopicRevocations)
		revoked = revocations.Events()
		ticker = time.NewTicker(RevocationRecheck)
		recheck = ticker.C
	}
	out := make(chan *T, 1)
	go func() {
		defer close(out)
		defer events.Close()
		if revocations != nil {
			defer revocations.Close()
			defer ticker.Stop()
			// Listening now: what ended before comes from the store.
			if err := ended(ctx, nil, true); err != nil {
				subgraph.EndStream(ctx, err)
				return
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case p, ok := <-events.Events():
				if !ok {
					subgraph.EndStream(ctx, busEnded(events.Err()))
					return
				}
				v := pick(p)
				if v == nil {
					continue
				}
				select {
				case out <- v:
				case <-ctx.Done():
					return
				}
			case p, ok := <-revoked:
				if !ok {
					subgraph.EndStream(ctx, busEnded(revocations.Err()))
					return
				}
				if err := ended(ctx, p, false); err != nil {
					subgraph.EndStream(ctx, err)
					return
				}
			case <-recheck:
				if err := ended(ctx, nil, false); err != nil {
					subgraph.EndStream(ctx, err)
					return
				}
			}
		}
	}()
	return out, nil
}

// busEnded is the error a stream ends with when the bus ends it.
func busEnded(err error) *gqlerror.Error {
	switch {
	case errors.Is(err, bus.ErrSlowConsumer):
		return subgraph.StreamError("SLOW_CONSUMER", "the subscriber fell behind: events came faster than it read them, and it was dropped")
	case errors.Is(err, bus.ErrClosed):
		return subgraph.StreamError("SHUTTING_DOWN", "the server is shutting down: subscribe again")
	default:
		return subgraph.StreamError("STREAM_ENDED", "the event stream ended: subscribe again")
	}
}

// decodedSession is the last session event a stream decoded, by its
// payload's first byte: every stream of this replica receives the same
// payload slice from the bus, so one of them decodes it and the others reuse
// the result (read-only) instead of decoding it once per subscriber.
type decodedSession struct {
	first *byte
	n     int
	ev    *sessionEvent
}

// decodeSession reads a session event (nil when it is not one).
func (r *Resolver) decodeSession(payload []byte) *sessionEvent {
	if len(payload) == 0 {
		return nil
	}
	if d := r.lastSession.Load(); d != nil && d.first == &payload[0] && d.n == len(payload) {
		return d.ev
	}
	ev := &sessionEvent{}
	if json.Unmarshal(payload, ev) != nil || ev.Session.ID == "" {
		ev = nil
	}
	r.lastSession.Store(&decodedSession{first: &payload[0], n: len(payload), ev: ev})
	return ev
}
