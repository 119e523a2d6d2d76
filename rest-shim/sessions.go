package restshim

import (
	"net/http"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// The business feeds run one federated operation through the router: the
// sessions and their users from users, the cigar from the catalog, the venue
// from venues. The REST contract predates the graph's PublicSession node: it
// names the user's avatar avatarUrl and the session by its ses_ ID (see
// restSessionID).
const feedSelection = `sessions(limit: $limit, offset: $offset, from: $from, to: $to, featured: $featured) {
  count items { id createdAt startedAt endedAt durationSeconds rating note featured
    user { id displayName avatarUrl: imageUrl } cigar { id name brand { name } } venue { id name } } }`

var (
	opVenueFeed = subgraph.MustParse(`query VenueFeed($id: ID!, $limit: Int, $offset: Int, $from: String, $to: String, $featured: Boolean) {
  business: venue(id: $id) { ` + feedSelection + ` } }`)
	opBrandFeed = subgraph.MustParse(`query BrandFeed($id: ID!, $limit: Int, $offset: Int, $from: String, $to: String, $featured: Boolean) {
  business: brand(id: $id) { ` + feedSelection + ` } }`)
)

// Feed paging: the same defaults as the subgraph's rules, checked here too so
// that a bad value is a clear 400 before any call.
const (
	feedDefaultLimit = 20
	feedMaxLimit     = 100
)

type feedSession struct {
	ID              string   `json:"id"`
	CreatedAt       string   `json:"createdAt"`
	StartedAt       *string  `json:"startedAt,omitempty"`
	EndedAt         *string  `json:"endedAt,omitempty"`
	DurationSeconds *int     `json:"durationSeconds,omitempty"`
	Rating          *float64 `json:"rating,omitempty"`
	Note            *string  `json:"note,omitempty"`
	Featured        bool     `json:"featured"`
	User            struct {
		ID          string  `json:"id"`
		DisplayName string  `json:"displayName"`
		AvatarURL   *string `json:"avatarUrl"` // null when the user has none, never absent
	} `json:"user"`
	Cigar *feedCigar `json:"cigar,omitempty"`
	Venue *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"venue,omitempty"`
}

// feedCigar is the REST shape: the brand's name flattened into brandName.
type feedCigar struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	BrandName string `json:"brandName,omitempty"`
	Brand     *struct {
		Name string `json:"name"`
	} `json:"brand,omitempty"`
}

// restSessionID is the ID the REST feed has always shown for a session: the
// smoke session's own (ses_), where the graph gives the public view its own
// pse_ ID with the same body.
func restSessionID(pse string) string {
	if id, ok := ids.Retype(pse, ids.SmokeSession); ok {
		return id
	}
	return pse
}

// GET /venues/{id}/sessions and /brands/{id}/sessions.
func handleBusinessSessions(router *subgraph.Client, op *subgraph.Operation, business string, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		vars := map[string]any{"id": r.PathValue("id")}
		limit, offset := feedDefaultLimit, 0
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > feedMaxLimit {
				apierr.Write(w, http.StatusBadRequest, "invalid_limit", "limit must be a whole number from 1 to 100")
				return
			}
			limit = n
		}
		if v := q.Get("offset"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				apierr.Write(w, http.StatusBadRequest, "invalid_offset", "offset must be a whole number, 0 or more")
				return
			}
			offset = n
		}
		vars["limit"], vars["offset"] = limit, offset
		for _, k := range []string{"from", "to"} {
			if v := q.Get(k); v != "" {
				vars[k] = v
			}
		}
		switch v := q.Get("featured"); v {
		case "":
		case "true", "false":
			vars["featured"] = v == "true"
		default:
			apierr.Write(w, http.StatusBadRequest, "invalid_featured", "featured must be true or false")
			return
		}
		var data struct {
			Business *struct {
				Sessions struct {
					Count int           `json:"count"`
					Items []feedSession `json:"items"`
				} `json:"sessions"`
			} `json:"business"`
		}
		if err := router.Do(r.Context(), op, vars, &data); err != nil {
			subgraphFailure(w, log, "the graph", err)
			return
		}
		if data.Business == nil {
			apierr.Write(w, http.StatusNotFound, "business_not_found", "no "+business+" with id "+apierr.Quote(r.PathValue("id")))
			return
		}
		items := data.Business.Sessions.Items
		for i := range items {
			items[i].ID = restSessionID(items[i].ID)
			if c := items[i].Cigar; c != nil && c.Brand != nil {
				c.BrandName, c.Brand = c.Brand.Name, nil
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": items, "meta": map[string]int{"count": data.Business.Sessions.Count, "limit": limit, "offset": offset}})
	})
}
