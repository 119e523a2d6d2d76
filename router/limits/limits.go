// Package limits measures a GraphQL operation before it runs and rejects what is
// too deep, too wide, too aliased or too costly. It works on the operation as
// written, with fragments expanded, against the public schema; the cost model is
// the IBM GraphQL cost directive model, read from @cost and @listSize in the
// subgraphs' own SDL (they do not survive composition into the client schema).
//
// How each figure is computed:
//   - depth: field levels, the leaf counted ({ a { b { c } } } has depth 3).
//     Fragments and inline fragments add no level of their own.
//   - aliases: every aliased field anywhere in the operation, nested ones too,
//     counted once per place it lands after fragment expansion.
//   - root fields: the fields of the top selection set (after expansion), except
//     __typename.
//   - cost: a field of object, interface or union type weighs 1 (or its @cost
//     weight), a scalar or enum field 0; a list field multiplies its own weight and
//     the cost of its selection by its size. The size of a list comes from, in
//     order: a parent's @listSize(sizedFields) (connections: `edges` takes the
//     connection's `first`), its own @listSize(slicingArguments) (the argument's
//     value, variable or default), its own @listSize(assumedSize), else
//     DefaultListSize.
//   - introspection (__schema, __type) is exempt from depth and cost, so that
//     GraphiQL's standard introspection query works; it has a depth bound of its
//     own. __typename is free.
//
// Before any of that, before a parser reads the text, the text itself is
// bounded (ScanQuery): its bytes, its tokens and the nesting of its brackets;
// and so are the tokens and nesting of the request's JSON (ScanJSON). Once
// parsed, before validation, the document's definitions (operations and
// fragments) are bounded, and its fragments times its selections: validation
// compares fragments pairwise and with the fields they meet.
package limits

import (
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/vitolahq/vitola/internal/apierr"
)

// Config holds the limits. Zero fields take the defaults.
type Config struct {
	MaxDepth      int // 8
	MaxAliases    int // 20
	MaxRootFields int // 10
	MaxCost       int // 1000
	MaxPageSize   int // 100: the largest value of a slicing argument
	// DefaultPageSize is the size of a list none of whose slicing arguments is
	// given: a connection's page without first or last (pagination.DefaultSize).
	DefaultPageSize       int // 20
	DefaultListSize       int // 10: lists with no @listSize
	MaxIntrospectionDepth int // 20
	// MaxNodes bounds the fields visited with fragments expanded: a guard against
	// fragment fan-out that every other limit would only see after the fact.
	MaxNodes int // 10000
	// MaxRepeats bounds how often one response name appears in one selection
	// set (fragments expanded): validation compares such fields pairwise.
	MaxRepeats int // 50
	// MaxQueryBytes, MaxTokens and MaxNesting bound the operation's text before
	// any parser reads it, in one linear pass: parsing and validation cost more
	// than linear time in what they build. MaxNesting also bounds the request's
	// JSON (variables).
	MaxQueryBytes int // 65536
	MaxTokens     int // 15000
	MaxNesting    int // 64: brackets of every kind together
	// MaxBodyBytes bounds a request's body (the router refuses a larger one
	// with 413 before reading it all).
	MaxBodyBytes int // 262144
	// MaxDefinitions bounds the operations and fragments a document defines,
	// checked before validation: gqlparser's validation compares fragments
	// pairwise (a chain of fragments spreading each other costs their cube),
	// the engine's compares operation names pairwise.
	MaxDefinitions int // 100
	// MaxFragmentProduct bounds the fragment definitions times the selections
	// (fields, spreads, inline fragments) of the document as written, checked
	// before validation: gqlparser's validation compares every fragment with the
	// fields it meets, rebuilding each fragment's fields at each comparison, so
	// its cost grows with that product.
	MaxFragmentProduct int // 20000
	// MaxCacheBytes bounds what the analyzer keeps between requests, estimated:
	// its verdicts, and the parsed documents of operations whose cost depends
	// on their variables (about 60 bytes for each byte of their text).
	MaxCacheBytes int // 64 MiB
}

