// Package bufpool lends byte buffers for one response at a time, so that a
// hot path (an in-process call's answer, a page a resolver renders) does not
// allocate its largest buffer per request.
package bufpool

import "sync"

// Buffers are pooled up to maxPooled bytes, and made at least minBuffer large
// so that one fits most answers (a search page of 20 is up to 11 kB).
const (
	minBuffer = 16 << 10
	maxPooled = 256 << 10
)

var buffers sync.Pool // of *[]byte, empty

// Get returns an empty buffer with room for n bytes. Give it back with Put
// once nothing reads it any more.
func Get(n int) *[]byte {
	if p, _ := buffers.Get().(*[]byte); p != nil && cap(*p) >= n {
		return p
	}
	// A pooled buffer too small for n is dropped: the pool drifts to the
	// sizes answers have.
	b := make([]byte, 0, max(n, minBuffer))
	return &b
}

// Put takes a buffer back (an outsized one is left to the collector).
func Put(p *[]byte) {
	if cap(*p) > maxPooled || cap(*p) < minBuffer {
		return
	}
	*p = (*p)[:0]
	buffers.Put(p)
}
