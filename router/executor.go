package router

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/wundergraph/astjson"
	"github.com/wundergraph/graphql-go-tools/execution/engine"
	"github.com/wundergraph/graphql-go-tools/execution/graphql"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/astnormalization"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/astparser"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/astprinter"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/astvalidation"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/engine/datasource/introspection_datasource"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/engine/plan"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/engine/postprocess"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/engine/resolve"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/operationreport"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/pool"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/variablesvalidation"

	"github.com/vitolahq/vitola/internal/telemetry"
)

// executor runs operations on graphql-go-tools' planner and resolver, the steps
// of engine.ExecutionEngine.Execute, but with what each request needs (parser,
// document, normalizers, validators) taken from a pool instead of built anew:
// building them was most of the router's cost and allocations.
//
// It plans over the full supergraph, @inaccessible elements included: a public
// field may @require an inaccessible one, or reach an entity through an
// inaccessible type. Everything a client sends or sees goes by the client
// schema: normalization, validation, variables and introspection.
type executor struct {
	schema   *ast.Document // the full supergraph, for the planner
	client   *ast.Document // the client schema
	config   plan.Configuration
	resolver *resolve.Resolver
	plans    *lru.Cache[uint64, plan.Plan]
	// ops holds prepared operations by their request (see operation).
	ops  *lru.Cache[uint64, *prepared]
	kits sync.Pool // *kit
	// dedup shares one execution among identical queries in flight (nil: off).
	dedup *dedup
	// noSingleFlight turns off the engine's merging of identical subgraph fetches.
	noSingleFlight bool
	// callerHeader: some subgraph's fetches read CallerHeader, which each
	// request must then carry (see Composed.SeparateCallers).
	callerHeader bool
}

// kit is one request's reusable working set.
type kit struct {
	parser      *astparser.Parser
	doc         *ast.Document
	named, anon *astnormalization.OperationNormalizer
	// namedDefer and anonDefer keep @defer: for a client that takes
	// incremental delivery.
	namedDefer, anonDefer *astnormalization.OperationNormalizer
	extract               *astnormalization.OperationNormalizer
	validator             *astvalidation.OperationValidator
	variablesCheck        *variablesvalidation.VariablesValidator
}

func newExecutor(ctx context.Context, client *http.Client, c *Composed, opts resolve.ResolverOptions, tuning Tuning) (*executor, error) {
	factory := engine.NewFederationEngineConfigFactory(ctx, engine.WithFederationHttpClient(client))
	ec, err := factory.BuildEngineConfiguration(c.Config)
	if err != nil {
		return nil, fmt.Errorf("build engine configuration: %w", err)
	}
	schema := ec.Schema().Document()
	clientSchema, err := graphql.NewSchemaFromString(c.ClientSchema)
	if err != nil {
		return nil, fmt.Errorf("client schema: %w", err)
	}
	dataSources, err := withFederationMetadata(ctx, client, c.Config, ec.DataSources())
	if err != nil {
		return nil, err
	}
	cfg := plan.Configuration{
		DefaultFlushIntervalMillis: engine.DefaultFlushIntervalInMilliseconds,
		DataSources:                dataSources,
		Fields:                     ec.FieldConfigurations(),
	}
	for _, tc := range c.Config.GetEngineConfig().GetTypeConfigurations() {
		cfg.Types = append(cfg.Types, plan.TypeConfiguration{TypeName: tc.TypeName, RenameTo: tc.RenameTo})
	}
	// Introspection answers the client schema.
	intro, err := introspection_datasource.NewIntrospectionConfigFactory(clientSchema.Document())
	if err != nil {
		return nil, fmt.Errorf("introspection: %w", err)
	}
	cfg.DataSources = append(cfg.DataSources, intro.BuildDataSourceConfigurations()...)
	cfg.Fields = append(cfg.Fields, intro.BuildFieldConfigurations()...)
	size := tuning.OperationCacheSize
	if size <= 0 {
		size = DefaultOperationCacheSize
	}
	plans, err := lru.New[uint64, plan.Plan](size)
	if err != nil {
		return nil, fmt.Errorf("operation cache: %w", err)
	}
	ops, err := lru.New[uint64, *prepared](size)
	if err != nil {
		return nil, fmt.Errorf("operation cache: %w", err)
	}
	x := &executor{schema: schema, client: clientSchema.Document(), config: cfg, resolver: resolve.New(ctx, opts), plans: plans, ops: ops, noSingleFlight: tuning.NoSingleFlight, callerHeader: c.separateCallers}
	if !tuning.NoInboundDedup {
		x.dedup = newDedup()
	}
	// Not the engine's DeferStreamHaveUniqueLabels: it refused valid
	// operations (see limits.deferLabels, which checks labels instead).
	prevalidation := astnormalization.WithPrevalidationRules(
		astvalidation.DeferStreamOnValidOperations(),
		astvalidation.DirectivesAreInValidLocations(),
		astvalidation.StreamAppliedToListFieldsOnly(),
	)
	// base drops every @defer (whatever its label or if): the engine plans an
	// ordinary query, answered as one response with the deferred parts inline,
	// as the incremental delivery proposal allows, for a client that does not
	// take multipart/mixed. deferred keeps them, for one that does (see
	// ExecuteIncremental). A deferred operation's plan differs from the plain
	// one's by its printed document, which keys the plan cache; the operation
	// cache keys on the mode.
	base := []astnormalization.Option{
		astnormalization.WithRemoveFragmentDefinitions(),
		astnormalization.WithRemoveUnusedVariables(),
		astnormalization.WithInlineFragmentSpreads(),
		prevalidation,
	}
	deferred := append(slices.Clip(base), astnormalization.WithEnableDefer())
	x.kits.New = func() any {
		return &kit{
			parser:         astparser.NewParser(),
			doc:            ast.NewSmallDocument(),
			named:          astnormalization.NewWithOpts(append(base, astnormalization.WithRemoveNotMatchingOperationDefinitions())...),
			anon:           astnormalization.NewWithOpts(base...),
			namedDefer:     astnormalization.NewWithOpts(append(deferred, astnormalization.WithRemoveNotMatchingOperationDefinitions())...),
			anonDefer:      astnormalization.NewWithOpts(deferred...),
			extract:        astnormalization.NewWithOpts(astnormalization.WithExtractVariables()),
			validator:      astvalidation.DefaultOperationValidator(),
			variablesCheck: variablesvalidation.NewVariablesValidator(variablesvalidation.VariablesValidatorOptions{}),
		}
	}
	// Fail at start-up, not on the first request, if planning is misconfigured.
	if _, err := plan.NewPlanner(cfg); err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	return x, nil
}

