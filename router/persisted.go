package router

// Trusted operations: automatic persisted queries (Apollo's APQ protocol) and
// trusted documents (registered from a client's build manifest), and the
// verdicts of the limits for each such document, computed once.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/jsonbody"
	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/router/limits"
)

// Error codes of persisted operations.
const (
	// CodePersistedQueryNotFound: a hash-only request whose hash the router
	// does not know; an APQ client then sends the text with the hash. The
	// message is Apollo's "PersistedQueryNotFound", which its clients match.
	CodePersistedQueryNotFound = "PERSISTED_QUERY_NOT_FOUND"
	// CodePersistedQueryHashMismatch: the text sent does not hash to the
	// sha256Hash sent with it.
	CodePersistedQueryHashMismatch = "PERSISTED_QUERY_HASH_MISMATCH"
	// CodePersistedQueryInvalid: extensions.persistedQuery is not
	// {version: 1, sha256Hash: 64 hex digits}.
	CodePersistedQueryInvalid = "PERSISTED_QUERY_INVALID"
	// CodePersistedDocumentNotFound: no trusted document has that documentId.
	CodePersistedDocumentNotFound = "PERSISTED_DOCUMENT_NOT_FOUND"
	// CodeTrustedDocumentsOnly: the key runs only trusted documents.
	CodeTrustedDocumentsOnly = "TRUSTED_DOCUMENTS_ONLY"
)

// APQTTL is how long Redis keeps an automatic persisted query after it was
// last registered.
const APQTTL = 24 * time.Hour

// Bounds of the in-process caches.
const (
	// apqMemoryBytes bounds the in-process APQ store (without Redis): the
	// texts it keeps, the least recently used going first.
	apqMemoryBytes = 16 << 20
	// docCacheBytes bounds the persisted documents whose verdicts the router
	// keeps (texts, and parsed documents when the cost depends on variables).
	docCacheBytes = 32 << 20
	// documentIDs bounds the trusted-document IDs remembered with their hash.
	documentIDs = 4096
)

// persistedQuery is extensions.persistedQuery of the APQ protocol.
type persistedQuery struct {
	Version    int    `json:"version"`
	SHA256Hash string `json:"sha256Hash"`
}

