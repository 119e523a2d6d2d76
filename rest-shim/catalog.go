package restshim

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// The catalog routes' internal operations, parsed when the shim starts. Field
// names are the REST names, so results pass through as they are.
const (
	// The catalog renders a cigar's REST representation in one piece: walking
	// its fields one resolver at a time costs several times more.
	cigarFields = `
fragment CigarFields on Cigar { document }`
	productFields = `
fragment ProductFields on Product { document }`
)

var (
	// The catalog renders the whole page: {data: [cigar], pagination}.
	opSearchCigars = subgraph.MustParse(`query SearchPage($q: String!, $first: Int!, $after: String, $brand: String) {
  searchPage(query: $q, first: $first, after: $after, brand: $brand)
}`)
	opCigar            = subgraph.MustParse(`query Cigar($id: ID!) { cigar(id: $id) { ...CigarFields } }` + cigarFields)
	opProduct          = subgraph.MustParse(`query Product($id: ID!) { product(id: $id) { ...ProductFields } }` + productFields)
	opProductByBarcode = subgraph.MustParse(`query ProductByBarcode($code: String!) { productByBarcode(barcode: $code) { ...ProductFields } }` + productFields)
)

// The catalog renders the whole answer: {resolved, match, candidates}.
var opResolvePage = subgraph.MustParse(`query ResolvePage($text: String!, $brand: String, $limit: Int!) {
  resolvePage(text: $text, brand: $brand, limit: $limit)
}`)

// catalogOperations lists every internal operation on the catalog, for the test
// that validates them against its schema.
var catalogOperations = []*subgraph.Operation{opSearchCigars, opCigar, opProduct, opProductByBarcode, opResolvePage}

// Rules of the search route.
const (
	minQueryLen  = 2
	maxQueryLen  = 200
	defaultLimit = 20
	maxLimit     = 100
	maxBrandLen  = 200
	maxCursorLen = 500
	maxPathIDLen = 100
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// subgraphFailure maps an internal call's error to the REST error body: a
// subgraph's refusal is the client's (refusalStatus); anything else is ours,
// and names what was called (the catalog, users, the graph).
func subgraphFailure(w http.ResponseWriter, log zerolog.Logger, what string, err error) {
	if re, ok := refusal(err); ok {
		re.write(w)
		return
	}
	var gerrs subgraph.Errors
	if errors.As(err, &gerrs) && gerrs.Code() == "BAD_USER_INPUT" {
		apierr.Write(w, http.StatusBadRequest, apierr.CodeBadRequest, gerrs[0].Message)
		return
	}
	log.Error().Err(err).Str("called", what).Msg("internal call failed")
	apierr.Write(w, http.StatusBadGateway, apierr.CodeUnavailable, what+" is unavailable; try again shortly")
}

// GET /v1/cigars/search?q=&brand=&limit=&cursor=
func handleSearchCigars(catalog *subgraph.Client, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		text := q.Get("q")
		if n := utf8.RuneCountInString(strings.TrimSpace(text)); n < minQueryLen || utf8.RuneCountInString(text) > maxQueryLen {
			apierr.Write(w, http.StatusBadRequest, "invalid_query", "q is required: 2 to 200 characters of search text")
			return
		}
		limit := defaultLimit
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxLimit {
				apierr.Write(w, http.StatusBadRequest, "invalid_limit", "limit must be a whole number from 1 to 100")
				return
			}
			limit = n
		}
		vars := map[string]any{"q": text, "first": limit}
		if b := q.Get("brand"); b != "" {
			if utf8.RuneCountInString(b) > maxBrandLen {
				apierr.Write(w, http.StatusBadRequest, "invalid_brand", "brand must be at most 200 characters")
				return
			}
			vars["brand"] = b
		}
		if c := q.Get("cursor"); c != "" {
			if len(c) > maxCursorLen {
				apierr.Write(w, http.StatusBadRequest, "invalid_cursor", "cursor is not a cursor of this search: pass pagination.endCursor unchanged")
				return
			}
			vars["after"] = c
		}
		// The page goes out from the buffer it came in, which is reused after.
		err := catalog.WriteField(r.Context(), opSearchCigars, vars, "searchPage", func(page json.RawMessage) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Write(append(page, '\n'))
		})
		if err != nil {
			subgraphFailure(w, log, "the catalog", err)
		}
	})
}

// getOne serves a route that fetches one object by a path value: 404 when the
// catalog has none.
func getOne(catalog *subgraph.Client, log zerolog.Logger, op *subgraph.Operation, field, param, varName, notFound, what string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.PathValue(param)
		var data map[string]*struct {
			Document json.RawMessage `json:"document"`
		}
		if len(v) <= maxPathIDLen {
			if err := catalog.Do(r.Context(), op, map[string]any{varName: v}, &data); err != nil {
				subgraphFailure(w, log, "the catalog", err)
				return
			}
		}
		var obj json.RawMessage
		if d := data[field]; d != nil {
			obj = d.Document
		}
		if len(obj) == 0 {
			apierr.Write(w, http.StatusNotFound, notFound, "no "+what+" with "+param+" "+apierr.Quote(v))
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(append(append([]byte(`{"data":`), obj...), "}\n"...))
	})
}

// Rules of the resolve route.
const (
	defaultResolveLimit = 5
	maxResolveLimit     = 10
	maxBodyBytes        = 64 << 10
)

// POST /v1/cigars/resolve {query | name, brand, limit}
func handleResolveCigar(catalog *subgraph.Client, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Query *string `json:"query"`
			Name  *string `json:"name"`
			Brand *string `json:"brand"`
			Limit *int    `json:"limit"`
		}
		if !readJSON(w, r, maxBodyBytes, &body, "the body must be a JSON object with query or name, and optionally brand and limit") {
			return
		}
		var text string
		switch {
		case body.Query != nil && body.Name != nil:
			apierr.Write(w, http.StatusBadRequest, "invalid_body", "give query (all the text) or name (the cigar's name, with brand apart), not both")
			return
		case body.Query != nil:
			text = *body.Query
		case body.Name != nil:
			text = *body.Name
		default:
			apierr.Write(w, http.StatusBadRequest, "invalid_body", "query or name is required")
			return
		}
		if n := utf8.RuneCountInString(strings.TrimSpace(text)); n < minQueryLen || utf8.RuneCountInString(text) > maxQueryLen {
			apierr.Write(w, http.StatusBadRequest, "invalid_query", "query or name must be 2 to 200 characters")
			return
		}
		vars := map[string]any{"text": text, "limit": defaultResolveLimit}
		if body.Limit != nil {
			if *body.Limit < 1 || *body.Limit > maxResolveLimit {
				apierr.Write(w, http.StatusBadRequest, "invalid_limit", "limit must be a whole number from 1 to 10")
				return
			}
			vars["limit"] = *body.Limit
		}
		if body.Brand != nil && *body.Brand != "" {
			if utf8.RuneCountInString(*body.Brand) > maxBrandLen {
				apierr.Write(w, http.StatusBadRequest, "invalid_brand", "brand must be at most 200 characters")
				return
			}
			vars["brand"] = *body.Brand
		}
		// The answer goes out from the buffer it came in, which is reused after.
		err := catalog.WriteField(r.Context(), opResolvePage, vars, "resolvePage", func(page json.RawMessage) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Write(append(page, '\n'))
		})
		if err != nil {
			subgraphFailure(w, log, "the catalog", err)
		}
	})
}
