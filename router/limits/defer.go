package limits

import (
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// deferLabels checks the labels of @defer (and @stream, should the schema
// declare it) as the incremental delivery proposal asks: a label is a string
// written in the document, never a variable, and no two enabled directives
// share one (one with if: false, or if a variable, is not counted). The
// engine's own rule (graphql-go-tools v2.18) runs while @skip and @include
// remove fields, and revisits a selection set after a removal: it saw a label
// after a removed field twice and refused a valid operation. This one reads
// the document as written.
func deferLabels(doc *ast.QueryDocument) gqlerror.List {
	var errs gqlerror.List
	seen := map[string]bool{}
	check := func(list ast.DirectiveList) {
		for _, d := range list {
			if d.Name != "defer" && d.Name != "stream" {
				continue
			}
			label := d.Arguments.ForName("label")
			if label == nil || label.Value == nil {
				continue
			}
			switch label.Value.Kind {
			case ast.Variable:
				errs = append(errs, gqlerror.ErrorPosf(label.Value.Position, "the label of @%s must be written in the document, not a variable", d.Name))
				continue
			case ast.StringValue, ast.BlockValue:
			default:
				continue // a null label: none
			}
			if cond := d.Arguments.ForName("if"); cond != nil && cond.Value != nil &&
				(cond.Value.Kind == ast.Variable || cond.Value.Kind == ast.BooleanValue && cond.Value.Raw == "false") {
				continue
			}
			if seen[label.Value.Raw] {
				errs = append(errs, gqlerror.ErrorPosf(label.Value.Position, "the label %q is given to two @defer or @stream: give each its own", label.Value.Raw))
				continue
			}
			seen[label.Value.Raw] = true
		}
	}
	eachSelection(doc, func(sel ast.Selection) {
		switch s := sel.(type) {
		case *ast.Field:
			check(s.Directives)
		case *ast.InlineFragment:
			check(s.Directives)
		case *ast.FragmentSpread:
			check(s.Directives)
		}
	})
	return errs
}