// RequestError is a fault of the operation itself (parse, validation,
// variables): the client's to fix. Execute's other errors are the server's.
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// Execute runs one operation and writes its response. Request errors come back
// as a *RequestError and nothing is written. Identical queries in flight at
// once share one execution (see dedup) unless that is turned off; header is
// what subgraph header templates may read, and part of what makes two queries
// identical.
func (x *executor) Execute(ctx context.Context, query, operationName string, variables []byte, header http.Header, w io.Writer) error {
	return x.ExecuteIncremental(ctx, query, operationName, variables, header, w, nil)
}

// ExecuteIncremental is Execute for a client that takes incremental delivery
// (parts not nil): an operation with an enabled @defer is answered into
// parts, its initial payload first, then each deferred fragment as it is
// ready; any other into w, as Execute does. Until parts is first flushed an
// error comes back with nothing sent, as from Execute.
func (x *executor) ExecuteIncremental(ctx context.Context, query, operationName string, variables []byte, header http.Header, w io.Writer, parts resolve.DeferResponseWriter) error {
	op, err := x.operation(ctx, query, operationName, variables, parts != nil)
	if err != nil {
		return err
	}
	if op.sub != nil {
		return errNeedsStream
	}
	if op.deferred != nil {
		return x.resolveDeferred(ctx, op, header, parts)
	}
	pl, vars, remap, opHash := op.plan, op.vars, op.remap, op.opHash
	if x.dedup == nil || !pl.Response.SingleFlightAllowed() {
		return x.resolve(ctx, pl, opHash, vars, remap, header, w)
	}
	body, err := x.dedup.do(ctx, dedupKey(ctx, opHash, operationName, vars, header), func(ctx context.Context) ([]byte, error) {
		var buf bytes.Buffer
		if err := x.resolve(ctx, pl, opHash, vars, remap, header, &buf); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	})
	if err != nil {
		return err
	}
	_, err = w.Write(body)
	return err
}

// resolve executes a planned query and writes its response, on the engine's
// arena path: what one execution allocates comes from pooled arenas, sized by
// what the same operation (opHash) took before, instead of the heap. The
// engine's own inbound deduplication stays off: dedup does it (see there why).
func (x *executor) resolve(ctx context.Context, pl *plan.SynchronousResponsePlan, opHash uint64, vars []byte, remap map[string]string, header http.Header, w io.Writer) error {
	rctx := x.context(ctx, pl.Response.Info, opHash, vars, remap, header)
	_, err := x.resolver.ArenaResolveGraphQLResponse(rctx, pl.Response, w)
	return err
}

