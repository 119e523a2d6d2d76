package restshim

import (
	"net/http"

	"github.com/vitolahq/vitola/apierr"
	"github.com/vitolahq/vitola/webui"
)

// addRoutes lists every route of {base_url}.
func addRoutes(mux *http.ServeMux, d Deps) {
	mux.Handle("GET /health", handleHealth(d.Checks))
	mux.Handle("/docs", webui.DocsHandler(d.OpenAPI))
	mux.Handle("/docs/", webui.DocsHandler(d.OpenAPI))
	mux.Handle("/graphql", d.GraphQL)
	mux.Handle("/graphql/assets/", d.GraphQL)
	mux.Handle("/", handleNotFound())
}

// addPaymentsRoutes lists every route of {payments_origin}.
func addPaymentsRoutes(mux *http.ServeMux, d Deps) {
	mux.Handle("GET /health", handleHealth(d.Checks))
	mux.Handle("/", handleNotFound())
}

func handleNotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apierr.Write(w, http.StatusNotFound, apierr.CodeNotFound, "no route "+r.Method+" "+r.URL.Path+": see /docs for the API")
	})
}
