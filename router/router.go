// Package router is the public /graphql: the graphql-go-tools federation engine
// over a configuration composed by wgc, behind the developer-key check and the
// operation limits, which run before any subgraph is called.
package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/engine/resolve"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/graphqlerrors"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/jsonbody"
	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/router/limits"
	"github.com/vitolahq/vitola/webui"
)

// KeyChecker authenticates developer keys (access.Service implements it).
type KeyChecker interface {
	Authenticate(ctx context.Context, plain string) (access.Key, error)
}

// Config is what a router needs.
type Config struct {
	Composed *Composed
	// Client calls the subgraphs; its transport signs the internal token. The
	// router bounds each operation itself (Timeout): leave the client's unset.
	Client *http.Client
	Keys   KeyChecker
	// Tokens verifies OAuth access tokens (nil: bearer tokens are refused).
	Tokens *access.Tokens
	// Internal verifies the shim's internal token: the shim's federated calls
	// (the sessions feeds) come with it, carrying the caller's identity,
	// instead of a developer key (nil: only developer keys).
	Internal *trust.Verifier
	// Limits bound operations, and request bodies (Limits.MaxBodyBytes).
	Limits limits.Config
	Logger zerolog.Logger
	// Timeout bounds one operation, its subgraph calls included (default 30 s).
	Timeout time.Duration
	// Quotas spends developer keys' request and cost quotas (nil: none).
	Quotas *access.Quotas
	// PersistedQueries keeps automatic persisted queries (APQ) when the
	// platform has Redis, shared by replicas; nil: a bounded in-process cache.
	PersistedQueries kv.Store
	// Documents holds the trusted documents (nil: none).
	Documents access.DocumentStore
	// DemoKey is the demo developer key (--demo) GraphiQL fills in for a
	// browser on this machine (webui.GraphiQLHandler); empty: none.
	DemoKey string
	// Tuning: deduplication, single-flight and the operation cache (zero: defaults).
	Tuning Tuning
	// Subscriptions bound live subscriptions (zero fields: defaults).
	Subscriptions SubscriptionSettings
	// Origins answers CORS preflights: websites whose origin a publishable
	// key lists may open its public subscriptions (nil: none may).
	Origins OriginChecker
}

// Router serves /graphql: operations by POST, queries by GET too, and
// GraphiQL on a browser's GET.
type Router struct {
	exec     *executor
	bodies   *bodies
	analyzer *limits.Analyzer
	keys     KeyChecker
	tokens   *access.Tokens
	internal *trust.Verifier
	quotas   *access.Quotas
	log      zerolog.Logger
	maxBody  int64
	timeout  time.Duration
	graphiql http.Handler
	persist  *persistence
	live     *live // open subscriptions (subscribe.go)
	origins  OriginChecker
}

