package restshim

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/vitolahq/vitola/internal/timestamp"
)

type componentStatus struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// HealthHandler serves /health over checks (components that are not the shim
// use it too).
func HealthHandler(checks []Check) http.Handler { return handleHealth(checks) }

// handleHealth runs every check in parallel, each bounded in time: 200 when all
// pass, 503 naming what failed.
func handleHealth(checks []Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
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
					// The error names what is down, never a connection string.
					st = componentStatus{Status: "unavailable", Error: "check failed: " + errorClass(err)}
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

func errorClass(err error) string {
	switch {
	case err == context.DeadlineExceeded || err == context.Canceled:
		return "timed out"
	default:
		return "unreachable"
	}
}
