package restshim

import (
	"net/http"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

var (
	// opSessionRefs checks, through the router, that the cigar and the venue
	// a session names exist, and reads the cigar's brand.
	opSessionRefs = subgraph.MustParse(`query SessionRefs($cigar: ID!, $venue: ID!, $withCigar: Boolean!, $withVenue: Boolean!) {
  cigar(id: $cigar) @include(if: $withCigar) { id brand { id } }
  venue(id: $venue) @include(if: $withVenue) { id } }`)
	opStartSession = subgraph.MustParse(`query StartSmokeSession($cigarId: ID, $brandId: ID, $venueId: ID, $startedAt: String, $endedAt: String,
  $durationSeconds: Int, $rating: Float, $note: String, $visibility: String!) {
  startSmokeSession(cigarId: $cigarId, brandId: $brandId, venueId: $venueId, startedAt: $startedAt, endedAt: $endedAt,
    durationSeconds: $durationSeconds, rating: $rating, note: $note, visibility: $visibility) {
    id cigar { id } venue { id } startedAt endedAt durationSeconds rating note featured visibility createdAt } }`)
)

// newSessionBody is POST /v1/me/sessions's body.
type newSessionBody struct {
	CigarID         *string  `json:"cigarId"`
	VenueID         *string  `json:"venueId"`
	StartedAt       *string  `json:"startedAt"`
	EndedAt         *string  `json:"endedAt"`
	DurationSeconds *int     `json:"durationSeconds"`
	Rating          *float64 `json:"rating"`
	Note            *string  `json:"note"`
	Visibility      *string  `json:"visibility"`
}

// maxSessionBody bounds the body: a note of 2000 characters and the rest.
const maxSessionBody = 16 << 10

const sessionUsage = `the body is a JSON object: {"cigarId", "venueId", "startedAt", "endedAt", "durationSeconds", "rating", "note", "visibility": "public" or "private"}, every member optional`

// POST /v1/me/sessions: the connected user's app records a smoke session
// (x-service-key and an access token with sessions:write). The cigar and the
// venue must exist (422 unknown_cigar, unknown_venue); the users subgraph
// checks the rest and announces the session to the live subscriptions.
func handleStartSession(tokens *access.Tokens, users, router *subgraph.Client, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, ok := connectedUser(w, r, tokens)
		if !ok {
			return
		}
		var b newSessionBody
		if !readJSON(w, r, maxSessionBody, &b, sessionUsage) {
			return
		}
		vars := map[string]any{"visibility": "private"} // private unless the user says otherwise
		if b.Visibility != nil {
			vars["visibility"] = *b.Visibility
		}
		for k, v := range map[string]any{"startedAt": b.StartedAt, "endedAt": b.EndedAt, "note": b.Note} {
			if p := v.(*string); p != nil {
				vars[k] = *p
			}
		}
		if b.DurationSeconds != nil {
			vars["durationSeconds"] = *b.DurationSeconds
		}
		if b.Rating != nil {
			vars["rating"] = *b.Rating
		}
		if b.CigarID != nil || b.VenueID != nil {
			var refs struct {
				Cigar *struct {
					ID    string `json:"id"`
					Brand *struct {
						ID string `json:"id"`
					} `json:"brand"`
				} `json:"cigar"`
				Venue *struct {
					ID string `json:"id"`
				} `json:"venue"`
			}
			err := router.Do(r.Context(), opSessionRefs, map[string]any{"cigar": deref(b.CigarID), "venue": deref(b.VenueID),
				"withCigar": b.CigarID != nil, "withVenue": b.VenueID != nil}, &refs)
			if err != nil {
				subgraphFailure(w, log, "the graph", err)
				return
			}
			if b.CigarID != nil && refs.Cigar == nil {
				apierr.Write(w, http.StatusUnprocessableEntity, "unknown_cigar", "no cigar with id "+apierr.Quote(*b.CigarID))
				return
			}
			if b.VenueID != nil && refs.Venue == nil {
				apierr.Write(w, http.StatusUnprocessableEntity, "unknown_venue", "no venue with id "+apierr.Quote(*b.VenueID))
				return
			}
			if refs.Cigar != nil {
				vars["cigarId"] = refs.Cigar.ID
				if refs.Cigar.Brand != nil {
					vars["brandId"] = refs.Cigar.Brand.ID
				}
			}
			if refs.Venue != nil {
				vars["venueId"] = refs.Venue.ID
			}
		}
		var data struct {
			Session map[string]any `json:"startSmokeSession"`
		}
		err := users.Do(ctx, opStartSession, vars, &data)
		switch {
		case userRefusal(w, err, "sessions:write"):
			return
		case err != nil: // INVALID_<FIELD> is a 400 invalid_<field> (refusals.go)
			subgraphFailure(w, log, "the users service", err)
			return
		}
		for k, v := range data.Session {
			if v == nil {
				delete(data.Session, k)
			}
		}
		for _, k := range []string{"cigar", "venue"} { // {id} objects become cigarId, venueId
			if o, ok := data.Session[k].(map[string]any); ok {
				data.Session[k+"Id"] = o["id"]
				delete(data.Session, k)
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusCreated, map[string]any{"data": data.Session})
	})
}