// Defaults returns the default limits.
func Defaults() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxDepth, 8)
	def(&c.MaxAliases, 20)
	def(&c.MaxRootFields, 10)
	def(&c.MaxCost, 1000)
	def(&c.MaxPageSize, 100)
	def(&c.DefaultPageSize, 20)
	def(&c.DefaultListSize, 10)
	def(&c.MaxIntrospectionDepth, 20)
	def(&c.MaxNodes, 10000)
	def(&c.MaxRepeats, 50)
	def(&c.MaxQueryBytes, 64<<10)
	def(&c.MaxTokens, 15000)
	def(&c.MaxNesting, 64)
	def(&c.MaxDefinitions, 100)
	def(&c.MaxFragmentProduct, 20000)
	def(&c.MaxBodyBytes, 256<<10)
	def(&c.MaxCacheBytes, 64<<20)
	return c
}

// Measure is what the analyzer found in an operation.
type Measure struct {
	// Type is the operation's: query, mutation or subscription.
	Type       string
	Depth      int
	Aliases    int
	RootFields int
	Cost       int
}

// Error codes of rejected operations (in extensions.code).
const (
	CodeParseFailed      = "GRAPHQL_PARSE_FAILED"
	CodeValidationFailed = "GRAPHQL_VALIDATION_FAILED"
	CodeDepth            = "DEPTH_LIMIT_EXCEEDED"
	CodeAliases          = "ALIAS_LIMIT_EXCEEDED"
	CodeRootFields       = "ROOT_FIELD_LIMIT_EXCEEDED"
	CodeCost             = "COST_LIMIT_EXCEEDED"
	CodePageSize         = "PAGE_SIZE_EXCEEDED"
	CodeIntrospection    = "INTROSPECTION_DEPTH_EXCEEDED"
	CodeTooLarge         = "OPERATION_TOO_LARGE"
)

// Rejection is an operation the analyzer refused, with GraphQL errors to return.
type Rejection struct {
	Errors gqlerror.List
}

func (r *Rejection) Error() string { return r.Errors.Error() }

func reject(code, limit string, max, actual int, format string, args ...any) *Rejection {
	return &Rejection{Errors: gqlerror.List{{
		Message:    fmt.Sprintf(format, args...),
		Extensions: map[string]any{"code": code, "limit": limit, "maximum": max, "actual": actual},
	}}}
}

type directives struct {
	weight   *int
	assumed  *int
	slicing  []string
	sized    []string
	hasLimit bool
}

// Analyzer checks operations against one schema. It is safe for concurrent use
// and caches its static verdict per operation text.
type Analyzer struct {
	schema *ast.Schema
	cfg    Config
	fields map[string]directives // "Type.field"
	cache  *lru.Cache[uint64, *analysis]
	cached atomic.Int64 // the cache's estimated bytes
	seed   maphash.Seed
}

// Limits returns the analyzer's limits, defaults filled in.
func (a *Analyzer) Limits() Config { return a.cfg }

// New builds an analyzer over the public (client) schema SDL, reading @cost and
// @listSize from the subgraph SDLs.
func New(clientSDL string, subgraphSDLs []string, cfg Config) (*Analyzer, error) {
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: "client.graphqls", Input: clientSDL})
	if err != nil {
		return nil, fmt.Errorf("load client schema: %w", err)
	}
	fields := map[string]directives{}
	for i, sdl := range subgraphSDLs {
		doc, err := parser.ParseSchema(&ast.Source{Name: fmt.Sprintf("subgraph-%d.graphqls", i), Input: sdl})
		if err != nil {
			return nil, fmt.Errorf("parse subgraph SDL: %w", err)
		}
		for _, defs := range []ast.DefinitionList{doc.Definitions, doc.Extensions} {
			for _, def := range defs {
				for _, f := range def.Fields {
					if d, ok := readDirectives(f.Directives); ok {
						fields[def.Name+"."+f.Name] = d
					}
				}
			}
		}
	}
	a := &Analyzer{schema: schema, cfg: cfg.withDefaults(), fields: fields, seed: maphash.MakeSeed()}
	a.cache, _ = lru.NewWithEvict(2048, func(_ uint64, an *analysis) { a.cached.Add(-an.bytes) })
	return a, nil
}

