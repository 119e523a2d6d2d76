package router_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/router/limits"
	"github.com/vitolahq/vitola/schema"
)

// generatedOpsRegressions are operations the generator found answered 500
// or refused though valid, each kept as it failed: they run first, every time.
var generatedOpsRegressions = []generatedOp{
	// A labelled @defer after a field @include(if: false) removes: the engine's
	// label rule saw the label twice (400 GRAPHQL_VALIDATION_FAILED).
	{Query: `query Op175($v0: Int, $v1: String, $v2: ID!, $v3: Boolean!) { venues(last: $v0, before: "2026-01-02") { edges { node { sessions(from: "https://example.com/band.jpg", to: $v1, featured: true) { count count } a1: website } ...F0 @defer(label: "l1") __typename } } user(id: $v2) @include(if: false) { email imageUrl imageUrl ...F1 @defer(if: $v3) } } fragment F0 on VenueEdge { cursor cursor } fragment F1 on User { firstName }`,
		Variables: json.RawMessage(`{"v0":3,"v1":"https://example.com/band.jpg","v2":"brd_1m1yv0dwrfkp4sak","v3":false}`)},
}

// No request makes the router answer 500: valid operations generated from the
// public schema (every query root field, arguments as literals and variables,
// nested selections within the limits, inline fragments on interfaces and
// unions, named fragments, @skip, @include, @defer, __typename, introspection)
// go through the real router over HTTP, GET and POST, and each answer is
// well-formed GraphQL JSON: 200, or a 4xx whose every error has
// extensions.code (a limit the generator overstepped, cost mostly), never
// GRAPHQL_VALIDATION_FAILED: every operation sent is valid. The seed is
// fixed; VITOLA_TEST_GENERATED_OPS sets how many operations (default 300),
// VITOLA_TEST_GENERATED_SEED the seed.
func TestGeneratedOperations(t *testing.T) {
	count, seed := 300, uint64(39)
	if v := os.Getenv("VITOLA_TEST_GENERATED_OPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("VITOLA_TEST_GENERATED_OPS=%q: want a positive count", v)
		}
		count = n
	}
	if v := os.Getenv("VITOLA_TEST_GENERATED_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("VITOLA_TEST_GENERATED_SEED=%q: want a number", v)
		}
		seed = n
	}
	composed, err := router.LoadComposed(schema.RouterConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	sch, gerr := gqlparser.LoadSchema(&ast.Source{Name: "client.graphqls", Input: composed.ClientSchema})
	if gerr != nil {
		t.Fatal(gerr)
	}
	tr := newTestRouter(t, limits.Config{})
	srv := tr.overHTTP(t)
	servedIntrospection(t, tr, srv, sch)
	g := newOpGenerator(sch, seed)

	check := func(op generatedOp) {
		t.Helper()
		var statuses []int
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			status, msg := sendGenerated(t, tr, srv, method, op, g)
			if msg != "" {
				t.Errorf("%s answered %d: %s\noperation: %s\nvariables: %s", method, status, msg, op.Query, op.Variables)
			}
			statuses = append(statuses, status)
		}
		if statuses[0] != statuses[1] {
			t.Errorf("POST answered %d, GET %d\noperation: %s\nvariables: %s", statuses[0], statuses[1], op.Query, op.Variables)
		}
	}
	for _, op := range generatedOpsRegressions {
		check(op)
	}
	rootsSeen := map[string]bool{}
	discarded := 0
	for i := 0; i < count && !t.Failed(); i++ {
		op, ok := g.operation(i)
		if !ok {
			discarded++
			i--
			if discarded > 10*count {
				t.Fatalf("the generator made %d invalid operations for %d valid ones: %s", discarded, i+1, g.lastInvalid)
			}
			continue
		}
		for _, f := range op.roots {
			rootsSeen[f] = true
		}
		check(op)
	}
	// Every query root field (introspection's included) was sent, when there
	// were operations enough to reach them all.
	if count >= len(g.roots) {
		for _, f := range g.roots {
			if !rootsSeen[f.Name] {
				t.Errorf("no generated operation selected Query.%s", f.Name)
			}
		}
	}
	t.Logf("%d operations (seed %d), %d generated invalid and discarded; answers: %v", count, seed, discarded, g.outcomes)
}

