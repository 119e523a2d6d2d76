package router

import (
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
	kits     sync.Pool // *kit
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

func newExecutor(ctx context.Context, client *http.Client, c *Composed, opts resolve.ResolverOptions) (*executor, error) {
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
	plans, _ := lru.New[uint64, plan.Plan](1024)
	x := &executor{schema: schema, client: clientSchema.Document(), config: cfg, resolver: resolve.New(ctx, opts), plans: plans}
	prevalidation := astnormalization.WithPrevalidationRules(
		astvalidation.DeferStreamOnValidOperations(),
		astvalidation.DeferStreamHaveUniqueLabels(),
		astvalidation.DirectivesAreInValidLocations(),
		astvalidation.StreamAppliedToListFieldsOnly(),
	)
	base := []astnormalization.Option{
		astnormalization.WithRemoveFragmentDefinitions(),
		astnormalization.WithRemoveUnusedVariables(),
		astnormalization.WithInlineFragmentSpreads(),
		astnormalization.WithEnableDefer(),
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
// as a *RequestError and nothing is written.
func (x *executor) Execute(ctx context.Context, query, operationName string, variables []byte, header http.Header, w io.Writer) error {
	k := x.kits.Get().(*kit)
	defer x.kits.Put(k)
	k.doc.Reset()
	vars, remap, err := x.prepare(k, k.doc, query, operationName, variables)
	if err != nil {
		return &RequestError{Err: err}
	}
	p, err := x.plan(ctx, k, k.doc, query, operationName, variables)
	if err != nil {
		return err
	}
	rctx := resolve.NewContext(ctx)
	if len(vars) != 0 {
		rctx.Variables = astjson.MustParseBytes(vars)
	}
	rctx.Request = resolve.Request{Header: header}
	rctx.RemapVariables = remap
	switch pl := p.(type) {
	case *plan.SynchronousResponsePlan:
		_, err := x.resolver.ResolveGraphQLResponse(rctx, pl.Response, nil, w)
		return err
	default:
		return fmt.Errorf("operations of this kind are not supported (%T)", p)
	}
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
func (x *executor) plan(ctx context.Context, k *kit, doc *ast.Document, query, operationName string, variables []byte) (plan.Plan, error) {
	h := pool.Hash64.Get()
	h.Reset()
	defer pool.Hash64.Put(h)
	if err := astprinter.Print(doc, h); err != nil {
		return nil, err
	}
	key := h.Sum64()
	tel := telemetry.FromContext(ctx)
	if p, ok := x.plans.Get(key); ok {
		tel.PlanCache(true)
		return p, nil
	}
	tel.PlanCache(false)
	_, span := telemetry.Start(ctx, "plan")
	defer span.End()
	own := ast.NewSmallDocument()
	if _, _, err := x.prepare(k, own, query, operationName, variables); err != nil {
		return nil, err
	}
	planner, err := plan.NewPlanner(x.config)
	if err != nil {
		return nil, err
	}
	var report operationreport.Report
	p := planner.Plan(own, x.schema, operationName, &report)
	if report.HasErrors() {
		return nil, report
	}
	postprocess.NewProcessor().Process(p)
	if sp, ok := p.(*plan.SynchronousResponsePlan); ok && sp.Response != nil {
		unaliasIntrospection(sp.Response.Data)
	}
	x.plans.Add(key, p)
	return p, nil
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