func readDirectives(list ast.DirectiveList) (directives, bool) {
	var d directives
	found := false
	if c := list.ForName("cost"); c != nil {
		if a := c.Arguments.ForName("weight"); a != nil {
			if n, err := strconv.Atoi(a.Value.Raw); err == nil {
				d.weight, found = &n, true
			}
		}
	}
	if l := list.ForName("listSize"); l != nil {
		found, d.hasLimit = true, true
		if a := l.Arguments.ForName("assumedSize"); a != nil {
			if n, err := strconv.Atoi(a.Value.Raw); err == nil {
				d.assumed = &n
			}
		}
		for _, name := range []string{"slicingArguments", "sizedFields"} {
			a := l.Arguments.ForName(name)
			if a == nil {
				continue
			}
			var vals []string
			for _, c := range a.Value.Children {
				vals = append(vals, c.Value.Raw)
			}
			if name == "slicingArguments" {
				d.slicing = vals
			} else {
				d.sized = vals
			}
		}
	}
	return d, found
}

// analysis is the cached, variable-independent part of a verdict.
type analysis struct {
	doc       *ast.QueryDocument
	op        *ast.OperationDefinition
	measure   Measure
	rejection *Rejection
	costFixed bool  // cost does not depend on variables: measure.Cost is final
	bytes     int64 // what it holds, estimated
}

// docBytesPerByte estimates a parsed document's size from its text's (measured
// on gqlparser v2.5: about 60).
const docBytesPerByte = 64

// Check measures an operation with its variables and returns its figures, or a
// *Rejection saying which rule it broke (with the measured value and the maximum).
func (a *Analyzer) Check(query, operationName string, variables map[string]any) (Measure, error) {
	var h maphash.Hash
	h.SetSeed(a.seed)
	h.WriteString(operationName)
	h.WriteByte(0)
	h.WriteString(query)
	key := h.Sum64()

	an, ok := a.cache.Get(key)
	if !ok {
		an = a.analyze(query, operationName)
		a.remember(key, query, an)
	}
	return a.verdict(an, variables)
}

// verdict completes an analysis with the operation's variables: the cost,
// when it depends on them.
func (a *Analyzer) verdict(an *analysis, variables map[string]any) (Measure, error) {
	if an.rejection != nil {
		return an.measure, an.rejection
	}
	if an.costFixed {
		return an.measure, nil
	}
	m := an.measure
	w := &walker{a: a, doc: an.doc, vars: variables, op: an.op}
	cost, err := w.cost(an.op.SelectionSet, nil)
	if err != nil {
		return m, err
	}
	m.Cost = cost
	if m.Cost > a.cfg.MaxCost {
		return m, a.costRejection(m.Cost)
	}
	return m, nil
}

// remember caches an analysis within MaxCacheBytes: a verdict weighs its text
// (a rejection's message can quote it), a kept document far more.
func (a *Analyzer) remember(key uint64, query string, an *analysis) {
	if an.rejection != nil || an.costFixed {
		an.doc, an.op = nil, nil // only the cost walk of variables needs them
	}
	an.bytes = int64(len(query))
	if an.doc != nil {
		an.bytes *= docBytesPerByte
	}
	if an.bytes > int64(a.cfg.MaxCacheBytes) {
		return
	}
	if found, _ := a.cache.ContainsOrAdd(key, an); found {
		return
	}
	a.cached.Add(an.bytes)
	for a.cached.Load() > int64(a.cfg.MaxCacheBytes) {
		if _, _, ok := a.cache.RemoveOldest(); !ok {
			break
		}
	}
}

func (a *Analyzer) costRejection(cost int) *Rejection {
	return reject(CodeCost, "cost", a.cfg.MaxCost, cost,
		"operation cost %d exceeds the maximum cost of %d: ask for fewer items (first) or fewer nested lists", cost, a.cfg.MaxCost)
}