// servedIntrospection keeps of the introspection types' fields only those the
// router serves: gqlparser's are the newest specification's (__Type.isOneOf),
// which the engine does not know. Each field is probed with a query that
// reaches it from Query by the shortest path (a required argument gets
// "Query", __type's name).
func servedIntrospection(t *testing.T, tr *testRouter, srv *httptest.Server, sch *ast.Schema) {
	t.Helper()
	paths := map[string]string{} // type name: how to open a selection of it, from the root
	queue := []string{}
	for _, f := range sch.Query.Fields {
		if strings.HasPrefix(f.Name, "__") {
			paths[f.Type.Name()] = f.Name + requiredArgs(f)
			queue = append(queue, f.Type.Name())
		}
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		for _, f := range sch.Types[name].Fields {
			next := f.Type.Name()
			if _, ok := paths[next]; !ok && strings.HasPrefix(next, "__") && len(sch.Types[next].Fields) > 0 {
				paths[next] = paths[name] + " { " + f.Name + requiredArgs(f)
				queue = append(queue, next)
			}
		}
	}
	for name, path := range paths {
		def := sch.Types[name]
		def.Fields = slices.DeleteFunc(def.Fields, func(f *ast.FieldDefinition) bool {
			sel := f.Name + requiredArgs(f)
			if k := sch.Types[f.Type.Name()].Kind; k == ast.Object || k == ast.Interface {
				sel += " { __typename }"
			}
			q := "{ " + path + " { " + sel + " }" + strings.Repeat(" }", strings.Count(path, "{")) + " }"
			status, raw := tr.request(t, srv, http.MethodPost, map[string]any{"query": q})
			if status != http.StatusOK && !strings.Contains(string(raw), "Cannot query field") {
				t.Fatalf("probe %s.%s: %s: %d %s", name, f.Name, q, status, raw)
			}
			return status != http.StatusOK
		})
	}
}

func requiredArgs(f *ast.FieldDefinition) string {
	var args []string
	for _, a := range f.Arguments {
		if a.Type.NonNull && a.DefaultValue == nil {
			args = append(args, a.Name+`: "Query"`)
		}
	}
	if len(args) == 0 {
		return ""
	}
	return "(" + strings.Join(args, ", ") + ")"
}

// generatedOp is one operation as sent.
type generatedOp struct {
	Query, OperationName string
	Variables            json.RawMessage
	roots                []string
}

// sendGenerated sends op and returns its status and what is wrong with the
// answer ("" if nothing). It learns the IDs the answer holds, for later
// operations' arguments.
func sendGenerated(t *testing.T, tr *testRouter, srv *httptest.Server, method string, op generatedOp, g *opGenerator) (int, string) {
	t.Helper()
	body := map[string]any{"query": op.Query}
	if op.OperationName != "" {
		body["operationName"] = op.OperationName
	}
	if len(op.Variables) > 0 {
		body["variables"] = op.Variables
	}
	status, raw := tr.request(t, srv, method, body)
	var r struct {
		Data   *json.RawMessage `json:"data"`
		Errors []struct {
			Message    *string        `json:"message"`
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return status, fmt.Sprintf("not JSON: %.300s", raw)
	}
	if status >= 500 {
		return status, string(raw)
	}
	if r.Data == nil && len(r.Errors) == 0 {
		return status, fmt.Sprintf("neither data nor errors: %.300s", raw)
	}
	for _, e := range r.Errors {
		if e.Message == nil || *e.Message == "" {
			return status, fmt.Sprintf("an error without a message: %.300s", raw)
		}
	}
	switch {
	case status == http.StatusOK:
		g.outcomes["200"]++
		for _, e := range r.Errors {
			code, _ := e.Extensions["code"].(string)
			g.outcomes["200 with "+code]++
		}
		if r.Data != nil {
			g.learnIDs(*r.Data)
		}
	case status >= 400 && status < 500:
		if r.Data != nil || len(r.Errors) == 0 {
			return status, fmt.Sprintf("a refusal with data or without errors: %.300s", raw)
		}
		for _, e := range r.Errors {
			code, _ := e.Extensions["code"].(string)
			if code == "" {
				return status, fmt.Sprintf("a refusal without extensions.code: %.300s", raw)
			}
			if code == limits.CodeValidationFailed {
				// The operation passed validation against the schema the
				// router serves: refusing it is the router's fault.
				return status, fmt.Sprintf("a valid operation refused as invalid: %.300s", raw)
			}
			g.outcomes[strconv.Itoa(status)+" "+code]++
		}
	default:
		return status, fmt.Sprintf("unexpected status: %.300s", raw)
	}
	return status, ""
}

// opGenerator makes valid operations by walking the schema: no field, type or
// argument is named here, so new ones are covered as they come.
type opGenerator struct {
	rnd    *rand.Rand
	schema *ast.Schema
	roots  []*ast.FieldDefinition // Query's fields, introspection's included
	// ids are IDs earlier answers held, for ID arguments.
	ids         []string
	typeNames   []string
	outcomes    map[string]int
	lastInvalid string

	// One operation's state.
	vars      []string
	values    map[string]any
	fragments []string
	aliases   int
	labels    int
}

func newOpGenerator(s *ast.Schema, seed uint64) *opGenerator {
	g := &opGenerator{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), schema: s, outcomes: map[string]int{}}
	for _, f := range s.Query.Fields {
		g.roots = append(g.roots, f)
	}
	for name := range s.Types {
		g.typeNames = append(g.typeNames, name)
	}
	slices.Sort(g.typeNames) // map order would make the run depend on more than the seed
	return g
}

