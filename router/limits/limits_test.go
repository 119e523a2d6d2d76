package limits_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

const clientSDL = `
type Query {
  node(id: ID!): Node
  cigar(id: ID!): Cigar
  searchCigars(query: String!, first: Int!, after: String): CigarConnection!
  brands(first: Int = 20, after: String): BrandConnection!
  venues(first: Int, after: String, last: Int, before: String): VenueConnection!
  tags: [String!]!
  expensive: Int
}
interface Node { id: ID! }
type Brand implements Node { id: ID! name: String! cigars(first: Int = 20, after: String): CigarConnection! }
type Cigar implements Node { id: ID! name: String! brand: Brand! wrapper: [Component!]! similar: [Cigar!]! twin: Cigar }
type Component { region: String! }
type CigarConnection { edges: [CigarEdge!]! pageInfo: PageInfo! }
type CigarEdge { cursor: String! node: Cigar! }
type BrandConnection { edges: [BrandEdge!]! pageInfo: PageInfo! }
type BrandEdge { cursor: String! node: Brand! }
type PageInfo { hasNextPage: Boolean! endCursor: String }
type Venue { name: String! }
type VenueConnection { edges: [VenueEdge!]! pageInfo: PageInfo! }
type VenueEdge { cursor: String! node: Venue! }
`

// The subgraph SDL carries the cost directives, as in the real graph.
const subgraphSDL = `
directive @cost(weight: Int!) on FIELD_DEFINITION
directive @listSize(assumedSize: Int, slicingArguments: [String!], sizedFields: [String!], requireOneSlicingArgument: Boolean = true) on FIELD_DEFINITION
type Query {
  searchCigars(query: String!, first: Int!, after: String): CigarConnection! @listSize(slicingArguments: ["first"], sizedFields: ["edges"])
  brands(first: Int = 20, after: String): BrandConnection! @listSize(slicingArguments: ["first"], sizedFields: ["edges"])
  venues(first: Int, after: String, last: Int, before: String): VenueConnection! @listSize(slicingArguments: ["first", "last"], sizedFields: ["edges"])
  expensive: Int @cost(weight: 50)
}
type Brand { cigars(first: Int = 20, after: String): CigarConnection! @listSize(slicingArguments: ["first"], sizedFields: ["edges"]) }
type Cigar { wrapper: [Component!]! @listSize(assumedSize: 4) }
`

