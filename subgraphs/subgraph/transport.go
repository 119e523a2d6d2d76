package subgraph

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
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
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && r.Method == http.MethodPost && mt == "application/json"
}

// DataLastHeader marks a response written by internalPOST: its data comes last.
const DataLastHeader = "X-Vitola-Data-Last"

func (internalPOST) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(DataLastHeader, "1")
	start := graphql.Now()
	var params graphql.RawParams
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(&params); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeResponse(w, exec.DispatchError(ctx, gqlerror.List{gqlerror.Errorf("the body must be a JSON object with query, operationName and variables")}))
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	rc, errs := exec.CreateOperationContext(ctx, &params)
	if errs != nil {
		w.WriteHeader(http.StatusUnprocessableEntity)
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs))
		return
	}
	handler, ctx := exec.DispatchOperation(ctx, rc)
	writeResponse(w, handler(ctx))
}

// writeResponse writes {"errors": […], "extensions": {…}, "data": …} with the
// data verbatim and last: a body that starts with {"data": holds nothing else,
// which lets Client.Field take a value without scanning it.
func writeResponse(w http.ResponseWriter, resp *graphql.Response) {
	var buf bytes.Buffer
	buf.Grow(len(resp.Data) + 64)
	buf.WriteByte('{')
	if len(resp.Errors) > 0 {
		errs, _ := json.Marshal(resp.Errors)
		buf.WriteString(`"errors":`)
		buf.Write(errs)
		buf.WriteByte(',')
	}
	if len(resp.Extensions) > 0 {
		ext, _ := json.Marshal(resp.Extensions)
		buf.WriteString(`"extensions":`)
		buf.Write(ext)
		buf.WriteByte(',')
	}
	buf.WriteString(`"data":`)
	if len(resp.Data) == 0 {
		buf.WriteString("null")
	} else {
		buf.Write(resp.Data)
	}
	buf.WriteString("}\n")
	w.Write(buf.Bytes())
}