// persistedQueryOf reads extensions.persistedQuery, nil when absent.
func persistedQueryOf(ext json.RawMessage) (*persistedQuery, error) {
	if len(ext) == 0 || string(ext) == "null" {
		return nil, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(ext, &members); err != nil {
		return nil, errors.New("extensions must be a JSON object")
	}
	raw, ok := members["persistedQuery"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var pq persistedQuery
	if err := (jsonbody.Rules{}).Decode(raw, &pq); err != nil {
		return nil, errors.New("extensions.persistedQuery must be {\"version\": 1, \"sha256Hash\": \"…\"}: " + err.Error())
	}
	if pq.Version != 1 {
		return nil, errors.New("extensions.persistedQuery.version must be 1")
	}
	if b, err := hex.DecodeString(pq.SHA256Hash); err != nil || len(b) != 32 || strings.ToLower(pq.SHA256Hash) != pq.SHA256Hash {
		return nil, errors.New("extensions.persistedQuery.sha256Hash must be the lowercase hex SHA-256 of the query (64 digits)")
	}
	return &pq, nil
}

// apqStore keeps automatic persisted queries by hash: Redis (shared by
// replicas) when the platform has it, else a bounded in-process LRU.
type apqStore interface {
	get(ctx context.Context, hash string) (string, bool, error)
	set(ctx context.Context, hash, query string) error
}

type kvAPQ struct{ kv kv.Store }

func (s kvAPQ) get(ctx context.Context, hash string) (string, bool, error) {
	b, err := s.kv.Get(ctx, "apq:"+hash)
	if errors.Is(err, kv.ErrNotFound) {
		return "", false, nil
	}
	return string(b), err == nil, err
}

func (s kvAPQ) set(ctx context.Context, hash, query string) error {
	return s.kv.Set(ctx, "apq:"+hash, []byte(query), APQTTL)
}

// boundedLRU is an LRU bounded by the estimated bytes of its values.
type boundedLRU[V any] struct {
	c     *lru.Cache[string, V]
	bytes atomic.Int64
	max   int64
	size  func(V) int64
}

func newBoundedLRU[V any](maxBytes int64, size func(V) int64) *boundedLRU[V] {
	b := &boundedLRU[V]{max: maxBytes, size: size}
	// The count bound is only a backstop: bytes bind first.
	b.c, _ = lru.NewWithEvict(1<<20, func(_ string, v V) { b.bytes.Add(-size(v)) })
	return b
}

func (b *boundedLRU[V]) get(k string) (V, bool) { return b.c.Get(k) }

func (b *boundedLRU[V]) add(k string, v V) {
	n := b.size(v)
	if n > b.max {
		return
	}
	if found, _ := b.c.ContainsOrAdd(k, v); found {
		return
	}
	b.bytes.Add(n)
	for b.bytes.Load() > b.max {
		if _, _, ok := b.c.RemoveOldest(); !ok {
			break
		}
	}
}

type memoryAPQ struct{ c *boundedLRU[string] }

func newMemoryAPQ() memoryAPQ {
	return memoryAPQ{c: newBoundedLRU(apqMemoryBytes, func(q string) int64 { return int64(len(q)) + 64 })}
}

func (s memoryAPQ) get(_ context.Context, hash string) (string, bool, error) {
	q, ok := s.c.get(hash)
	return q, ok, nil
}

func (s memoryAPQ) set(_ context.Context, hash, query string) error {
	s.c.add(hash, query)
	return nil
}

// document is a persisted operation the router knows, with its verdict.
type document struct {
	query   string
	trusted bool // a trusted document (else an automatic persisted query)
	// known: a trusted document, or an APQ registered (its verdict passed), so
	// its hash alone runs it; a refused text's verdict is kept only for the
	// text sent again.
	known   atomic.Bool
	verdict *limits.Prepared
}

// persistence is the router's state for persisted operations.
type persistence struct {
	apq      apqStore
	docs     access.DocumentStore // nil: no trusted documents
	verdicts *boundedLRU[*document]
	ids      *lru.Cache[string, string] // trusted document ID -> its hash
	prepared atomic.Int64
	reused   atomic.Int64
}

func newPersistence(apq kv.Store, docs access.DocumentStore) *persistence {
	p := &persistence{docs: docs}
	if apq != nil {
		p.apq = kvAPQ{kv: apq}
	} else {
		p.apq = newMemoryAPQ()
	}
	p.verdicts = newBoundedLRU(docCacheBytes, func(d *document) int64 { return int64(len(d.query)) + d.verdict.Bytes() })
	p.ids, _ = lru.New[string, string](documentIDs)
	return p
}

// DocumentVerdicts reports how many persisted documents' limits were checked
// (prepared) and how many requests reused a verdict checked before.
func (rt *Router) DocumentVerdicts() (prepared, reused int64) {
	return rt.persist.prepared.Load(), rt.persist.reused.Load()
}

// verdict returns the document's cached verdict for the operation name, or
// checks the limits of its text once and keeps the verdict.
func (rt *Router) verdict(hash, operationName, query string, trusted bool) *document {
	key := hash + "\x00" + operationName
	if d, ok := rt.persist.verdicts.get(key); ok && (d.trusted || !trusted) {
		rt.persist.reused.Add(1)
		return d
	}
	rt.persist.prepared.Add(1)
	d := &document{query: query, trusted: trusted, verdict: rt.analyzer.Prepare(query, operationName)}
	d.known.Store(trusted)
	rt.persist.verdicts.c.Remove(key) // an APQ entry of the same text gives way to the trusted one
	rt.persist.verdicts.add(key, d)
	return d
}

// persisted resolves a request's persisted operation: by documentId, by an
// APQ hash (alone, or with the text, which it registers), or, for a key that
// runs only trusted documents, by the hash of the text sent. It fills
// req.Query and returns the document with its verdict; nil (and true) for an
// ordinary request. It answers the refusal itself.
func (rt *Router) persisted(ctx context.Context, rs responder, req *gqlRequest, trustedOnly bool) (*document, bool) {
	pq, err := persistedQueryOf(req.Extensions)
	if err != nil {
		rs.errors(http.StatusBadRequest, gqlErr(CodePersistedQueryInvalid, err.Error()))
		return nil, false
	}
	switch {
	case req.DocumentID != "":
		if req.Query != "" || pq != nil {
			rs.errors(http.StatusBadRequest, gqlErr(CodeBadRequest, "send a documentId, or a query (with or without its persistedQuery hash), not both"))
			return nil, false
		}
		return rt.byDocumentID(ctx, rs, req)
	case pq != nil && req.Query != "":
		if access.DocumentHash(req.Query) != pq.SHA256Hash {
			rs.errors(http.StatusBadRequest, gqlErr(CodePersistedQueryHashMismatch, "extensions.persistedQuery.sha256Hash is not the SHA-256 of the query sent"))
			return nil, false
		}
		return rt.byHash(ctx, rs, req, pq.SHA256Hash, trustedOnly, true)
	case pq != nil:
		return rt.byHash(ctx, rs, req, pq.SHA256Hash, trustedOnly, false)
	case trustedOnly && req.Query != "":
		return rt.byHash(ctx, rs, req, access.DocumentHash(req.Query), true, true)
	}
	return nil, true
}

// byHash finds the operation of a hash: a verdict already kept, a trusted
// document, or (unless the key runs only trusted documents) an automatic
// persisted query; a text sent with its hash registers it.
func (rt *Router) byHash(ctx context.Context, rs responder, req *gqlRequest, hash string, trustedOnly, textSent bool) (*document, bool) {
	if d, ok := rt.persist.verdicts.get(hash + "\x00" + req.OperationName); ok && (d.trusted || !trustedOnly) && (d.known.Load() || textSent) {
		rt.persist.reused.Add(1)
		req.Query = d.query
		return d, true
	}
	if rt.persist.docs != nil {
		td, err := rt.persist.docs.DocumentBySHA256(ctx, hash)
		switch {
		case err == nil:
			req.Query = td.Body
			return rt.verdict(hash, req.OperationName, td.Body, true), true
		case !errors.Is(err, access.ErrDocumentNotFound):
			rt.log.Error().Err(err).Msg("look up a trusted document")
			rs.errors(http.StatusInternalServerError, gqlErr(CodeInternal, "could not look up the persisted operation: try again later"))
			return nil, false
		}
	}
	if trustedOnly {
		rs.errors(http.StatusForbidden, gqlErr(CodeTrustedDocumentsOnly, "this developer key runs only trusted documents: send the documentId (or the sha256Hash) of an operation registered with `vitola graphql documents add`"))
		return nil, false
	}
	if textSent {
		d := rt.verdict(hash, req.OperationName, req.Query, false)
		if d.verdict.Err() == nil { // what the limits refuse is not registered
			if err := rt.persist.apq.set(ctx, hash, req.Query); err != nil {
				rt.log.Warn().Err(err).Msg("register an automatic persisted query")
			} else {
				d.known.Store(true)
			}
		}
		return d, true
	}
	q, ok, err := rt.persist.apq.get(ctx, hash)
	if err != nil {
		rt.log.Error().Err(err).Msg("look up an automatic persisted query")
		rs.errors(http.StatusInternalServerError, gqlErr(CodeInternal, "could not look up the persisted operation: try again later"))
		return nil, false
	}
	if !ok {
		rs.failed(gqlErr(CodePersistedQueryNotFound, "PersistedQueryNotFound"))
		return nil, false
	}
	req.Query = q
	d := rt.verdict(hash, req.OperationName, q, false)
	d.known.Store(true)
	return d, true
}

// byDocumentID finds a trusted document by its manifest ID, or by
// "sha256:HASH" (the persisted documents proposal's hash-based ID).
func (rt *Router) byDocumentID(ctx context.Context, rs responder, req *gqlRequest) (*document, bool) {
	hash, known := rt.persist.ids.Get(req.DocumentID)
	if !known && rt.persist.docs != nil {
		td, err := rt.persist.docs.DocumentByID(ctx, req.DocumentID)
		if h, ok := strings.CutPrefix(req.DocumentID, "sha256:"); ok && errors.Is(err, access.ErrDocumentNotFound) {
			td, err = rt.persist.docs.DocumentBySHA256(ctx, h)
		}
		switch {
		case err == nil:
			hash, known = td.SHA256, true
			rt.persist.ids.Add(req.DocumentID, hash)
			if _, ok := rt.persist.verdicts.get(hash + "\x00" + req.OperationName); !ok {
				req.Query = td.Body
				return rt.verdict(hash, req.OperationName, td.Body, true), true
			}
		case !errors.Is(err, access.ErrDocumentNotFound):
			rt.log.Error().Err(err).Msg("look up a trusted document")
			rs.errors(http.StatusInternalServerError, gqlErr(CodeInternal, "could not look up the persisted document: try again later"))
			return nil, false
		}
	}
	if !known {
		rs.failed(gqlErr(CodePersistedDocumentNotFound, "no trusted document has this documentId: register it with `vitola graphql documents add`"))
		return nil, false
	}
	return rt.byHash(ctx, rs, req, hash, true, false)
}
