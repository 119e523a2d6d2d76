package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/telemetry"
)

func scrape(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	srv := httptest.NewServer(tel.Metrics.Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// TestOperationNamesAreBounded: the first MaxOperationNames names get a
// label each; later ones and unnamed operations fold into "other".
func TestOperationNamesAreBounded(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range telemetry.MaxOperationNames + 50 {
		tel.Operation(context.Background(), fmt.Sprintf("Op%d", i), "query", false, time.Millisecond)
	}
	tel.Operation(context.Background(), "", "query", false, time.Millisecond)
	tel.Operation(context.Background(), "Op1", "query", true, time.Millisecond)
	out := scrape(t, tel)
	names := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "vitola_graphql_operations_total{") {
			_, rest, _ := strings.Cut(line, `operation="`)
			name, _, _ := strings.Cut(rest, `"`)
			names[name] = true
		}
	}
	if len(names) != telemetry.MaxOperationNames+1 || !names["other"] || !names["Op0"] || names[fmt.Sprintf("Op%d", telemetry.MaxOperationNames)] {
		t.Fatalf("%d operation labels (want %d and other): %v", len(names), telemetry.MaxOperationNames+1, names)
	}
	if !strings.Contains(out, `vitola_graphql_operations_total{operation="other",result="ok",type="query"} 51`) ||
		!strings.Contains(out, `vitola_graphql_operations_total{operation="Op1",result="error",type="query"} 1`) {
		t.Fatalf("counts:\n%s", out)
	}
}

// TestOffCostsNothing: without metrics and traces the middleware and the
// transport are what they wrap.
func TestOffCostsNothing(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := http.NotFoundHandler()
	if got := tel.Handler("api", h); fmt.Sprintf("%p", got) != fmt.Sprintf("%p", h) {
		t.Fatal("the middleware wraps although telemetry is off")
	}
	if tel.Transport("router", nil, http.DefaultTransport) != http.DefaultTransport {
		t.Fatal("the transport wraps although telemetry is off")
	}
	var none *telemetry.Telemetry // every method of a nil Telemetry is a no-op
	none.Operation(context.Background(), "x", "query", false, 0)
	none.Rejected("depth")
	none.PlanCache(true)
	none.Credits("held", 1)
}

func TestOTLPEndpointMustBeAURL(t *testing.T) {
	for _, bad := range []string{"collector:4318", "ftp://x", "http:///v1/traces?token=s3cret"} {
		if _, err := telemetry.New(context.Background(), telemetry.Options{OTLPEndpoint: bad, SampleRatio: 1}); err == nil || strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := telemetry.New(context.Background(), telemetry.Options{OTLPEndpoint: "http://127.0.0.1:4318", SampleRatio: 2}); err == nil {
		t.Error("a sample ratio of 2 was taken")
	}
}

// TestUnsampledTracePropagates: at a sample ratio of 0 nothing is recorded,
// yet the request still has a trace ID (its request ID) and every internal
// call carries it, unsampled, so the callee logs the same ID.
func TestUnsampledTracePropagates(t *testing.T) {
	exported := make(chan struct{}, 10)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { exported <- struct{}{} }))
	defer collector.Close()
	tel, err := telemetry.New(context.Background(), telemetry.Options{OTLPEndpoint: collector.URL, SampleRatio: 0})
	if err != nil {
		t.Fatal(err)
	}
	var inner, traceparent string
	callee := tel.Handler("catalog", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner, traceparent = telemetry.RequestID(r.Context()), r.Header.Get("traceparent")
	}))
	calleeSrv := httptest.NewServer(callee)
	defer calleeSrv.Close()
	client := &http.Client{Transport: tel.Transport("router", nil, http.DefaultTransport)}
	edge := tel.EdgeHandler("api", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), "GET", calleeSrv.URL, nil)
		res, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		res.Body.Close()
	}))
	rec := httptest.NewRecorder()
	edge.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	id := rec.Header().Get(telemetry.RequestIDHeader)
	if len(id) != 32 || inner != id || !strings.HasPrefix(traceparent, "00-"+id+"-") || !strings.HasSuffix(traceparent, "-00") {
		t.Fatalf("request ID %q, callee's %q, traceparent %q", id, inner, traceparent)
	}
	tel.Close(context.Background())
	select {
	case <-exported:
		t.Fatal("spans were exported at a sample ratio of 0")
	default:
	}
}