// New builds the engine; ctx bounds the engine's background work.
func New(ctx context.Context, cfg Config) (*Router, error) {
	if cfg.Client == nil || cfg.Keys == nil || cfg.Composed == nil {
		return nil, errors.New("router: Composed, Client and Keys are required")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	an, err := limits.New(cfg.Composed.ClientSchema, cfg.Composed.SubgraphSDLs, cfg.Limits)
	if err != nil {
		return nil, err
	}
	size := cfg.Tuning.OperationCacheSize
	if size <= 0 {
		size = DefaultOperationCacheSize
	}
	bodies, err := newBodies(size)
	if err != nil {
		return nil, err
	}
	// The engine outlives ctx by as long as its streams take to close with
	// their reason (see stopAfter): otherwise its upstream subscriptions end
	// first, and clients would read a plain complete.
	engineCtx, stopEngine := context.WithCancel(context.WithoutCancel(ctx))
	exec, err := newExecutor(engineCtx, cfg.Client, cfg.Composed, resolve.ResolverOptions{
		MaxConcurrency:               1024,
		PropagateSubgraphErrors:      true,
		SubgraphErrorPropagationMode: resolve.SubgraphErrorPropagationModePassThrough,
		RewriteSubgraphErrorPaths:    true,
		OmitSubgraphErrorLocations:   true,
		AllowedErrorExtensionFields:  []string{"code"},
		AllowedSubgraphErrorFields:   []string{"message", "path", "extensions"},
		// Each event's fetches get an operation's time.
		MaxSubscriptionFetchTimeout: timeout,
	}, cfg.Tuning)
	if err != nil {
		stopEngine()
		return nil, fmt.Errorf("create engine: %w", err)
	}
	rt := &Router{exec: exec, bodies: bodies, analyzer: an, keys: cfg.Keys, tokens: cfg.Tokens, internal: cfg.Internal, quotas: cfg.Quotas, log: cfg.Logger, maxBody: int64(an.Limits().MaxBodyBytes), timeout: timeout, graphiql: webui.GraphiQLHandler(cfg.DemoKey),
		persist: newPersistence(cfg.PersistedQueries, cfg.Documents)}
	rt.initLive(cfg.Subscriptions)
	rt.origins = cfg.Origins
	rt.stopAfter(ctx, stopEngine)
	return rt, nil
}

// Error codes of the router's own errors (extensions.code).
const (
	CodeUnauthenticated  = "UNAUTHENTICATED"
	CodeForbidden        = "FORBIDDEN"
	CodeBatching         = "BATCHING_DISABLED"
	CodeBadRequest       = "BAD_REQUEST"
	CodeInvalidBody      = "INVALID_BODY"
	CodeInternal         = "INTERNAL_SERVER_ERROR"
	CodeTimeout          = "TIMEOUT"
	CodeRequestTimeout   = "REQUEST_TIMEOUT"
	CodeUnsupportedMedia = "UNSUPPORTED_MEDIA_TYPE"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
)

func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && (strings.HasPrefix(r.URL.Path, "/graphql/assets/") || wantsPage(r)) {
		// A browser gets GraphiQL (anonymous: it only sends what the user pastes).
		rt.graphiql.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		rt.preflight(w, r) // a website's live sessions (subscribe_sse.go)
		return
	}
	if isWebSocket(r) {
		rt.serveWebSocket(w, r) // graphql-transport-ws (subscribe.go)
		return
	}
	stream := wantsEventStream(r)
	media, ok := negotiate(r.Header.Values("Accept"))
	if stream { // refusals before the stream starts: 4xx, as the specification's media type has them
		media, ok = MediaGraphQLResponse, true
	}
	if !ok {
		rs := responder{w: w, media: MediaJSON}
		rs.errors(http.StatusNotAcceptable, gqlErr(CodeNotAcceptable, "Accept must allow application/graphql-response+json or application/json"))
		return
	}
	rs := responder{w: w, media: media}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET, POST")
		rs.errors(http.StatusMethodNotAllowed, gqlErr(CodeMethodNotAllowed, "send GraphQL operations with POST and a JSON body, or queries with GET and URL parameters"))
		return
	}
	a, buf, ok := rt.admit(rs, r, stream)
	if !ok {
		return
	}
	defer putBuf(buf)
	if stream {
		rt.serveEventStream(w, r, a) // GraphQL over SSE (subscribe.go)
		return
	}
	id, req, m, start := a.id, a.req, a.measure, a.start
	failed := true
	defer func() {
		telemetry.FromContext(r.Context()).Operation(r.Context(), req.OperationName, m.Type, failed, time.Since(start))
	}()

	// One deadline for the whole operation: cheaper than a client timeout, which
	// arms a timer per subgraph call.
	ctx, cancel := context.WithTimeout(trust.WithIdentity(r.Context(), id), rt.timeout)
	defer cancel()
	out := getBuf()
	defer putBuf(out)
	var caller http.Header
	if rt.exec.callerHeader {
		caller = http.Header{CallerHeader: {id.Digest()}}
	}
	if err := rt.exec.Execute(ctx, req.Query, req.OperationName, req.Variables, caller, out); err != nil {
		var reqErr *RequestError
		switch {
		case errors.As(err, &reqErr):
			rs.failed(engineErrors(reqErr.Err)...)
		case errors.Is(err, errNeedsStream):
			rs.errors(http.StatusNotAcceptable, gqlErr(CodeNotAcceptable, errNeedsStream.Error()))
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			rs.errors(http.StatusGatewayTimeout, gqlErr(CodeTimeout, fmt.Sprintf("the operation took longer than %s: ask for less", rt.timeout)))
		default:
			rt.log.Error().Err(err).Str("request_id", telemetry.RequestID(ctx)).Str("operation", req.OperationName).Msg("execute operation")
			rs.errors(http.StatusInternalServerError, gqlErr(CodeInternal, "the operation failed: try again later"))
		}
		return
	}
	rt.log.Debug().Str("operation", req.OperationName).Int("depth", m.Depth).Int("cost", m.Cost).
		Dur("took", time.Since(start)).Msg("graphql")
	failed = false
	rs.data(out.Bytes())
}

