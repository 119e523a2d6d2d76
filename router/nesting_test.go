package router_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

// nestedVariables is a variables object nested depth levels deep by the
// README's count (the object itself is level 1), lists and objects in turn,
// in its variable name.
func nestedVariables(name string, depth int) json.RawMessage {
	value := "1"
	for i := depth; i >= 2; i-- {
		if i%2 == 0 {
			value = "[" + value + "]"
		} else {
			value = `{"a":` + value + "}"
		}
	}
	return json.RawMessage(`{"` + name + `":` + value + "}")
}

// Variables nest as deep as the documented --max-nesting (64) over GET and
// POST alike, and one level more is refused the same way on both
// (OPERATION_TOO_LARGE, limit nesting). Before, the strict JSON decoder's own
// bound of 32 refused 32 to 64 levels with INVALID_BODY.
func TestVariablesNesting(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	srv := tr.overHTTP(t)
	max := limits.Defaults().MaxNesting
	for _, tt := range []struct {
		depth int
		code  string // "": accepted
	}{
		{32, ""}, {33, ""}, {max, ""}, {max + 1, limits.CodeTooLarge},
	} {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			t.Run(fmt.Sprintf("%d/%s", tt.depth, method), func(t *testing.T) {
				vars := nestedVariables("deep", tt.depth)
				var check any
				if err := json.Unmarshal(vars, &check); err != nil {
					t.Fatalf("test variables are not JSON: %v", err)
				}
				// deep is sent but not declared: the operation ignores it, as
				// GraphQL ignores values of variables it does not define.
				status, raw := tr.request(t, srv, method, map[string]any{"query": "{ __typename }", "variables": vars})
				var r gqlReply
				if err := json.Unmarshal(raw, &r); err != nil {
					t.Fatalf("%d, not JSON: %.300s", status, raw)
				}
				if tt.code == "" {
					if status != http.StatusOK || len(r.Errors) > 0 || r.Data["__typename"] != "Query" {
						t.Fatalf("%d %.400s, want 200 with data", status, raw)
					}
					return
				}
				if status != http.StatusBadRequest || len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != tt.code ||
					r.Errors[0].Extensions["limit"] != "nesting" || r.Errors[0].Extensions["maximum"] != float64(max) {
					t.Fatalf("%d %.400s, want 400 %s (limit nesting, maximum %d)", status, raw, tt.code, max)
				}
			})
		}
	}
}