// CheckText bounds an operation's text before any parser reads it: its bytes,
// then its tokens and the nesting of its brackets (ScanQuery), in time linear in
// its length. Check calls it first; it returns nil or a *Rejection.
func (a *Analyzer) CheckText(query string) error {
	if rej := a.checkText(query); rej != nil {
		return rej
	}
	return nil
}

func (a *Analyzer) checkText(query string) *Rejection {
	if len(query) > a.cfg.MaxQueryBytes {
		return reject(CodeTooLarge, "query bytes", a.cfg.MaxQueryBytes, len(query),
			"the operation is %d bytes long, more than the maximum of %d: send a shorter document (pass large values as variables)", len(query), a.cfg.MaxQueryBytes)
	}
	t := ScanQuery(query)
	if t.Tokens > a.cfg.MaxTokens {
		return reject(CodeTooLarge, "tokens", a.cfg.MaxTokens, t.Tokens,
			"the operation has %d tokens (names, punctuation, values), more than the maximum of %d: send a smaller document", t.Tokens, a.cfg.MaxTokens)
	}
	if t.Nesting > a.cfg.MaxNesting {
		return reject(CodeTooLarge, "nesting", a.cfg.MaxNesting, t.Nesting,
			"the operation nests brackets ({ [ ( together) %d levels deep, more than the maximum of %d: nest fewer selections, lists or input objects", t.Nesting, a.cfg.MaxNesting)
	}
	return nil
}

// CheckRequestJSON bounds a request body's JSON before it is decoded, with the
// same maxima as an operation's text: its tokens (values, keys and brackets) and
// the nesting of its arrays and objects, where the request's own object does
// not count (a variables object is level 1, a list in it level 2). It takes
// time linear in the body and returns nil or a *Rejection.
func (a *Analyzer) CheckRequestJSON(body []byte) error {
	t := ScanJSON(body)
	if t.Tokens > a.cfg.MaxTokens {
		return reject(CodeTooLarge, "tokens", a.cfg.MaxTokens, t.Tokens,
			"the request's JSON has %d tokens (values, keys and brackets, its variables' mostly), more than the maximum of %d: send fewer variables, or shorter lists in them", t.Tokens, a.cfg.MaxTokens)
	}
	if n := t.Nesting - 1; n > a.cfg.MaxNesting {
		return reject(CodeTooLarge, "nesting", a.cfg.MaxNesting, n,
			"the request's JSON (its variables) is nested %d levels deep, more than the maximum of %d: nest fewer lists or objects", n, a.cfg.MaxNesting)
	}
	return nil
}

