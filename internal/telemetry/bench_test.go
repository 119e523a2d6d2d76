package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vitolahq/vitola/internal/inproc"
	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/internal/trust"
)

// BenchmarkHop is one internal hop as the platform makes it (edge
// middleware, instrumented and signing transports, in-process call, callee
// middleware)
// around handlers that do nothing: the telemetry's own cost per hop, off
// and on (metrics, traces at 1%).
func BenchmarkHop(b *testing.B) {
	issuer, err := trust.NewIssuer([]byte("bench internal key of 32 bytes!!"), "router")
	if err != nil {
		b.Fatal(err)
	}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer collector.Close()
	for _, c := range []struct {
		name string
		o    telemetry.Options
	}{{"off", telemetry.Options{}}, {"on", telemetry.Options{Metrics: true, OTLPEndpoint: collector.URL, SampleRatio: 0.01}}} {
		b.Run(c.name, func(b *testing.B) {
			tel, err := telemetry.New(context.Background(), c.o)
			if err != nil {
				b.Fatal(err)
			}
			defer tel.Close(context.Background())
			calleeMux := http.NewServeMux()
			calleeMux.HandleFunc("POST /graphql", func(w http.ResponseWriter, r *http.Request) {})
			hosts := map[string]http.Handler{"catalog.internal": tel.Handler("catalog", calleeMux)}
			// As the platform wires it: the telemetry's transport over the
			// one that signs the call (and adds traceparent to its copy).
			signed := &trust.Transport{Base: &inproc.Transport{Handlers: hosts}, Issuer: issuer, Propagate: tel.Propagator()}
			client := &http.Client{Transport: tel.Transport("router", map[string]string{"catalog.internal": "catalog"}, signed)}
			edgeMux := http.NewServeMux()
			edgeMux.HandleFunc("/graphql", func(w http.ResponseWriter, r *http.Request) {
				req, _ := http.NewRequestWithContext(r.Context(), "POST", "http://catalog.internal/graphql", nil)
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				res.Body.Close()
			})
			edge := tel.EdgeHandler("api", edgeMux)
			req := httptest.NewRequest("POST", "/graphql", nil)
			b.ReportAllocs()
			for b.Loop() {
				edge.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
