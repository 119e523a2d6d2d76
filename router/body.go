package router

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/pool"
)

// bodies keeps request bodies decoded: the same bytes always decode into the
// same parameters and variables (or the same refusal), so a popular query's
// body is scanned, checked and decoded once, not on every request. Only
// bodies that decoded are kept; a refusal is worked out again each time.
type bodies struct {
	cache *lru.Cache[uint64, *decodedBody]
}

// decodedBody is one body's request, shared by every request that sends the
// same bytes: nothing may change it (vars included; the limits only read
// them).
type decodedBody struct {
	body []byte
	req  gqlRequest
	vars map[string]any
}

func newBodies(size int) (*bodies, error) {
	c, err := lru.New[uint64, *decodedBody](size)
	if err != nil {
		return nil, fmt.Errorf("request cache: %w", err)
	}
	return &bodies{cache: c}, nil
}

func bodyKey(body []byte) uint64 {
	h := pool.Hash64.Get()
	h.Reset()
	h.Write(body)
	key := h.Sum64()
	pool.Hash64.Put(h)
	return key
}

// get returns the decoded request of body, if kept. The body is compared
// whole: a colliding body must never run as another's request.
func (b *bodies) get(key uint64, body []byte) (*decodedBody, bool) {
	d, ok := b.cache.Get(key)
	if !ok || !bytes.Equal(d.body, body) {
		return nil, false
	}
	return d, true
}

// add keeps a decoded body, if it is short enough for the cache's memory
// bound. The body is copied (the caller's buffer is pooled); req holds
// nothing of it (encoding/json copies a RawMessage).
func (b *bodies) add(key uint64, body []byte, req gqlRequest, vars map[string]any) {
	if len(body) > maxCachedRequest {
		return
	}
	b.cache.Add(key, &decodedBody{body: bytes.Clone(body), req: req, vars: vars})
}

// bufs pools the buffers request bodies are read into and responses built in.
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuf bounds the buffers kept in the pool: one huge request must not
// pin its memory.
const maxPooledBuf = 64 << 10

func getBuf() *bytes.Buffer { return bufs.Get().(*bytes.Buffer) }

func putBuf(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuf {
		return
	}
	b.Reset()
	bufs.Put(b)
}

// decodeVariables decodes a request's variables, an object or null.
func decodeVariables(raw json.RawMessage) (map[string]any, error) {
	var vars map[string]any
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &vars); err != nil {
			return nil, err
		}
	}
	return vars, nil
}