func (a *Analyzer) analyze(query, operationName string) *analysis {
	if rej := a.checkText(query); rej != nil {
		return &analysis{rejection: rej}
	}
	doc, err := parser.ParseQuery(&ast.Source{Name: "operation", Input: query})
	if err != nil {
		return &analysis{rejection: &Rejection{Errors: withCode(gqlerror.List{asGQLError(err)}, CodeParseFailed)}}
	}
	if n := len(doc.Operations) + len(doc.Fragments); n > a.cfg.MaxDefinitions {
		return &analysis{rejection: reject(CodeTooLarge, "definitions", a.cfg.MaxDefinitions, n,
			"the document defines %d operations and fragments, more than the maximum of %d: send the operation you run and the fragments it uses", n, a.cfg.MaxDefinitions)}
	}
	if f := len(doc.Fragments); f > 0 {
		if p := f * countSelections(doc); p > a.cfg.MaxFragmentProduct {
			return &analysis{rejection: reject(CodeTooLarge, "fragment product", a.cfg.MaxFragmentProduct, p,
				"the document's %d fragments times its %d selections is %d, more than the maximum of %d: validation compares each fragment with the fields it meets, so use fewer fragments or ask for fewer fields", f, p/f, p, a.cfg.MaxFragmentProduct)}
		}
	}
	// Bound the document's expansion before anything walks it, validation
	// included: a small text can expand exponentially through fragments, and
	// validation's cost grows faster than the document.
	size := measureSize(doc, a.cfg.MaxNodes, a.cfg.MaxRepeats)
	switch {
	case size.nodes > a.cfg.MaxNodes:
		return &analysis{rejection: reject(CodeTooLarge, "nodes", a.cfg.MaxNodes, size.nodes, "operation expands to more than %d fields: use fewer or smaller fragments", a.cfg.MaxNodes)}
	case size.repeats > a.cfg.MaxRepeats:
		return &analysis{rejection: reject(CodeTooLarge, "repeats", a.cfg.MaxRepeats, size.repeats, "%s appears more than %d times in one selection: ask for each field once", apierr.Quote(size.repeated), a.cfg.MaxRepeats)}
	}
	errs := validator.ValidateWithRules(a.schema, doc, nil)
	if len(errs) == 0 {
		errs = deferLabels(doc)
	}
	if len(errs) > 0 {
		return &analysis{rejection: &Rejection{Errors: withCode(firstErrors(errs), CodeValidationFailed)}}
	}
	op := doc.Operations.ForName(operationName)
	if op == nil {
		msg := "no operation named " + apierr.Quote(operationName) + " in the document"
		if operationName == "" {
			msg = "the document has several operations: say which to run with operationName"
		}
		return &analysis{rejection: &Rejection{Errors: gqlerror.List{{Message: msg, Extensions: map[string]any{"code": CodeValidationFailed}}}}}
	}

	w := &walker{a: a, doc: doc, op: op}
	m := Measure{Type: string(op.Operation)}
	m.RootFields = w.rootFields(op.SelectionSet)
	depth, introDepth := w.depth(op.SelectionSet, 0, false)
	m.Depth = depth
	m.Aliases = w.aliases
	an := &analysis{doc: doc, op: op, measure: m}
	switch {
	case m.Depth > a.cfg.MaxDepth:
		an.rejection = reject(CodeDepth, "depth", a.cfg.MaxDepth, m.Depth, "operation depth %d exceeds the maximum depth of %d: nest fewer field levels", m.Depth, a.cfg.MaxDepth)
	case introDepth > a.cfg.MaxIntrospectionDepth:
		an.rejection = reject(CodeIntrospection, "introspection depth", a.cfg.MaxIntrospectionDepth, introDepth, "introspection depth %d exceeds the maximum of %d", introDepth, a.cfg.MaxIntrospectionDepth)
	case m.Aliases > a.cfg.MaxAliases:
		an.rejection = reject(CodeAliases, "aliases", a.cfg.MaxAliases, m.Aliases, "operation uses %d aliases, more than the maximum of %d", m.Aliases, a.cfg.MaxAliases)
	case m.RootFields > a.cfg.MaxRootFields:
		an.rejection = reject(CodeRootFields, "root fields", a.cfg.MaxRootFields, m.RootFields, "operation selects %d root fields, more than the maximum of %d: split it into several operations", m.RootFields, a.cfg.MaxRootFields)
	}
	if an.rejection != nil {
		return an
	}
	if len(op.VariableDefinitions) == 0 {
		cost, err := w.cost(op.SelectionSet, nil)
		an.costFixed = true
		an.measure.Cost = cost
		var rej *Rejection
		if errors.As(err, &rej) {
			an.rejection = rej
		} else if cost > a.cfg.MaxCost {
			an.rejection = a.costRejection(cost)
		}
	}
	return an
}

func asGQLError(err error) *gqlerror.Error {
	var e *gqlerror.Error
	if errors.As(err, &e) {
		return e
	}
	return gqlerror.Wrap(err)
}

// MaxErrors is how many validation errors a rejection lists, as graphql-js
// does: a document can hold thousands, and the answer need not.
const MaxErrors = 100

// firstErrors keeps the first MaxErrors errors and says how many it left out.
func firstErrors(errs gqlerror.List) gqlerror.List {
	if len(errs) <= MaxErrors {
		return errs
	}
	more := len(errs) - MaxErrors
	return append(errs[:MaxErrors:MaxErrors], &gqlerror.Error{
		Message: fmt.Sprintf("%d more validation errors not shown: fix these first", more),
	})
}

