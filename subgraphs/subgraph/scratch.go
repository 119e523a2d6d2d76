package subgraph

import (
	"context"
	"sync"
)

// Scratch returns an empty buffer with room for n bytes, for a value that
// gqlgen copies into the response when it marshals it (a rendered Document):
// under the subgraphs' transport the buffer is taken back for reuse once the
// response is written, so nothing may keep the value. Elsewhere (a test
// executing the schema directly) it is a buffer of its own.
//
// A search page is a dozen kilobytes rendered for each request only to be
// copied into gqlgen's response: reusing its buffer takes a quarter of the
// REST search's allocation, which the collector's time follows.
func Scratch(ctx context.Context, n int) []byte {
	s, _ := ctx.Value(scratchKey{}).(*scratch)
	if s == nil {
		return make([]byte, 0, n)
	}
	p := getBuffer(n)
	s.mu.Lock()
	s.held = append(s.held, p)
	s.mu.Unlock()
	return *p
}

type scratchKey struct{}

// scratch holds what Scratch lent during one response.
type scratch struct {
	mu   sync.Mutex // resolvers may run concurrently
	held []*[]byte
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// withScratch lends buffers for one response; release takes them back.
func withScratch(ctx context.Context) (context.Context, *scratch) {
	s := scratches.Get().(*scratch)
	return context.WithValue(ctx, scratchKey{}, s), s
}

func (s *scratch) release() {
	for i, p := range s.held {
		putBuffer(p)
		s.held[i] = nil
	}
	s.held = s.held[:0]
	scratches.Put(s)
}

// Buffers are pooled up to maxPooled bytes and made at least minBuffer large,
// which holds a search page of 20 (up to 11 kB).
const (
	minBuffer = 16 << 10
	maxPooled = 256 << 10
)

var buffers sync.Pool // of *[]byte, empty

func getBuffer(n int) *[]byte {
	if p, _ := buffers.Get().(*[]byte); p != nil && cap(*p) >= n {
		return p
	}
	// A pooled buffer too small for n is dropped: the pool drifts to the
	// sizes values have.
	b := make([]byte, 0, max(n, minBuffer))
	return &b
}

func putBuffer(p *[]byte) {
	if cap(*p) > maxPooled || cap(*p) < minBuffer {
		return
	}
	*p = (*p)[:0]
	buffers.Put(p)
}
