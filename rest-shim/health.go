package restshim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/vitolahq/vitola/internal/kv/failover"
	"github.com/vitolahq/vitola/internal/timestamp"
)

// DefaultReadyTimeout bounds a readiness check when none is configured.
const DefaultReadyTimeout = 2 * time.Second

type componentStatus struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// HealthHandler serves GET /health: liveness, cheap and dependency-free. It
// answers 200 while the process serves HTTP; a store or a subgraph being
// down is readiness's business (ReadyHandler), so an orchestrator never
// restarts a process for a database outage.
func HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(map[string]any{"status": "ok", "time": timestamp.Format(time.Now())})
	})
}

// ReadyHandler serves GET /health/ready over checks (components that are not
// the shim use it too): every check runs in parallel within timeout (0:
// DefaultReadyTimeout); 200 when all pass, 503 naming each that failed.
// onFail, when set, is told the name of each check that failed.
func ReadyHandler(checks []Check, timeout time.Duration, onFail func(name string)) http.Handler {
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		results := make(map[string]componentStatus, len(checks))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range checks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := componentStatus{Status: "ok"}
				if err := c.Check(ctx); err != nil {
					// The error names what is down, never a host or a
					// connection string.
					st = componentStatus{Status: "unavailable", Error: "check failed: " + errorClass(ctx, err)}
					if onFail != nil {
						onFail(c.Name)
					}
				}
				mu.Lock()
				results[c.Name] = st
				mu.Unlock()
			}()
		}
		wg.Wait()
		status, code := "ok", http.StatusOK
		for _, st := range results {
			if st.Status != "ok" {
				status, code = "degraded", http.StatusServiceUnavailable
			}
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{
			"status":     status,
			"time":       timestamp.Format(time.Now()),
			"components": results,
		})
	})
}

func errorClass(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, failover.ErrFallback):
		// Requests are served, without the state replicas share.
		return "unreachable; the in-process fallback serves"
	case err == context.DeadlineExceeded || err == context.Canceled || ctx.Err() != nil:
		return "timed out"
	default:
		return "unreachable"
	}
}
