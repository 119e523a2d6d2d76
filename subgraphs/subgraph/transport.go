package subgraph

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// internalPOST is the subgraphs' GraphQL-over-HTTP transport. Only the router and
// the shim call subgraphs, with JSON bodies, so it does one thing: run the
// operation and write gqlgen's result. It writes the data gqlgen produced as it
// is, where gqlgen's own transport would re-validate every byte of it
// (json.Marshal of a json.RawMessage), the largest cost of a big response.
type internalPOST struct{}

var _ graphql.Transport = internalPOST{}

func (internalPOST) Supports(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "application/json" { // what Client sends, without parsing (which allocates)
		return r.Method == http.MethodPost
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && r.Method == http.MethodPost && mt == "application/json"
}

// DataLastHeader marks a response written by internalPOST: its data comes last.
const DataLastHeader = "X-Vitola-Data-Last"

func (internalPOST) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	h := w.Header()
	h["Content-Type"], h[DataLastHeader] = jsonType, dataLast
	start := graphql.Now()
	var params graphql.RawParams
	if p := handedOver(r); p != nil { // a caller in this process (handover.go)
		params = *p
	} else {
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		if err := dec.Decode(&params); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			writeResponse(w, exec.DispatchError(ctx, gqlerror.List{gqlerror.Errorf("the body must be a JSON object with query, operationName and variables")}))
			return
		}
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	rc, errs := exec.CreateOperationContext(ctx, &params)
	if errs != nil {
		w.WriteHeader(http.StatusUnprocessableEntity)
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs))
		return
	}
	if rc.Operation != nil && rc.Operation.Operation == ast.Subscription {
		// One JSON answer would wait for the first event: streams are SSE's.
		w.WriteHeader(http.StatusBadRequest)
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), gqlerror.List{{Message: "a subscription is served over SSE: send Accept: text/event-stream",
			Extensions: map[string]any{"code": "BAD_REQUEST"}}}))
		return
	}
	handler, ctx := exec.DispatchOperation(ctx, rc)
	ctx, s := withScratch(ctx)
	writeResponse(w, handler(ctx))
	s.release() // the data is written: what resolvers rendered is garbage
}

// writeResponse writes {"errors": […], "extensions": {…}, "data": …} with the
// data verbatim and last: a body that starts with {"data": holds nothing else,
// which lets Client.Field take a value without scanning it. The data is written
// as gqlgen made it, not copied into a buffer of the whole body first, and the
// length is stated, so that the client (over a socket or in process) reads the
// body into one buffer of the right size.
func writeResponse(w http.ResponseWriter, resp *graphql.Response) {
	head := make([]byte, 0, 64)
	head = append(head, '{')
	if len(resp.Errors) > 0 {
		errs, _ := json.Marshal(resp.Errors)
		head = append(append(append(head, `"errors":`...), errs...), ',')
	}
	if len(resp.Extensions) > 0 {
		ext, _ := json.Marshal(resp.Extensions)
		head = append(append(append(head, `"extensions":`...), ext...), ',')
	}
	head = append(head, `"data":`...)
	data := []byte(resp.Data)
	if len(data) == 0 {
		data = null
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(data)+len(tail)))
	w.Write(head)
	w.Write(data)
	w.Write(tail)
}

var (
	null = []byte("null")
	tail = []byte("}\n")
	// Header values every internal call and answer has, shared instead of
	// allocated per call (as net/http does for its own).
	jsonType = []string{"application/json"}
	dataLast = []string{"1"}
)