func withCode(errs gqlerror.List, code string) gqlerror.List {
	for _, e := range errs {
		if e.Extensions == nil {
			e.Extensions = map[string]any{}
		}
		e.Extensions["code"] = code
		delete(e.Extensions, "file") // gqlparser's source name says nothing to a client
	}
	return errs
}

// countSelections counts the fields, fragment spreads and inline fragments of a
// document as written (fragments not expanded).
func countSelections(doc *ast.QueryDocument) int {
	n := 0
	eachSelection(doc, func(ast.Selection) { n++ })
	return n
}

// eachSelection calls visit with every field, fragment spread and inline
// fragment of a document as written: in its operations and its fragments'
// definitions, each once (spreads are not followed).
func eachSelection(doc *ast.QueryDocument, visit func(ast.Selection)) {
	var walk func(set ast.SelectionSet)
	walk = func(set ast.SelectionSet) {
		for _, sel := range set {
			visit(sel)
			switch s := sel.(type) {
			case *ast.Field:
				walk(s.SelectionSet)
			case *ast.InlineFragment:
				walk(s.SelectionSet)
			}
		}
	}
	for _, op := range doc.Operations {
		walk(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		walk(f.SelectionSet)
	}
}

// size is what measureSize found: the fields and fragment spreads of every
// operation with fragments expanded, and the response name repeated most in one
// selection set.
type size struct {
	nodes    int
	repeated string
	repeats  int
}

// measureSize walks the document before validation, so it finds fragments by
// name and survives cycles (each spread counts, so a cycle soon passes the
// limit). It stops once either limit is passed.
func measureSize(doc *ast.QueryDocument, maxNodes, maxRepeats int) size {
	var sz size
	over := func() bool { return sz.nodes > maxNodes || sz.repeats > maxRepeats }
	// seen counts response names in one selection set, fragments included.
	var walk func(set ast.SelectionSet, seen map[string]int)
	walk = func(set ast.SelectionSet, seen map[string]int) {
		for _, sel := range set {
			if over() {
				return
			}
			sz.nodes++
			switch s := sel.(type) {
			case *ast.Field:
				name := s.Alias
				if name == "" {
					name = s.Name
				}
				seen[name]++
				if seen[name] > sz.repeats {
					sz.repeated, sz.repeats = name, seen[name]
				}
				walk(s.SelectionSet, map[string]int{})
			case *ast.InlineFragment:
				walk(s.SelectionSet, seen)
			case *ast.FragmentSpread:
				if f := doc.Fragments.ForName(s.Name); f != nil {
					walk(f.SelectionSet, seen)
				}
			}
		}
	}
	for _, op := range doc.Operations {
		walk(op.SelectionSet, map[string]int{})
	}
	return sz
}

// A walker visits one validated operation, whose expansion countNodes bounded.
type walker struct {
	a       *Analyzer
	doc     *ast.QueryDocument
	op      *ast.OperationDefinition
	vars    map[string]any
	aliases int
}

// fields flattens a selection set: fragment spreads and inline fragments are
// expanded in place.
func (w *walker) fields(set ast.SelectionSet, visit func(f *ast.Field)) {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			visit(s)
		case *ast.InlineFragment:
			w.fields(s.SelectionSet, visit)
		case *ast.FragmentSpread:
			if s.Definition != nil {
				w.fields(s.Definition.SelectionSet, visit)
			}
		}
	}
}

func (w *walker) rootFields(set ast.SelectionSet) int {
	n := 0
	w.fields(set, func(f *ast.Field) {
		if f.Name != "__typename" {
			n++
		}
	})
	return n
}

