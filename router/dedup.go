package router

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vitolahq/vitola/internal/trust"
)

// Tuning holds the router's performance settings. The zero value is the
// default: inbound request deduplication and subgraph single-flight on, an
// operation cache of DefaultOperationCacheSize entries.
type Tuning struct {
	// NoInboundDedup turns off inbound request deduplication: identical
	// queries in flight at once (same normalized operation, operation name,
	// variables, caller identity and subgraph headers) no longer share one
	// execution.
	NoInboundDedup bool
	// NoSingleFlight turns off the engine's subgraph single-flight: identical
	// subgraph fetches in flight at once are no longer merged.
	NoSingleFlight bool
	// OperationCacheSize bounds the cache of prepared operations (parsed,
	// normalized, validated, analysed and planned), in entries; 0 means
	// DefaultOperationCacheSize.
	OperationCacheSize int
}

// DefaultOperationCacheSize is the operation cache's default bound.
const DefaultOperationCacheSize = 1024

// DedupStats counts what inbound deduplication did since the router started.
type DedupStats struct {
	// Executions is how many deduplicable queries were executed (each led by
	// one caller); Shared is how many callers received another's execution.
	Executions, Shared int64
}

// DedupStats returns the inbound deduplication counters.
func (rt *Router) DedupStats() DedupStats {
	if rt.exec.dedup == nil {
		return DedupStats{}
	}
	return DedupStats{Executions: rt.exec.dedup.executions.Load(), Shared: rt.exec.dedup.shared.Load()}
}

// dedup is a keyed single-flight over whole query executions: the first
// caller of a key runs it, callers of the same key that arrive while it runs
// wait for its response instead. The response is immutable once finished, so
// every caller writes the same bytes to its own connection.
//
// It is implemented here rather than with the engine's InboundRequestSingleFlight
// (graphql-go-tools v2.18): there a follower that joins just as the leader
// finishes sees no data, runs the operation itself, and closes the leader's
// already closed channel (a panic); and its key is a 64-bit hash, where this
// one compares everything that can change an answer byte for byte.
type dedup struct {
	mu    sync.Mutex
	calls map[string]*call

	executions, shared atomic.Int64
}

type call struct {
	done chan struct{}
	body []byte
	err  error
}

func newDedup() *dedup { return &dedup{calls: map[string]*call{}} }

// do returns the response of key's execution, running run if no execution of
// key is in flight. run goes on in its own goroutine, under a context that
// keeps ctx's values and deadline but not its cancellation: one caller going
// away does not fail the others. Each caller stops waiting when its own ctx
// ends.
func (d *dedup) do(ctx context.Context, key string, run func(ctx context.Context) ([]byte, error)) ([]byte, error) {
	d.mu.Lock()
	c, ok := d.calls[key]
	if ok {
		d.mu.Unlock()
		d.shared.Add(1)
	} else {
		c = &call{done: make(chan struct{})}
		d.calls[key] = c
		d.mu.Unlock()
		d.executions.Add(1)
		go d.lead(ctx, key, c, run)
	}
	select {
	case <-c.done:
		return c.body, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *dedup) lead(ctx context.Context, key string, c *call, run func(ctx context.Context) ([]byte, error)) {
	defer func() {
		if p := recover(); p != nil {
			c.body, c.err = nil, fmt.Errorf("execution panicked: %v", p)
		}
		d.mu.Lock()
		delete(d.calls, key)
		d.mu.Unlock()
		close(c.done)
	}()
	runCtx := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(runCtx, deadline)
		defer cancel()
	}
	c.body, c.err = run(runCtx)
}

// dedupKey is everything that can change a query's answer or its
// authorization, spelt out (not hashed, so two keys are equal only when all of
// it is): the normalized operation (its hash, opHash), the operation name, the
// normalized variables, the identity the subgraph calls are signed with, and
// every header the engine may forward to a subgraph (header templates read
// only these).
func dedupKey(ctx context.Context, opHash uint64, operationName string, variables []byte, header http.Header) string {
	b := make([]byte, 0, 64+len(operationName)+len(variables))
	b = binary.LittleEndian.AppendUint64(b, opHash)
	b = appendField(b, operationName)
	b = appendField(b, string(variables))
	if id, ok := trust.FromContext(ctx); ok {
		b = append(b, 'i')
		b = appendField(b, id.Caller)
		b = appendField(b, id.KeyID)
		b = appendList(b, id.Entitlements)
		b = appendField(b, id.UserID)
		b = appendList(b, id.Scopes)
		b = appendField(b, id.TokenID)
		b = appendField(b, id.FamilyID)
		b = appendField(b, id.ClientID)
		b = appendField(b, id.CheckoutSession)
		b = appendField(b, id.CheckoutAccount)
	}
	names := make([]string, 0, len(header))
	for name := range header {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		b = append(b, 'h')
		b = appendField(b, name)
		b = appendList(b, header[name])
	}
	return string(b)
}

// appendField appends s with its length, so that no two sequences of fields
// spell the same key.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendList(b []byte, list []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(list)))
	for _, s := range list {
		b = appendField(b, s)
	}
	return b
}