func analyzer(t *testing.T) *limits.Analyzer {
	t.Helper()
	a, err := limits.New(clientSDL, []string{subgraphSDL}, limits.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestMeasures(t *testing.T) {
	a := analyzer(t)
	tests := []struct {
		name  string
		query string
		vars  map[string]any
		want  limits.Measure
	}{
		{"leaf counts as a level", `{ cigar(id: "1") { brand { name } } }`, nil,
			limits.Measure{Depth: 3, RootFields: 1, Cost: 2}},
		// searchCigars 1 + edges 10 × (CigarEdge 1 + node 1 + brand 1) = 31
		{"connection sized by first", `{ searchCigars(query: "pa", first: 10) { edges { node { name brand { name } } } } }`, nil,
			limits.Measure{Depth: 5, RootFields: 1, Cost: 31}},
		{"first from a variable", `query Q($n: Int!) { searchCigars(query: "pa", first: $n) { edges { node { name } } } }`, map[string]any{"n": float64(50)},
			limits.Measure{Depth: 4, RootFields: 1, Cost: 101}},
		// brands default first 20: 1 + 20 × (1 + 1) = 41
		{"argument default", `{ brands { edges { node { name } } } }`, nil,
			limits.Measure{Depth: 4, RootFields: 1, Cost: 41}},
		// a Relay connection with neither first nor last is a default page of
		// 20: 1 + 20 × (1 + 1) = 41; with last, last sizes it
		{"no slicing argument given", `{ venues { edges { node { name } } } }`, nil,
			limits.Measure{Depth: 4, RootFields: 1, Cost: 41}},
		{"last", `{ venues(last: 50) { edges { node { name } } } }`, nil,
			limits.Measure{Depth: 4, RootFields: 1, Cost: 101}},
		// assumedSize 4 on wrapper: cigar 1 + 4 × 1 = 5
		{"assumed size", `{ cigar(id: "1") { wrapper { region } } }`, nil,
			limits.Measure{Depth: 3, RootFields: 1, Cost: 5}},
		// similar has no @listSize: default list size 10 → 1 + 10 × 1 = 11
		{"default list size", `{ cigar(id: "1") { similar { id } } }`, nil,
			limits.Measure{Depth: 3, RootFields: 1, Cost: 11}},
		{"@cost weight", `{ expensive }`, nil, limits.Measure{Depth: 1, RootFields: 1, Cost: 50}},
		{"scalars and __typename are free", `{ __typename tags }`, nil, limits.Measure{Depth: 1, RootFields: 1, Cost: 0}},
		{"fragments expanded, nested aliases counted",
			`{ a: cigar(id: "1") { ...F } b: cigar(id: "2") { ...F } } fragment F on Cigar { n: name brand { bn: name } }`, nil,
			limits.Measure{Depth: 3, Aliases: 6, RootFields: 2, Cost: 4}},
		{"inline fragments add no level", `{ node(id: "1") { ... on Cigar { brand { name } } } }`, nil,
			limits.Measure{Depth: 3, RootFields: 1, Cost: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Check(tt.query, "", tt.vars)
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if tt.want.Type == "" {
				tt.want.Type = "query" // every operation of this table is one
			}
			if got != tt.want {
				t.Fatalf("measure = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func deep(n int) string {
	// cigar { twin { twin { … name } } }: n field levels
	return `{ cigar(id: "1") { ` + strings.Repeat("twin { ", n-2) + "name" + strings.Repeat(" }", n-2) + ` } }`
}

func TestRejections(t *testing.T) {
	a := analyzer(t)
	many := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i) + " ")
		}
		return b.String()
	}
	tests := []struct {
		name   string
		query  string
		vars   map[string]any
		code   string
		actual int
	}{
		{"depth 9", deep(9), nil, limits.CodeDepth, 9},
		{"21 aliases", `{ cigar(id: "1") { ` + many(21, func(i int) string { return "a" + string(rune('a'+i)) + ": name" }) + ` } }`, nil, limits.CodeAliases, 21},
		{"11 root fields", `{ ` + many(11, func(i int) string { return "c" + string(rune('a'+i)) + `: cigar(id: "1") { id }` }) + ` }`, nil, limits.CodeAliases + "|" + limits.CodeRootFields, 11},
		{"cost over 1000", `{ brands(first: 100) { edges { node { cigars(first: 100) { edges { node { name } } } } } } }`, nil, limits.CodeCost, 1 + 100*(1+1+1+100*(1+1))},
		{"51 repeats of one field", `{ ` + strings.Repeat("__typename ", 51) + `}`, nil, limits.CodeTooLarge, 51},
		{"51 repeats of one alias through a fragment", `{ ...F } fragment F on Query { ` + strings.Repeat("a: __typename ", 51) + `}`, nil, limits.CodeTooLarge, 51},
		{"last over 100", `{ venues(last: 101) { edges { cursor } } }`, nil, limits.CodePageSize, 101},
		{"first over 100", `{ searchCigars(query: "pa", first: 101) { edges { cursor } } }`, nil, limits.CodePageSize, 101},
		{"first over 100 in a variable", `query Q($n: Int!) { searchCigars(query: "pa", first: $n) { edges { cursor } } }`, map[string]any{"n": float64(500)}, limits.CodePageSize, 500},
		{"validation", `{ cigar(id: "1") { nope } }`, nil, limits.CodeValidationFailed, -1},
		{"parse", `{ cigar(id: "1" { name } }`, nil, limits.CodeParseFailed, -1},
		{"no mutation root", `mutation { x }`, nil, limits.CodeValidationFailed, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Check(tt.query, "", tt.vars)
			var rej *limits.Rejection
			if !errors.As(err, &rej) {
				t.Fatalf("accepted, want %s", tt.code)
			}
			e := rej.Errors[0]
			if !strings.Contains(tt.code, e.Extensions["code"].(string)) {
				t.Fatalf("code = %v (%s), want %s", e.Extensions["code"], e.Message, tt.code)
			}
			if tt.actual >= 0 && e.Extensions["actual"] != tt.actual {
				t.Fatalf("actual = %v, want %d (%s)", e.Extensions["actual"], tt.actual, e.Message)
			}
			if e.Message == "" {
				t.Fatal("empty message")
			}
		})
	}
}

func TestLimitBoundariesPass(t *testing.T) {
	a := analyzer(t)
	// Depth exactly 8, cost exactly at a modest level, 10 root fields.
	if _, err := a.Check(deep(8), "", nil); err != nil {
		t.Fatalf("depth 8 rejected: %v", err)
	}
	var b strings.Builder
	for i := range 10 {
		b.WriteString("f" + string(rune('a'+i)) + `: cigar(id: "1") { id } `)
	}
	if m, err := a.Check("{ "+b.String()+" }", "", nil); err != nil || m.RootFields != 10 || m.Aliases != 10 {
		t.Fatalf("10 root fields: %+v %v", m, err)
	}
}

const introspectionQuery = `query IntrospectionQuery { __schema { queryType { name } types { ...FullType } directives { name args { ...InputValue } } } }
fragment FullType on __Type { kind name fields(includeDeprecated: true) { name args { ...InputValue } type { ...TypeRef } } inputFields { ...InputValue } interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name } possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } } }`

func TestIntrospectionIsExemptFromDepthAndCost(t *testing.T) {
	a := analyzer(t)
	m, err := a.Check(introspectionQuery, "IntrospectionQuery", nil)
	if err != nil {
		t.Fatalf("GraphiQL's introspection query rejected: %v", err)
	}
	if m.Depth != 0 || m.Cost != 0 {
		t.Fatalf("introspection counted: %+v", m)
	}
	// But it has a bound of its own.
	tooDeep := `{ __schema { types { fields { type { ` + strings.Repeat("ofType { ", 20) + "name" + strings.Repeat(" }", 20) + ` } } } } }`
	if _, err := a.Check(tooDeep, "", nil); err == nil || !strings.Contains(err.Error(), "introspection depth") {
		t.Fatalf("deep introspection: %v", err)
	}
}

// Every walk of the operation sees all of it: the cost is not cut short by the
// fields that earlier walks counted.
func TestCostCountsEveryFieldOfALargeOperation(t *testing.T) {
	a, err := limits.New(clientSDL, []string{subgraphSDL}, limits.Config{MaxNodes: 20})
	if err != nil {
		t.Fatal(err)
	}
	q := `{ tags tags tags tags tags brands(first: 100) { edges { node { cigars(first: 100) { edges { node { name } } } } } } }`
	_, err = a.Check(q, "", nil)
	var rej *limits.Rejection
	if !errors.As(err, &rej) || rej.Errors[0].Extensions["code"] != limits.CodeCost {
		t.Fatalf("a 12-field operation over the cost limit: %v", err)
	}
}

func TestFragmentFanOutIsBounded(t *testing.T) {
	a := analyzer(t)
	// Each fragment spreads the next twice: 2^14 leaves from a tiny document.
	q := `{ cigar(id: "1") { ...F0 } } fragment F14 on Cigar { id }`
	for i := range 14 {
		next := "F" + strconv.Itoa(i+1)
		q += " fragment F" + strconv.Itoa(i) + " on Cigar { ..." + next + " ... on Cigar { ..." + next + " } }"
	}
	_, err := a.Check(q, "", nil)
	var rej *limits.Rejection
	if !errors.As(err, &rej) {
		t.Fatal("fan-out accepted")
	}
	if code := rej.Errors[0].Extensions["code"]; code != limits.CodeTooLarge {
		t.Fatalf("code = %v", code)
	}
}

// Documents whose fields share one response name, the case where validation's
// overlap check is quadratic (5000 took 2 s before MaxRepeats), against
// documents of distinct fields of the same size (the baseline): repeated ones
// are now refused before validation.
func BenchmarkCheckRepeatedFields(b *testing.B) {
	a, err := limits.New(clientSDL, []string{subgraphSDL}, limits.Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1000, 5000, 9999} {
		repeated := "{ " + strings.Repeat("__typename ", n) + "}"
		var distinct strings.Builder
		distinct.WriteString("{ ")
		for i := range n {
			distinct.WriteString("t" + strconv.Itoa(i) + ": __typename ")
		}
		distinct.WriteString("}")
		for name, q := range map[string]string{"repeated": repeated, "distinct": distinct.String()} {
			b.Run(name+"-"+strconv.Itoa(n), func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					a.Check(q+" "+strings.Repeat(" ", i%2), "", nil) // vary the text: no cache hit
				}
			})
		}
	}
}

