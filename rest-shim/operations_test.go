package restshim_test

import (
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	restshim "github.com/vitolahq/vitola/rest-shim"
	cataloggraph "github.com/vitolahq/vitola/subgraphs/catalog/graph"
)

// TestCatalogOperationsAreValid checks every internal operation the shim sends
// against the catalog subgraph's own schema.
func TestCatalogOperationsAreValid(t *testing.T) {
	schema := cataloggraph.NewExecutableSchema(cataloggraph.Config{Resolvers: &cataloggraph.Resolver{}}).Schema()
	for _, op := range restshim.CatalogOperations {
		doc, err := parser.ParseQuery(&ast.Source{Input: op.Query})
		if err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
		if errs := validator.Validate(schema, doc); len(errs) > 0 {
			t.Errorf("%s is invalid against the catalog schema: %v", op.Name, errs)
		}
	}
}