// The generator stays within the default limits: depth 8, 20 aliases, 10 root
// fields; pages stay small so that cost mostly does too.
const (
	genMaxDepth   = 8
	genMaxAliases = 12
	genMaxRoots   = 3
)

// operation generates the i-th operation: its first root field is the i-th
// of Query's (in turn), so that every root field is sent. ok is false when
// what it made is not valid (conflicting fields, mostly): the caller makes
// another.
func (g *opGenerator) operation(i int) (generatedOp, bool) {
	g.vars, g.values, g.fragments, g.aliases, g.labels = nil, map[string]any{}, nil, 0, 0
	seen := map[string]string{}
	var sel []string
	first := g.roots[i%len(g.roots)]
	roots := []string{first.Name}
	sel = append(sel, g.field(first, 1, seen))
	var more []string
	for n := g.rnd.IntN(genMaxRoots); n > 0; n-- {
		f := g.roots[g.rnd.IntN(len(g.roots))]
		if s := g.field(f, 1, seen); s != "" {
			more = append(more, s)
			roots = append(roots, f.Name)
		}
	}
	if len(more) > 0 && g.rnd.IntN(4) == 0 {
		// Root fields in a fragment: deferred, skipped or not.
		more = []string{"..." + g.fragmentDirectives() + " { " + strings.Join(more, " ") + " }"}
	}
	sel = append(sel, more...)
	if g.rnd.IntN(4) == 0 {
		sel = append(sel, "__typename")
	}
	name := ""
	if g.rnd.IntN(2) == 0 {
		name = "Op" + strconv.Itoa(i)
	}
	var b strings.Builder
	b.WriteString("query")
	if name != "" {
		b.WriteString(" " + name)
	}
	if len(g.vars) > 0 {
		b.WriteString("(" + strings.Join(g.vars, ", ") + ")")
	}
	b.WriteString(" { " + strings.Join(slices.DeleteFunc(sel, func(s string) bool { return s == "" }), " ") + " }")
	for _, f := range g.fragments {
		b.WriteString(" " + f)
	}
	op := generatedOp{Query: b.String(), roots: roots}
	if name != "" && g.rnd.IntN(2) == 0 {
		op.OperationName = name
	}
	if len(g.values) > 0 {
		op.Variables, _ = json.Marshal(g.values)
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: op.Query})
	if err == nil {
		if errs := validator.ValidateWithRules(g.schema, doc, nil); len(errs) > 0 {
			err = errs
		}
	}
	if err != nil {
		g.lastInvalid = op.Query + ": " + err.Error()
		return op, false
	}
	return op, true
}