// admitted is a request that passed every check made before execution.
type admitted struct {
	id      trust.Identity
	key     access.Key
	req     gqlRequest
	measure limits.Measure
	start   time.Time
}

// admit runs every check an operation passes before it runs, whatever the
// protocol: the caller's key or token (and request quota), the body, trusted
// and persisted documents, the limits and the cost quota. It answers a refusal
// itself. stream: the request asks for a stream of events (SSE, or a
// WebSocket's subscribe message), which a publishable key may open from one
// of its origins. The body comes in a pooled buffer for the caller to put back.
func (rt *Router) admit(rs responder, r *http.Request, stream bool) (admitted, *bytes.Buffer, bool) {
	id, key, ok := rt.caller(rs, r, stream)
	trustedOnly := key.TrustedDocumentsOnly
	if !ok {
		return admitted{}, nil, false
	}
	buf, ok := rt.readRequest(rs, r)
	if !ok {
		return admitted{}, nil, false
	}
	req, vars, ok := rt.decode(r.Context(), rs, buf.Bytes())
	if !ok {
		putBuf(buf)
		return admitted{}, nil, false
	}
	doc, ok := rt.persisted(r.Context(), rs, &req, trustedOnly)
	if !ok {
		putBuf(buf)
		return admitted{}, nil, false
	}
	if strings.TrimSpace(req.Query) == "" {
		putBuf(buf)
		rs.errors(http.StatusBadRequest, gqlErr(CodeBadRequest, "query is required"))
		return admitted{}, nil, false
	}
	if r.Method == http.MethodGet && !stream && !rt.queryOverGET(rs, req) {
		putBuf(buf)
		return admitted{}, nil, false
	}

	start := time.Now()
	var (
		m   limits.Measure
		err error
	)
	if doc != nil {
		m, err = doc.verdict.Check(vars) // the document's limits, checked once
	} else {
		m, err = rt.analyzer.Check(req.Query, req.OperationName, vars)
	}
	if err != nil {
		putBuf(buf)
		rt.refuse(r.Context(), rs, err)
		return admitted{}, nil, false
	}
	if !rt.spend(rs, rt.quotas.Cost(r.Context(), key, m.Cost)) {
		putBuf(buf)
		return admitted{}, nil, false
	}
	return admitted{id: id, key: key, req: req, measure: m, start: start}, buf, true
}

// decode reads a request body's parameters and variables, or answers the
// refusal itself. A body seen before comes decoded from rt.bodies: each step
// depends on the body's bytes alone.
func (rt *Router) decode(ctx context.Context, rs responder, body []byte) (gqlRequest, map[string]any, bool) {
	key := bodyKey(body)
	if d, ok := rt.bodies.get(key, body); ok {
		return d.req, d.vars, true
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		rs.errors(http.StatusBadRequest, gqlErr(CodeBatching, "batched operations are disabled: send one operation per request"))
		return gqlRequest{}, nil, false
	}
	// Bound the JSON's tokens and nesting before anything decodes it.
	if err := rt.analyzer.CheckRequestJSON(body); err != nil {
		rt.refuse(ctx, rs, err)
		return gqlRequest{}, nil, false
	}
	// One JSON value, no member twice, names as spelt: what the analyzer and
	// the engine read is what every other reader of the body reads.
	req, err := decodeRequest(body, rt.analyzer.Limits().MaxNesting)
	if err != nil {
		rs.errors(http.StatusBadRequest, gqlErr(CodeInvalidBody, err.Error()))
		return gqlRequest{}, nil, false
	}
	vars, err := decodeVariables(req.Variables)
	if err != nil {
		rs.errors(http.StatusBadRequest, gqlErr(CodeBadRequest, "variables must be a JSON object"))
		return gqlRequest{}, nil, false
	}
	if vars == nil {
		req.Variables = json.RawMessage("{}") // the engine validates variables only when they are an object
	}
	rt.bodies.add(key, body, req, vars)
	return req, vars, true
}