// depth returns the operation's depth without introspection, and the depth of its
// introspection part; it counts aliases on the way.
func (w *walker) depth(set ast.SelectionSet, level int, intro bool) (int, int) {
	maxD, maxIntro := 0, 0
	w.fields(set, func(f *ast.Field) {
		if f.Alias != "" && f.Alias != f.Name {
			w.aliases++
		}
		inIntro := intro || (level == 0 && (f.Name == "__schema" || f.Name == "__type"))
		d, id := w.depth(f.SelectionSet, level+1, inIntro)
		if inIntro {
			maxIntro = max(maxIntro, 1+max(d, id))
			return
		}
		maxD = max(maxD, 1+d)
		maxIntro = max(maxIntro, id)
	})
	return maxD, maxIntro
}

// cost computes the selection's cost; sized holds the sizes a parent's
// @listSize(sizedFields) gives to its child fields.
func (w *walker) cost(set ast.SelectionSet, sized map[string]int) (int, error) {
	total := 0
	var firstErr error
	w.fields(set, func(f *ast.Field) {
		if firstErr != nil || strings.HasPrefix(f.Name, "__") || f.Definition == nil {
			return
		}
		def := f.Definition
		d := w.a.fields[f.ObjectDefinition.Name+"."+f.Name]
		weight := 0
		if t := w.a.schema.Types[def.Type.Name()]; t != nil && (t.Kind == ast.Object || t.Kind == ast.Interface || t.Kind == ast.Union) {
			weight = 1
		}
		if d.weight != nil {
			weight = *d.weight
		}
		size := 1
		var childSized map[string]int
		isList := def.Type.Elem != nil
		if len(d.slicing) > 0 {
			n, err := w.slicingValue(f, d.slicing)
			if err != nil {
				firstErr = err
				return
			}
			if len(d.sized) > 0 {
				childSized = map[string]int{}
				for _, s := range d.sized {
					childSized[s] = n
				}
			} else if isList {
				size = n
			}
		}
		if isList && len(d.slicing) == 0 {
			switch {
			case sized != nil && hasKey(sized, f.Name):
				size = sized[f.Name]
			case d.assumed != nil:
				size = *d.assumed
			default:
				size = w.a.cfg.DefaultListSize
			}
		} else if isList && sized != nil && hasKey(sized, f.Name) {
			size = sized[f.Name]
		}
		child, err := w.cost(f.SelectionSet, childSized)
		if err != nil {
			firstErr = err
			return
		}
		total += size * (weight + child)
	})
	return total, firstErr
}

func hasKey(m map[string]int, k string) bool { _, ok := m[k]; return ok }

// slicingValue is the largest value among a field's slicing arguments, checked
// against the page size limit. An absent argument counts as its default; with
// none given, the list is a default page.
func (w *walker) slicingValue(f *ast.Field, names []string) (int, error) {
	best, found := 0, false
	for _, name := range names {
		n, ok := w.argInt(f, name)
		if !ok {
			continue
		}
		found = true
		if n > w.a.cfg.MaxPageSize {
			return 0, reject(CodePageSize, "page size", w.a.cfg.MaxPageSize, n,
				"%s: %s is %d, more than the maximum page size of %d", f.Name, name, n, w.a.cfg.MaxPageSize)
		}
		best = max(best, n)
	}
	if !found {
		return w.a.cfg.DefaultPageSize, nil // the subgraph's default page
	}
	return best, nil
}

func (w *walker) argInt(f *ast.Field, name string) (int, bool) {
	if a := f.Arguments.ForName(name); a != nil {
		v := a.Value
		if v.Kind == ast.Variable {
			if raw, ok := w.vars[v.Raw]; ok {
				return numeric(raw)
			}
			if vd := w.op.VariableDefinitions.ForName(v.Raw); vd != nil && vd.DefaultValue != nil {
				n, err := strconv.Atoi(vd.DefaultValue.Raw)
				return n, err == nil
			}
			return 0, false
		}
		n, err := strconv.Atoi(v.Raw)
		return n, err == nil
	}
	if ad := f.Definition.Arguments.ForName(name); ad != nil && ad.DefaultValue != nil {
		n, err := strconv.Atoi(ad.DefaultValue.Raw)
		return n, err == nil
	}
	return 0, false
}

func numeric(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		return int(n), n == float64(int(n))
	case int:
		return n, true
	case int64:
		return int(n), true
	}
	return 0, false
}
