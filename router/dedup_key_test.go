package router

import (
	"context"
	"net/http"
	"testing"

	"github.com/vitolahq/vitola/internal/trust"
)

// Everything that can change an answer changes the deduplication key: the
// operation, its name, its variables, any field of the caller's identity, and
// any header forwarded to a subgraph. (The router forwards only CallerHeader
// today; a header a subgraph template reads is in the key all the same.)
func TestDedupKeySeparatesWhatCanChangeAnAnswer(t *testing.T) {
	id := trust.Identity{Caller: "shim", KeyID: "key_a", Entitlements: []string{"api.ai"}, UserID: "usr_1", Scopes: []string{"profile"}, TokenID: "t1"}
	base := func() (context.Context, uint64, string, []byte, http.Header) {
		return trust.WithIdentity(context.Background(), id), 1, "Op", []byte(`{"a":1}`), http.Header{CallerHeader: {id.Digest()}, "X-Tenant": {"t1"}}
	}
	ctx, h, name, vars, hdr := base()
	want := dedupKey(ctx, h, name, vars, hdr)
	if got := dedupKey(base()); got != want {
		t.Fatal("the same request has two keys")
	}
	with := func(f func(*trust.Identity)) context.Context {
		other := id
		f(&other)
		return trust.WithIdentity(context.Background(), other)
	}
	for what, key := range map[string]string{
		"operation":    dedupKey(ctx, 2, name, vars, hdr),
		"name":         dedupKey(ctx, h, "Other", vars, hdr),
		"variables":    dedupKey(ctx, h, name, []byte(`{"a":2}`), hdr),
		"no identity":  dedupKey(context.Background(), h, name, vars, hdr),
		"key":          dedupKey(with(func(i *trust.Identity) { i.KeyID = "key_b" }), h, name, vars, hdr),
		"entitlements": dedupKey(with(func(i *trust.Identity) { i.Entitlements = nil }), h, name, vars, hdr),
		"subject":      dedupKey(with(func(i *trust.Identity) { i.UserID = "usr_2" }), h, name, vars, hdr),
		"scopes":       dedupKey(with(func(i *trust.Identity) { i.Scopes = append(i.Scopes, "x") }), h, name, vars, hdr),
		"token":        dedupKey(with(func(i *trust.Identity) { i.TokenID = "t2" }), h, name, vars, hdr),
		"header value": dedupKey(ctx, h, name, vars, http.Header{CallerHeader: {id.Digest()}, "X-Tenant": {"t2"}}),
		"header gone":  dedupKey(ctx, h, name, vars, http.Header{CallerHeader: {id.Digest()}}),
		"field split":  dedupKey(ctx, h, name, vars, http.Header{CallerHeader: {id.Digest()}, "X-Tenant": {"t", "1"}}),
	} {
		if key == want {
			t.Errorf("another %s, the same key", what)
		}
	}
}