// readRequest reads a request's parameters as a JSON body: a POST's body
// (Content-Type application/json, at most the body limit), or a GET's URL
// parameters made into the same JSON, under the same limit. It answers the
// refusal itself.
//
// The body comes in a pooled buffer: the caller puts it back (putBuf) once
// nothing reads the body any more.
func (rt *Router) readRequest(rs responder, r *http.Request) (*bytes.Buffer, bool) {
	if r.Method == http.MethodGet {
		if int64(len(r.URL.RawQuery)) > rt.maxBody {
			e := gqlErr(CodeBadRequest, fmt.Sprintf("the URL's parameters are longer than the maximum of %d bytes: send a shorter operation or fewer variables, or POST it", rt.maxBody))
			e.Extensions["limit"], e.Extensions["maximum"] = "body bytes", rt.maxBody
			rs.errors(http.StatusRequestURITooLong, e)
			return nil, false
		}
		body, err := bodyFromURL(r.URL.RawQuery)
		if err != nil {
			rs.errors(http.StatusBadRequest, gqlErr(CodeInvalidBody, err.Error()))
			return nil, false
		}
		buf := getBuf()
		buf.Write(body)
		return buf, true
	}
	if ct := r.Header.Values("Content-Type"); len(ct) != 1 || !jsonbody.IsJSON(ct[0]) {
		rs.errors(http.StatusUnsupportedMediaType, gqlErr(CodeUnsupportedMedia, "Content-Type must be application/json"))
		return nil, false
	}
	buf := getBuf()
	err := readBody(buf, rs.w, r, rt.maxBody)
	if err == nil {
		return buf, true
	}
	putBuf(buf)
	if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
		e := gqlErr(CodeBadRequest, fmt.Sprintf("the request body is larger than the maximum of %d bytes: send a shorter operation or fewer variables", rt.maxBody))
		e.Extensions["limit"], e.Extensions["maximum"] = "body bytes", rt.maxBody
		rs.errors(http.StatusRequestEntityTooLarge, e)
	} else if jsonbody.TimedOut(err) {
		rs.errors(http.StatusRequestTimeout, gqlErr(CodeRequestTimeout, jsonbody.TimeoutMessage(r)))
	} else {
		rs.errors(http.StatusBadRequest, gqlErr(CodeBadRequest, "could not read the request body"))
	}
	return nil, false
}

// queryOverGET refuses over GET anything but a query (405, Allow: POST): GET
// must be safe, and a cache or a link could repeat it. A document that does
// not parse, or names no operation of its, goes on to fail as over POST.
func (rt *Router) queryOverGET(rs responder, req gqlRequest) bool {
	if rt.analyzer.CheckText(req.Query) != nil {
		return true // Check refuses it with the same verdict
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: req.Query})
	if err != nil {
		return true
	}
	var op *ast.OperationDefinition
	if req.OperationName == "" && len(doc.Operations) == 1 {
		op = doc.Operations[0]
	} else if req.OperationName != "" {
		op = doc.Operations.ForName(req.OperationName)
	}
	if op == nil || op.Operation == ast.Query {
		return true
	}
	rs.w.Header().Set("Allow", "POST")
	rs.errors(http.StatusMethodNotAllowed, gqlErr(CodeMethodNotAllowed, fmt.Sprintf("a %s cannot be sent with GET: send it with POST", op.Operation)))
	return false
}

// refuse answers an analyzer's error: a *limits.Rejection is the client's.
func (rt *Router) refuse(ctx context.Context, rs responder, err error) {
	var rej *limits.Rejection
	if errors.As(err, &rej) {
		telemetry.FromContext(ctx).Rejected(rejectedLimit(rej))
		rs.failed(rej.Errors...)
		return
	}
	rs.errors(http.StatusInternalServerError, gqlErr(CodeInternal, "could not analyse the operation"))
}