// @defer labels are written in the document and unique among enabled
// directives (if: false or a variable condition does not count), as the
// incremental delivery proposal asks.
func TestDeferLabels(t *testing.T) {
	a := analyzer(t)
	for _, tt := range []struct {
		name, query string
		refused     bool
	}{
		{"unique", `{ cigar(id: "1") { ... @defer(label: "a") { name } ... @defer(label: "b") { id } } }`, false},
		{"no label twice", `{ cigar(id: "1") { ... @defer { name } ... @defer { id } } }`, false},
		{"one fragment spread twice", `{ a: cigar(id: "1") { ...F } b: cigar(id: "2") { ...F } } fragment F on Cigar { ... @defer(label: "a") { name } }`, false},
		{"twice, one if: false", `{ cigar(id: "1") { ... @defer(label: "a") { name } ... @defer(label: "a", if: false) { id } } }`, false},
		{"twice, one if a variable", `query($d: Boolean!) { cigar(id: "1") { ... @defer(label: "a") { name } ... @defer(label: "a", if: $d) { id } } }`, false},
		{"twice", `{ cigar(id: "1") { ... @defer(label: "a") { name } ... @defer(label: "a") { id } } }`, true},
		{"twice, one on a spread", `{ cigar(id: "1") { ... @defer(label: "a") { name } ...F @defer(label: "a") } } fragment F on Cigar { id }`, true},
		{"a variable", `query($l: String) { cigar(id: "1") { ... @defer(label: $l) { name } } }`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Check(tt.query, "", map[string]any{"d": true, "l": "x"})
			if !tt.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var rej *limits.Rejection
			if !errors.As(err, &rej) || rej.Errors[0].Extensions["code"] != limits.CodeValidationFailed {
				t.Fatalf("%v, want %s", err, limits.CodeValidationFailed)
			}
		})
	}
}
