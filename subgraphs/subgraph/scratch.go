package subgraph

import (
	"context"
	"sync"

	"github.com/vitolahq/vitola/internal/bufpool"
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
	p := bufpool.Get(n)
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
		bufpool.Put(p)
		s.held[i] = nil
	}
	s.held = s.held[:0]
	scratches.Put(s)
}