// spend adds a quota's verdict to the response's RateLimit headers and
// answers a refusal itself (429 RATE_LIMITED).
func (rt *Router) spend(rs responder, v access.Verdict) bool {
	v.SetHeaders(rs.w.Header())
	if v.Refused {
		rs.errors(http.StatusTooManyRequests, gqlErr(access.GraphQLCode, v.Message()))
		return false
	}
	return true
}

// caller authenticates the request: a developer key (and maybe a user's access
// token), or the shim's internal token (no key: the shim spent the quota). It
// spends the key's request quota, and answers a refusal itself.
func (rt *Router) caller(rs responder, r *http.Request, stream bool) (id trust.Identity, key access.Key, ok bool) {
	if tok := r.Header.Get(trust.Header); tok != "" && rt.internal != nil {
		id, err := rt.internal.Verify(tok)
		if err != nil || id.Caller != "shim" {
			rs.errors(http.StatusUnauthorized, gqlErr(CodeUnauthenticated, "invalid internal token"))
			return trust.Identity{}, access.Key{}, false
		}
		return id, access.Key{}, true
	}
	key, err := rt.keys.Authenticate(r.Context(), r.Header.Get(access.Header))
	if err != nil {
		status, msg := access.Refusal(err)
		code := CodeUnauthenticated
		if status >= 500 {
			rt.log.Error().Err(err).Msg("authenticate developer key")
			code = CodeInternal
		}
		rs.errors(status, gqlErr(code, msg))
		return trust.Identity{}, access.Key{}, false
	}
	if key.Publishable && !stream {
		rs.errors(http.StatusForbidden, gqlErr(CodeForbidden, "a publishable key reads only the public REST feeds and live sessions (subscriptions); use a secret key from your server"))
		return trust.Identity{}, access.Key{}, false
	}
	if key.Publishable {
		origin := r.Header.Get("Origin")
		if !key.AllowsOrigin(origin) {
			rs.errors(http.StatusForbidden, gqlErr(CodeForbidden, "this publishable key is not valid from origin "+apierr.Quote(origin)+": add it with `vitola keys create --publishable --origin`"))
			return trust.Identity{}, access.Key{}, false
		}
		rs.w.Header().Set("Access-Control-Allow-Origin", origin)
		rs.w.Header().Add("Vary", "Origin")
	}
	if !rt.spend(rs, rt.quotas.Requests(r.Context(), key)) {
		return trust.Identity{}, access.Key{}, false
	}
	id = key.Identity()
	// A connected user's access token adds the user and its scopes; without one
	// the operation runs anonymously and connected-user fields answer null.
	if authz := r.Header.Get("Authorization"); authz != "" {
		if rt.tokens == nil {
			rs.errors(http.StatusUnauthorized, gqlErr(CodeUnauthenticated, "this server does not accept OAuth access tokens"))
			return trust.Identity{}, access.Key{}, false
		}
		claims, err := rt.tokens.Authenticate(r.Context(), authz)
		if err != nil {
			rs.w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			rs.errors(http.StatusUnauthorized, gqlErr(CodeUnauthenticated, access.InvalidTokenMessage))
			return trust.Identity{}, access.Key{}, false
		}
		id = access.ForUser(id, claims)
	}
	return id, key, true
}

// rejectedLimit names the rule a rejection broke, for metrics: the limit
// (depth, aliases, cost, tokens...), or parse / validation.
func rejectedLimit(rej *limits.Rejection) string {
	if len(rej.Errors) == 0 {
		return "other"
	}
	ext := rej.Errors[0].Extensions
	if l, ok := ext["limit"].(string); ok {
		return l
	}
	switch ext["code"] {
	case limits.CodeParseFailed:
		return "parse"
	case limits.CodeValidationFailed:
		return "validation"
	}
	return "other"
}

func gqlErr(code, msg string) *gqlerror.Error {
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": code}}
}

// engineErrors turns an engine's request error into GraphQL errors with a code.
func engineErrors(err error) []*gqlerror.Error {
	var out []*gqlerror.Error
	for _, e := range graphqlerrors.RequestErrorsFromError(err) {
		out = append(out, gqlErr(limits.CodeValidationFailed, e.Message))
	}
	return out
}