// context is the engine's context for one execution of a prepared operation.
func (x *executor) context(ctx context.Context, info *resolve.GraphQLResponseInfo, opHash uint64, vars []byte, remap map[string]string, header http.Header) *resolve.Context {
	if info != nil && info.OperationType == ast.OperationTypeQuery {
		ctx = withReplayable(ctx) // a query's fetches read only: the transport may send one again
	}
	rctx := resolve.NewContext(ctx)
	if len(vars) != 0 {
		rctx.Variables = astjson.MustParseBytes(vars)
	}
	rctx.Request = resolve.Request{ID: opHash, Header: header}
	rctx.RemapVariables = remap
	rctx.ExecutionOptions.DisableSubgraphRequestDeduplication = x.noSingleFlight
	rctx.ExecutionOptions.DisableInboundRequestDeduplication = true
	return rctx
}

// resolveDeferred executes an operation with deferred fragments into parts:
// the engine fetches the initial payload, flushes it, then fetches and
// flushes each deferred fragment (siblings concurrently, nested ones after
// their parent). Such a response is never shared (dedup): it is a stream.
func (x *executor) resolveDeferred(ctx context.Context, op *prepared, header http.Header, parts resolve.DeferResponseWriter) error {
	rctx := x.context(ctx, op.deferred.Response.Response.Info, op.opHash, op.vars, op.remap, header)
	_, err := x.resolver.ResolveGraphQLDeferResponse(rctx, op.deferred.Response, parts)
	return err
}

// prepared is an operation ready to resolve: parsed, normalized, validated
// (its variables too) and planned. It is shared by every request that sends
// the same query, operation name and variables, and never changed.
type prepared struct {
	query, operationName string
	variables            []byte // as the request sent them

	incremental bool // prepared for incremental delivery: @defer kept

	plan     *plan.SynchronousResponsePlan
	deferred *plan.DeferResponsePlan        // instead of plan, when a @defer is enabled
	sub      *plan.SubscriptionResponsePlan // instead of plan, for a subscription
	opHash   uint64                         // the normalized operation's
	vars     []byte                         // normalized, inline arguments extracted
	remap    map[string]string
}

// maxCachedRequest bounds the query and variables of a cached operation in
// bytes: the cache's memory is its size times this at most.
const maxCachedRequest = 16 << 10

// operation prepares a request's operation, or takes it from the cache of
// requests seen before: the same query, operation name and variables always
// prepare into the same operation, so only the first pays for parsing,
// normalization, validation and planning. Request errors come back as a
// *RequestError.
func (x *executor) operation(ctx context.Context, query, operationName string, variables []byte, incremental bool) (*prepared, error) {
	h := pool.Hash64.Get()
	h.Reset()
	h.WriteString(query)
	h.Write([]byte{0})
	h.WriteString(operationName)
	h.Write([]byte{0})
	h.Write(variables)
	if incremental {
		h.Write([]byte{1})
	}
	key := h.Sum64()
	pool.Hash64.Put(h)
	// The whole request is compared, not only its hash: a colliding request
	// must never run another's plan (nor escape its own limits).
	if op, ok := x.ops.Get(key); ok && op.query == query && op.operationName == operationName && bytes.Equal(op.variables, variables) && op.incremental == incremental {
		telemetry.FromContext(ctx).PlanCache(true)
		return op, nil
	}
	// Normalization may write into the variables' bytes, which the router's
	// request cache shares between requests: it gets a copy of its own, and
	// the cache keeps them as the request sent them.
	sent := variables
	variables = bytes.Clone(sent)
	k := x.kits.Get().(*kit)
	defer x.kits.Put(k)
	k.doc.Reset()
	vars, remap, err := x.prepare(k, k.doc, query, operationName, variables, incremental)
	if err != nil {
		return nil, &RequestError{Err: err}
	}
	p, opHash, err := x.plan(ctx, k, k.doc, query, operationName, variables, incremental)
	if err != nil {
		return nil, err
	}
	// vars lives in the pooled document, which the next request reuses.
	op := &prepared{query: query, operationName: operationName, variables: bytes.Clone(sent), incremental: incremental,
		opHash: opHash, vars: bytes.Clone(vars), remap: remap}
	switch pl := p.(type) {
	case *plan.SynchronousResponsePlan:
		op.plan = pl
	case *plan.SubscriptionResponsePlan:
		op.sub = pl
	case *plan.DeferResponsePlan:
		op.deferred = pl
	default:
		return nil, fmt.Errorf("operations of this kind are not supported (%T)", p)
	}
	if len(query)+len(variables) <= maxCachedRequest {
		x.ops.Add(key, op)
	}
	return op, nil
}

