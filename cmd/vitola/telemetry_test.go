package main

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
)

// otlpReceiver is an OpenTelemetry collector's OTLP/HTTP traces endpoint, in
// process: it decodes each export request and keeps its spans by service.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	service string
	*tracepb.Span
}

func (rc *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a POST of protobuf to /v1/traces", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				rc.spans = append(rc.spans, receivedSpan{service, s})
			}
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// trace returns the spans of one trace (hex ID) once it holds its root and
// at least n spans.
func (rc *otlpReceiver) trace(t *testing.T, traceID string, n int) []receivedSpan {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second) // the batcher sends every 5 s
	for {
		rc.mu.Lock()
		var out []receivedSpan
		root := false
		for _, s := range rc.spans {
			if hex.EncodeToString(s.TraceId) == traceID {
				out = append(out, s)
				root = root || len(s.ParentSpanId) == 0
			}
		}
		rc.mu.Unlock()
		// The root span ends last, so it is sent in the last batch: on a busy
		// machine the others can fill n spans a batch before it.
		if root && len(out) >= n || time.Now().After(deadline) {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMetricsAndTraces runs the platform with --metrics-addr and
// --otlp-endpoint (an in-process OTLP receiver), sends real traffic, then
// scrapes the metrics listener and reads the traces: metric names and
// bounded labels (no ID, key or query in any label value), /metrics absent
// from the public origins, one trace per request across the edge, the
// router and the subgraphs, and the trace ID as the request ID in the logs
// and the X-Request-Id header.
func TestMetricsAndTraces(t *testing.T) {
	receiver := &otlpReceiver{}
	collector := httptest.NewServer(receiver)
	defer collector.Close()

	data := t.TempDir()
	addr, pay, metricsAddr := loopbackAddr(t), loopbackAddr(t), loopbackAddr(t)
	_, log := serveForTest(t, addr, "--demo", "--data", data, "--payments-addr", pay, "--log-level", "debug",
		"--metrics-addr", metricsAddr, "--otlp-endpoint", collector.URL, "--trace-sample-ratio", "1",
		"--fetch-allow-cidrs", "127.0.0.1/32") // the band photo below is served on loopback
	key := strings.TrimSpace(readFile(t, filepath.Join(data, "demo-key.txt")))

	post := func(body map[string]any) (*http.Response, map[string]any) {
		b, _ := json.Marshal(body)
		res, raw := postJSON(t, "http://"+addr+"/graphql", key, "", b)
		var out map[string]any
		json.Unmarshal(raw, &out)
		return res, out
	}
	get := func(path string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", "http://"+path, nil)
		req.Header.Set("x-service-key", key)
		return send(t, req)
	}

	// A federated query (events from venues, their brands from the catalog),
	// twice: the second plan comes from the cache.
	events := map[string]any{"operationName": "Events", "query": `query Events { events(first: 3) { edges { node { name venue { name } brand { name } } } } }`}
	res, out := post(events)
	if res.StatusCode != 200 || out["errors"] != nil {
		t.Fatalf("federated query: %d %v", res.StatusCode, out)
	}
	traceID := res.Header.Get("X-Request-Id")
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(traceID) {
		t.Fatalf("X-Request-Id %q is not a trace ID", traceID)
	}
	post(events)
	// Refused by a limit, and not valid at all.
	deep := `{ events(first: 1) { edges { node { venue { events(first: 1) { edges { node { venue { events(first: 1) { edges { node { name } } } } } } } } } } } }`
	// (application/json: refused with 200 and errors, as GraphQL over HTTP recommends)
	if res, out := post(map[string]any{"query": deep}); res.StatusCode != 200 || out["errors"] == nil || out["data"] != nil {
		t.Fatalf("deep query: %d %v", res.StatusCode, out)
	}
	post(map[string]any{"query": "{ nope"})
	// REST: a search, then one cigar by its ID (the route, not the path,
	// is the label).
	res, body := get(addr + "/v1/cigars/search?q=padron&limit=2")
	var search struct{ Data []struct{ ID string } }
	json.Unmarshal(body, &search)
	if res.StatusCode != 200 || len(search.Data) == 0 {
		t.Fatalf("search: %d %s", res.StatusCode, body)
	}
	searchTrace := res.Header.Get("X-Request-Id")
	cigarID := search.Data[0].ID
	if res, body := get(addr + "/v1/cigars/" + url.PathEscape(cigarID)); res.StatusCode != 200 {
		t.Fatalf("cigar: %d %s", res.StatusCode, body)
	}
	get(addr + "/v1/no-such-route/" + cigarID)
	// A paid identify from a photo, the same request again (replayed), and
	// the same key with another body (a conflict).
	var photo bytes.Buffer
	png.Encode(&photo, bandart.Photo(bandart.Render(bandart.DesignFor("Padrón", "1964 Anniversary Series"), 600), bandart.Mild, 4))
	photos := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(photo.Bytes())
	}))
	defer photos.Close()
	identify := func(body string) (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/ai/cigars/identify", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-service-key", key)
		req.Header.Set("Idempotency-Key", "metrics-1")
		return send(t, req)
	}
	paid := fmt.Sprintf(`{"imageUrl": %q}`, photos.URL+"/band.png")
	res, body = identify(paid)
	if res.StatusCode != 200 {
		t.Fatalf("identify: %d %s", res.StatusCode, body)
	}
	identifyTrace := res.Header.Get("X-Request-Id")
	if res, body := identify(paid); res.StatusCode != 200 || res.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("identify again: %d %s", res.StatusCode, body)
	}
	if res, body := identify(`{"force": true, "prompt": "padron"}`); res.StatusCode < 400 {
		t.Fatalf("identify with the key of another request: %d %s", res.StatusCode, body)
	}

	// Metrics are never served on the public origins.
	for _, origin := range []string{addr, pay} {
		if res, _ := get(origin + "/metrics"); res.StatusCode != 404 {
			t.Errorf("%s/metrics: %d, want 404", origin, res.StatusCode)
		}
	}

	res, body = get(metricsAddr + "/metrics")
	if res.StatusCode != 200 {
		t.Fatalf("scrape: %d %s", res.StatusCode, body)
	}
	metrics := string(body)
	for _, want := range []string{
		`vitola_http_requests_total{code="200",route="/graphql",server="api"} 4`, // two operations, and two refused in application/json
		`vitola_http_requests_total{code="200",route="GET /v1/cigars/{id}",server="api"} 1`,
		`vitola_http_requests_total{code="404",route="unmatched",server="api"} 2`, // a route unknown, and /metrics,
		`vitola_http_request_duration_seconds_count{code="200",route="GET /v1/cigars/search",server="api"} 1`,
		`vitola_http_requests_total{code="200",route="POST /graphql",server="catalog"}`,
		`vitola_graphql_operations_total{operation="Events",result="ok",type="query"} 2`,
		`vitola_graphql_operation_duration_seconds_count{operation="Events",result="ok",type="query"} 2`,
		`vitola_subgraph_fetch_duration_seconds_count{caller="router",subgraph="venues"}`,
		`vitola_subgraph_fetch_duration_seconds_count{caller="router",subgraph="catalog"}`,
		`vitola_subgraph_fetch_duration_seconds_count{caller="shim",subgraph="catalog"}`,
		`vitola_subgraph_fetch_errors_total{caller="router",subgraph="catalog"} 0`,
		`vitola_graphql_limit_rejections_total{limit="depth"} 1`,
		`vitola_graphql_limit_rejections_total{limit="parse"} 1`,
		`vitola_graphql_plan_cache_requests_total{result="hit"} 1`,
		`vitola_graphql_plan_cache_requests_total{result="miss"} 1`,
		`vitola_idempotency_requests_total{outcome="replayed"} 1`,
		`vitola_idempotency_requests_total{outcome="conflict"} 1`,
		`vitola_image_fetches_total{outcome="ok"} 1`,
		`vitola_subgraph_fetch_duration_seconds_count{caller="shim",subgraph="matching"}`,
		`vitola_subgraph_fetch_duration_seconds_count{caller="matching",subgraph="catalog"}`,
		`vitola_http_requests_total{code="200",route="POST /v1/ai/cigars/identify",server="api"} 2`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	// Credits: a hold, then the charge and the rest of the hold released.
	credits := map[string]float64{}
	for _, line := range strings.Split(metrics, "\n") {
		var action string
		var n float64
		if _, err := fmt.Sscanf(strings.Replace(line, `"} `, `" `, 1), `vitola_credits_total{action=%q %g`, &action, &n); err == nil {
			credits[action] = n
		}
	}
	if credits["held"] < 1 || credits["charged"] < 1 || credits["held"] != credits["charged"]+credits["released"] {
		t.Errorf("credits: %v, want held = charged + released, each counted", credits)
	}
	// Every label value is one of a bounded kind: no ID, key, query or path.
	labels := regexp.MustCompile(`[a-z_]+="([^"]*)"`)
	allowed := regexp.MustCompile(`^([A-Z]+ /[a-z0-9/{}._-]*|/[a-z0-9/{}._-]*|[A-Za-z][A-Za-z0-9_. -]{0,60}|[0-9.e+-]+|\+Inf)$`)
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, m := range labels.FindAllStringSubmatch(line, -1) {
			v := m[1]
			if !allowed.MatchString(v) || strings.Contains(v, cigarID) || strings.Contains(v, key) || strings.Contains(v, "vk_") || strings.Contains(v, "padron") || strings.Contains(v, "{ ") {
				t.Errorf("unbounded label value %q in %s", v, line)
			}
		}
	}

	// The federated query's trace: the edge's server span is the root; the
	// router plans under it and fetches from venues and the catalog, each
	// fetch the parent of that subgraph's server span (in process, through
	// traceparent).
	spans := receiver.trace(t, traceID, 6)
	byID := map[string]receivedSpan{}
	for _, s := range spans {
		byID[hex.EncodeToString(s.SpanId)] = s
	}
	parent := func(s receivedSpan) (receivedSpan, bool) {
		p, ok := byID[hex.EncodeToString(s.ParentSpanId)]
		return p, ok
	}
	var roots, plans []receivedSpan
	fetched := map[string]bool{}
	for _, s := range spans {
		switch {
		case len(s.ParentSpanId) == 0:
			roots = append(roots, s)
		case s.Name == "plan":
			plans = append(plans, s)
		case strings.HasPrefix(s.Name, "fetch "):
			if p, ok := parent(s); !ok || p.Kind != tracepb.Span_SPAN_KIND_SERVER || p.Name != "api /graphql" {
				t.Errorf("fetch span %q: parent %q, want the edge's server span", s.Name, p.Name)
			}
		case s.Kind == tracepb.Span_SPAN_KIND_SERVER:
			p, ok := parent(s)
			if !ok || p.Kind != tracepb.Span_SPAN_KIND_CLIENT || p.Name != "fetch "+strings.Fields(s.Name)[0] {
				t.Errorf("subgraph span %q: parent %q, want its fetch", s.Name, p.Name)
			}
			fetched[strings.Fields(s.Name)[0]] = true
		}
	}
	if len(roots) != 1 || roots[0].Name != "api /graphql" || len(plans) != 1 || !fetched["venues"] || !fetched["catalog"] {
		names := []string{}
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("trace %s: spans %v; want one root (api /graphql), one plan, and venues and catalog fetched", traceID, names)
	}
	// Store queries are spans of the subgraph that runs them.
	sqlUnder := map[string]bool{}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "sql ") {
			if p, ok := parent(s); ok {
				sqlUnder[strings.TrimPrefix(s.Name, "sql ")+" under "+p.Name] = true
			}
		}
	}
	if !sqlUnder["venues under venues POST /graphql"] {
		t.Errorf("no store query span under the venues subgraph's span: %v", sqlUnder)
	}
	if p, _ := parent(plans[0]); p.Name != "api /graphql" {
		t.Errorf("plan's parent %q", p.Name)
	}
	if roots[0].Attributes == nil || !strings.Contains(roots[0].String(), "Events") {
		t.Errorf("the server span does not name the operation: %v", roots[0])
	}
	// The REST search: the edge, then the shim's call to the catalog.
	rest := receiver.trace(t, searchTrace, 3)
	var restNames []string
	for _, s := range rest {
		restNames = append(restNames, s.Name)
	}
	if !strings.Contains(strings.Join(restNames, ","), "api GET /v1/cigars/search") || !strings.Contains(strings.Join(restNames, ","), "catalog POST /graphql") {
		t.Errorf("search trace %s: spans %v", searchTrace, restNames)
	}
	// The identify: the shim's calls to payments (hold, settle) and to
	// matching, and matching's image fetch under matching's server span.
	var idNames []string
	for _, s := range receiver.trace(t, identifyTrace, 6) {
		idNames = append(idNames, s.Name)
	}
	for _, want := range []string{"api POST /v1/ai/cigars/identify", "fetch payments", "fetch matching", "matching POST /graphql", "image fetch"} {
		if !strings.Contains(strings.Join(idNames, ","), want) {
			t.Errorf("identify trace %s: spans %v, want %q", identifyTrace, idNames, want)
		}
	}
	// The logs name the request by its trace ID.
	if !strings.Contains(log.String(), `"request_id":"`+traceID+`"`) {
		t.Errorf("no log line carries request_id %s", traceID)
	}
}