// selectionSet selects from a composite type t whose fields are at level
// depth: a few fields, inline fragments on its possible types, maybe a named
// fragment. seen maps the response names of the merged selection set to what
// each selects, so that no two fields conflict.
func (g *opGenerator) selectionSet(t *ast.Definition, depth int, seen map[string]string) string {
	var sel []string
	if t.Kind == ast.Object || t.Kind == ast.Interface {
		fields := slices.DeleteFunc(slices.Clone(t.Fields), func(f *ast.FieldDefinition) bool { return strings.HasPrefix(f.Name, "__") })
		for n := 1 + g.rnd.IntN(3); n > 0 && len(fields) > 0; n-- {
			f := fields[g.rnd.IntN(len(fields))]
			if s := g.field(f, depth, seen); s != "" {
				sel = append(sel, s)
			}
		}
	}
	if t.Kind != ast.Object {
		possible := g.schema.GetPossibleTypes(t)
		for n := 1 + g.rnd.IntN(2); n > 0 && len(possible) > 0; n-- {
			pt := possible[g.rnd.IntN(len(possible))]
			sel = append(sel, "... on "+pt.Name+g.fragmentDirectives()+" { "+g.selectionSet(pt, depth, seen)+" }")
		}
	} else if g.rnd.IntN(6) == 0 {
		// A fragment without a type condition, deferred or not.
		sel = append(sel, "..."+g.fragmentDirectives()+" { "+g.selectionSet(t, depth, seen)+" }")
	}
	if g.rnd.IntN(8) == 0 {
		name := "F" + strconv.Itoa(len(g.fragments))
		g.fragments = append(g.fragments, "") // reserve the name before nested ones
		i := len(g.fragments) - 1
		g.fragments[i] = "fragment " + name + " on " + t.Name + " { " + g.selectionSet(t, depth, seen) + " }"
		sel = append(sel, "..."+name+g.fragmentDirectives())
	}
	if len(sel) == 0 || g.rnd.IntN(5) == 0 {
		sel = append(sel, "__typename")
	}
	return strings.Join(sel, " ")
}

// field selects f at level depth: maybe aliased, with arguments,
// maybe @skip or @include, and a selection set if its type is composite. It
// answers "" when f cannot be selected here: too deep for a composite, or its
// response name taken by a field it would conflict with.
func (g *opGenerator) field(f *ast.FieldDefinition, depth int, seen map[string]string) string {
	t := g.schema.Types[f.Type.Name()]
	composite := t.Kind == ast.Object || t.Kind == ast.Interface || t.Kind == ast.Union
	if composite && depth >= genMaxDepth {
		return ""
	}
	args := g.arguments(f.Arguments)
	sig := f.Name + args + ":" + f.Type.String()
	resp := f.Name
	if prev, ok := seen[resp]; ok && (prev != sig || composite) || g.rnd.IntN(10) == 0 {
		if g.aliases >= genMaxAliases {
			return ""
		}
		g.aliases++
		resp = "a" + strconv.Itoa(g.aliases)
	}
	seen[resp] = sig
	var b strings.Builder
	if resp != f.Name {
		b.WriteString(resp + ": ")
	}
	b.WriteString(f.Name + args)
	if g.rnd.IntN(12) == 0 {
		b.WriteString(g.skipOrInclude())
	}
	if composite {
		b.WriteString(" { " + g.selectionSet(t, depth+1, map[string]string{}) + " }")
	}
	return b.String()
}

// arguments gives every required argument and some optional ones.
func (g *opGenerator) arguments(defs ast.ArgumentDefinitionList) string {
	var out []string
	for _, a := range defs {
		required := a.Type.NonNull && a.DefaultValue == nil
		if !required && g.rnd.IntN(5) >= 2 {
			continue
		}
		out = append(out, a.Name+": "+g.argument(a.Name, a.Type))
	}
	if len(out) == 0 {
		return ""
	}
	return "(" + strings.Join(out, ", ") + ")"
}

// argument is a value of type t as a literal, or as a variable (declared
// with t, its value among the operation's variables).
func (g *opGenerator) argument(name string, t *ast.Type) string {
	v := g.value(name, t, 0)
	if g.rnd.IntN(3) == 0 {
		return g.variable(t.String(), v)
	}
	return literal(v)
}

func (g *opGenerator) variable(typ string, v any) string {
	name := "v" + strconv.Itoa(len(g.vars))
	def := "$" + name + ": " + typ
	if g.rnd.IntN(5) == 0 {
		// A default value, the variable sent or left out.
		g.vars = append(g.vars, def+" = "+literal(v))
		if g.rnd.IntN(2) == 0 {
			g.values[name] = jsonValue(v)
		}
		return "$" + name
	}
	g.vars = append(g.vars, def)
	if v != nil || g.rnd.IntN(2) == 0 {
		g.values[name] = jsonValue(v)
	} // else left out: a nullable variable may be
	return "$" + name
}

// enumValue is an enum value: a literal without quotes, a string in JSON.
type enumValue string

// inputObject keeps its fields in order, for a stable text.
type inputObject [][2]any