// prepare parses, normalizes and validates an operation into doc, and returns
// its variables (with those extracted from inline arguments) and their remap.
func (x *executor) prepare(k *kit, doc *ast.Document, query, operationName string, variables []byte, incremental bool) ([]byte, map[string]string, error) {
	doc.Input.ResetInputString(query)
	var report operationreport.Report
	k.parser.Parse(doc, &report)
	if report.HasErrors() {
		return nil, nil, report
	}
	doc.Input.Variables = variables
	named, anon := k.named, k.anon
	if incremental {
		named, anon = k.namedDefer, k.anonDefer
	}
	if operationName != "" {
		named.NormalizeNamedOperation(doc, x.client, []byte(operationName), &report)
	} else {
		anon.NormalizeOperation(doc, x.client, &report)
	}
	if report.HasErrors() {
		return nil, nil, report
	}
	k.validator.Validate(doc, x.client, &report)
	if report.HasErrors() {
		return nil, nil, report
	}
	k.extract.NormalizeOperation(doc, x.client, &report)
	if report.HasErrors() {
		return nil, nil, report
	}
	remap := astnormalization.NewVariablesMapper().NormalizeOperation(doc, x.client, &report)
	if report.HasErrors() {
		return nil, nil, report
	}
	vars := doc.Input.Variables
	if len(vars) > 0 && vars[0] == '{' {
		if err := k.variablesCheck.ValidateWithRemap(doc, x.client, vars, remap); err != nil {
			return nil, nil, err
		}
	}
	return vars, remap, nil
}

// plan returns the cached plan of a normalized operation, planning it once. A
// plan keeps pointers into the document it was made from, so it is made from a
// document of its own, never from a pooled one that the next request reuses.
func (x *executor) plan(ctx context.Context, k *kit, doc *ast.Document, query, operationName string, variables []byte, incremental bool) (plan.Plan, uint64, error) {
	h := pool.Hash64.Get()
	h.Reset()
	defer pool.Hash64.Put(h)
	if err := astprinter.Print(doc, h); err != nil {
		return nil, 0, err
	}
	key := h.Sum64()
	tel := telemetry.FromContext(ctx)
	if p, ok := x.plans.Get(key); ok {
		tel.PlanCache(true)
		return p, key, nil
	}
	tel.PlanCache(false)
	_, span := telemetry.Start(ctx, "plan")
	defer span.End()
	own := ast.NewSmallDocument()
	if _, _, err := x.prepare(k, own, query, operationName, variables, incremental); err != nil {
		return nil, 0, err
	}
	planner, err := plan.NewPlanner(x.config)
	if err != nil {
		return nil, 0, err
	}
	var report operationreport.Report
	p := planner.Plan(own, x.schema, operationName, &report)
	if report.HasErrors() {
		return nil, 0, report
	}
	postprocess.NewProcessor().Process(p)
	switch sp := p.(type) {
	case *plan.SynchronousResponsePlan:
		if sp.Response != nil {
			unaliasIntrospection(sp.Response.Data)
		}
	case *plan.DeferResponsePlan:
		if sp.Response != nil && sp.Response.Response != nil {
			unaliasIntrospection(sp.Response.Response.Data)
		}
	}
	x.plans.Add(key, p)
	return p, key, nil
}

// unaliasIntrospection makes every field under __schema and __type read its
// value at its field name. The introspection data source answers the whole
// schema (or type) keyed by field names, but the planner (graphql-go-tools
// v2.18) reads each field at its response name, so an alias below the root
// read nothing: null, or "Cannot return null for non-nullable field". The root
// field itself keeps its response name: its fetch is merged there.
func unaliasIntrospection(data *resolve.Object) {
	if data == nil {
		return
	}
	for _, f := range data.Fields {
		if f.Info != nil && (f.Info.Name == "__schema" || f.Info.Name == "__type") {
			readAtFieldNames(f.Value)
		}
	}
}

func readAtFieldNames(n resolve.Node) {
	switch v := n.(type) {
	case *resolve.Object:
		for _, f := range v.Fields {
			if f.Info != nil {
				setPath(f.Value, []string{f.Info.Name})
			}
			readAtFieldNames(f.Value)
		}
	case *resolve.Array:
		readAtFieldNames(v.Item)
	}
}

// setPath sets the path a value is read at, for every kind of value
// introspection has.
func setPath(n resolve.Node, path []string) {
	switch v := n.(type) {
	case *resolve.Object:
		v.Path = path
	case *resolve.Array:
		v.Path = path
	case *resolve.String:
		v.Path = path
	case *resolve.Boolean:
		v.Path = path
	case *resolve.Enum:
		v.Path = path
	case *resolve.Scalar:
		v.Path = path
	case *resolve.Integer:
		v.Path = path
	case *resolve.Float:
		v.Path = path
	}
}
