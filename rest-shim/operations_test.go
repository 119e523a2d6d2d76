package restshim_test

import (
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	restshim "github.com/vitolahq/vitola/rest-shim"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/schema"
	cataloggraph "github.com/vitolahq/vitola/subgraphs/catalog/graph"
	matchinggraph "github.com/vitolahq/vitola/subgraphs/matching/graph"
	"github.com/vitolahq/vitola/subgraphs/matching/matcher"
	paymentsgraph "github.com/vitolahq/vitola/subgraphs/payments/graph"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
	usersgraph "github.com/vitolahq/vitola/subgraphs/users/graph"
)

// TestOperationsAreValid checks every internal operation the shim sends against
// its subgraph's own schema.
func TestOperationsAreValid(t *testing.T) {
	check(t, cataloggraph.NewExecutableSchema(cataloggraph.Config{Resolvers: &cataloggraph.Resolver{}}).Schema(), restshim.CatalogOperations)
	check(t, usersgraph.NewExecutableSchema(usersgraph.Config{Resolvers: &usersgraph.Resolver{}}).Schema(), restshim.UserOperations)
	check(t, paymentsgraph.NewExecutableSchema(paymentsgraph.Config{Resolvers: &paymentsgraph.Resolver{}}).Schema(), restshim.PaymentsOperations)
	check(t, matchinggraph.NewExecutableSchema(matchinggraph.Config{Resolvers: &matchinggraph.Resolver{}}).Schema(), restshim.MatchingOperations)
	check(t, cataloggraph.NewExecutableSchema(cataloggraph.Config{Resolvers: &cataloggraph.Resolver{}}).Schema(), append([]*subgraph.Operation{restshim.CigarsByID}, matcher.CatalogOperations...))
	// The feeds go through the router: checked against the public graph.
	composed, err := router.LoadComposed(schema.RouterConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	public, gerr := gqlparser.LoadSchema(&ast.Source{Name: "public", Input: composed.ClientSchema})
	if gerr != nil {
		t.Fatal(gerr)
	}
	check(t, public, restshim.FeedOperations)
}

func check(t *testing.T, schema *ast.Schema, ops []*subgraph.Operation) {
	t.Helper()
	for _, op := range ops {
		doc, err := parser.ParseQuery(&ast.Source{Input: op.Query})
		if err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
		if errs := validator.ValidateWithRules(schema, doc, nil); len(errs) > 0 {
			t.Errorf("%s is invalid against its subgraph's schema: %v", op.Name, errs)
		}
	}
}