// value is a valid value of type t; nesting bounds input objects and lists.
func (g *opGenerator) value(name string, t *ast.Type, nesting int) any {
	if !t.NonNull && g.rnd.IntN(10) == 0 {
		return nil
	}
	if t.Elem != nil {
		var list []any
		for n := 1 + g.rnd.IntN(2); n > 0 && nesting < 4; n-- {
			list = append(list, g.value(name, t.Elem, nesting+1))
		}
		if list == nil {
			list = []any{}
		}
		return list
	}
	def := g.schema.Types[t.NamedType]
	switch def.Kind {
	case ast.Enum:
		return enumValue(def.EnumValues[g.rnd.IntN(len(def.EnumValues))].Name)
	case ast.InputObject:
		var obj inputObject
		for _, f := range def.Fields {
			if (f.Type.NonNull && f.DefaultValue == nil) || (nesting < 4 && g.rnd.IntN(2) == 0) {
				obj = append(obj, [2]any{f.Name, g.value(f.Name, f.Type, nesting+1)})
			}
		}
		return obj
	}
	switch t.NamedType {
	case "Int":
		if g.rnd.IntN(20) == 0 {
			return g.rnd.IntN(102) // up to a page over the largest: cost and page-size refusals
		}
		return g.rnd.IntN(4) // small: page sizes keep cost down
	case "Float":
		return float64(g.rnd.IntN(40)) / 4
	case "Boolean":
		return g.rnd.IntN(2) == 0
	case "ID":
		if len(g.ids) > 0 && g.rnd.IntN(4) != 0 {
			return g.ids[g.rnd.IntN(len(g.ids))]
		}
		return []string{"brd_0000000000000000", "nope", ""}[g.rnd.IntN(3)]
	}
	// String and custom scalars: a word, a date, a URL, a type's name (for
	// __type), the empty string.
	pool := []string{"padron", "cohiba maduro", "2026-01-02", "https://example.com/band.jpg", "", "ü", g.typeNames[g.rnd.IntN(len(g.typeNames))]}
	if name == "name" && g.rnd.IntN(2) == 0 {
		return g.typeNames[g.rnd.IntN(len(g.typeNames))]
	}
	return pool[g.rnd.IntN(len(pool))]
}

// skipOrInclude is @skip or @include with a literal or a variable condition.
func (g *opGenerator) skipOrInclude() string {
	d := []string{"skip", "include"}[g.rnd.IntN(2)]
	return " @" + d + "(if: " + g.condition() + ")"
}

func (g *opGenerator) condition() string {
	b := g.rnd.IntN(2) == 0
	if g.rnd.IntN(2) == 0 {
		return g.variable("Boolean!", b)
	}
	return strconv.FormatBool(b)
}

// fragmentDirectives are a fragment's: none, @defer (with or without a label
// and an if), @skip or @include.
func (g *opGenerator) fragmentDirectives() string {
	switch g.rnd.IntN(6) {
	case 0, 1:
		var args []string
		if g.rnd.IntN(2) == 0 {
			g.labels++
			args = append(args, `label: "l`+strconv.Itoa(g.labels)+`"`)
		}
		if g.rnd.IntN(2) == 0 {
			args = append(args, "if: "+g.condition())
		}
		if len(args) == 0 {
			return " @defer"
		}
		return " @defer(" + strings.Join(args, ", ") + ")"
	case 2:
		return g.skipOrInclude()
	}
	return ""
}

// learnIDs keeps the IDs an answer holds (at most a few hundred).
func (g *opGenerator) learnIDs(raw json.RawMessage) {
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if id, ok := x["id"].(string); ok && id != "" && len(g.ids) < 300 && !slices.Contains(g.ids, id) {
				g.ids = append(g.ids, id)
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var v any
	if json.Unmarshal(raw, &v) == nil {
		walk(v)
	}
}

// literal writes a value as GraphQL.
func literal(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case enumValue:
		return string(x)
	case string:
		b, _ := json.Marshal(x) // JSON's escapes are GraphQL's
		return string(b)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = literal(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case inputObject:
		parts := make([]string, len(x))
		for i, kv := range x {
			parts[i] = kv[0].(string) + ": " + literal(kv[1])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

// jsonValue makes a value what encoding/json writes as its variable value.
func jsonValue(v any) any {
	switch x := v.(type) {
	case enumValue:
		return string(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case inputObject:
		out := map[string]any{}
		for _, kv := range x {
			out[kv[0].(string)] = jsonValue(kv[1])
		}
		return out
	}
	return v
}
