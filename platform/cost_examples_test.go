package platform_test

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

// testCostExamples runs the limits page's cost examples as a reader
// would paste them: the first is answered (with data), the second refused on
// its cost, at the cost the page states.
func (f *fixture) testCostExamples(t *testing.T) {
	b, err := os.ReadFile(limitsPage)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "Cost examples:")
	if start < 0 {
		t.Fatal(`the limits page has no "Cost examples:"`)
	}
	end := strings.Index(text[start:], "rejected.")
	if end < 0 {
		t.Fatal(`the limits page's cost examples do not end with "rejected."`)
	}
	para := strings.Join(strings.Fields(text[start:start+end]), " ")
	m := regexp.MustCompile("`([^`]+)` is [^`]* = ([0-9,]+); `([^`]+)` is [^`]* = ([0-9,]+)").FindStringSubmatch(para)
	if m == nil {
		t.Fatalf("the limits page's cost examples are not `OP` is … = N; `OP` is … = N: %q", para)
	}
	answered := f.query(t, "{ "+m[1]+" }", nil)
	if answered.Status != http.StatusOK || len(answered.Errors) > 0 || len(answered.Data) == 0 {
		t.Fatalf("the limits page's first cost example %s: %d %v", m[1], answered.Status, answered.Errors)
	}
	edges, _ := at(answered.Data, "searchCigars", "edges").([]any)
	if len(edges) == 0 {
		t.Fatalf("the limits page's first cost example %s finds nothing in the demo", m[1])
	}
	refused := f.query(t, "{ "+m[3]+" }", nil)
	cost := strings.ReplaceAll(m[4], ",", "")
	if refused.Status != http.StatusBadRequest || code(refused) != "COST_LIMIT_EXCEEDED" || fmt.Sprint(at(refused.Errors[0], "extensions", "actual")) != cost {
		t.Fatalf("the limits page's second cost example %s: %d %v, want a cost of %s refused", m[3], refused.Status, refused.Errors, cost)
	}
}
