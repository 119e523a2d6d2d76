package router

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
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
	parser         *astparser.Parser
	doc            *ast.Document
	named, anon    *astnormalization.OperationNormalizer
	extract        *astnormalization.OperationNormalizer
	validator      *astvalidation.OperationValidator
	variablesCheck *variablesvalidation.VariablesValidator
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
	// Defer is not enabled: normalization then drops every @defer (whatever its
	// label or if) and the engine plans an ordinary query, answered as one
	// response with the deferred parts inline, as the incremental delivery
	// proposal allows. Enabled, it plans a deferred response the router cannot
	// run. Plans and the operation cache need no key of their own: a deferred
	// operation answers exactly what the same one without @defer answers.
	base := []astnormalization.Option{
		astnormalization.WithRemoveFragmentDefinitions(),
		astnormalization.WithRemoveUnusedVariables(),
		astnormalization.WithInlineFragmentSpreads(),
		prevalidation,
	}
	x.kits.New = func() any {
		return &kit{
			parser:         astparser.NewParser(),
			doc:            ast.NewSmallDocument(),
			named:          astnormalization.NewWithOpts(append(base, astnormalization.WithRemoveNotMatchingOperationDefinitions())...),
			anon:           astnormalization.NewWithOpts(base...),
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
	op, err := x.operation(ctx, query, operationName, variables)
	if err != nil {
		return err
	}
	if op.sub != nil {
		return errNeedsStream
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
	if info := pl.Response.Info; info != nil && info.OperationType == ast.OperationTypeQuery {
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
	_, err := x.resolver.ArenaResolveGraphQLResponse(rctx, pl.Response, w)
	return err
}

// prepared is an operation ready to resolve: parsed, normalized, validated
// (its variables too) and planned. It is shared by every request that sends
// the same query, operation name and variables, and never changed.
type prepared struct {
	query, operationName string
	variables            []byte // as the request sent them

	plan   *plan.SynchronousResponsePlan
	sub    *plan.SubscriptionResponsePlan // a subscription's, instead of plan
	opHash uint64                         // the normalized operation's
	vars   []byte                         // normalized, inline arguments extracted
	remap  map[string]string
}

// maxCachedRequest bounds the query and variables of a cached operation in
// bytes: the cache's memory is its size times this at most.
const maxCachedRequest = 16 << 10

// operation prepares a request's operation, or takes it from the cache of
// requests seen before: the same query, operation name and variables always
// prepare into the same operation, so only the first pays for parsing,
// normalization, validation and planning. Request errors come back as a
// *RequestError.
func (x *executor) operation(ctx context.Context, query, operationName string, variables []byte) (*prepared, error) {
	h := pool.Hash64.Get()
	h.Reset()
	h.WriteString(query)
	h.Write([]byte{0})
	h.WriteString(operationName)
	h.Write([]byte{0})
	h.Write(variables)
	key := h.Sum64()
	pool.Hash64.Put(h)
	// The whole request is compared, not only its hash: a colliding request
	// must never run another's plan (nor escape its own limits).
	if op, ok := x.ops.Get(key); ok && op.query == query && op.operationName == operationName && bytes.Equal(op.variables, variables) {
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
	vars, remap, err := x.prepare(k, k.doc, query, operationName, variables)
	if err != nil {
		return nil, &RequestError{Err: err}
	}
	p, opHash, err := x.plan(ctx, k, k.doc, query, operationName, variables)
	if err != nil {
		return nil, err
	}
	// vars lives in the pooled document, which the next request reuses.
	op := &prepared{query: query, operationName: operationName, variables: bytes.Clone(sent),
		opHash: opHash, vars: bytes.Clone(vars), remap: remap}
	switch pl := p.(type) {
	case *plan.SynchronousResponsePlan:
		op.plan = pl
	case *plan.SubscriptionResponsePlan:
		op.sub = pl
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
func (x *executor) prepare(k *kit, doc *ast.Document, query, operationName string, variables []byte) ([]byte, map[string]string, error) {
	doc.Input.ResetInputString(query)
	var report operationreport.Report
	k.parser.Parse(doc, &report)
	if report.HasErrors() {
		return nil, nil, report
	}
	doc.Input.Variables = variables
	if operationName != "" {
		k.named.NormalizeNamedOperation(doc, x.client, []byte(operationName), &report)
	} else {
		k.anon.NormalizeOperation(doc, x.client, &report)
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
func (x *executor) plan(ctx context.Context, k *kit, doc *ast.Document, query, operationName string, variables []byte) (plan.Plan, uint64, error) {
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
	if _, _, err := x.prepare(k, own, query, operationName, variables); err != nil {
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
	if sp, ok := p.(*plan.SynchronousResponsePlan); ok && sp.Response != nil {
		unaliasIntrospection(sp.Response.Data)
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
