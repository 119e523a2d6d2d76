// Package examples serves the example pages under /examples/: anonymous static
// files embedded in the binary. The website widget (widget/) shows a venue's
// recent sessions through the TypeScript SDK with a publishable key;
// widget/vitola-sdk.js is the SDK's browser bundle, refreshed by `make widget`
// and checked fresh by a test. bands/ holds photos of demo cigar bands to try
// image matching with (sent inline as data URLs); bandsamples renders them.
package examples

import (
	"embed"
	"net/http"
)

//go:embed widget bands/*.jpg
var files embed.FS

// Path is where the handler is mounted.
const Path = "/examples/"

// Handler serves the examples below Path. The pages may call an API on any
// origin (the widget's API base URL is a setting) but load code only from here.
func Handler() http.Handler {
	static := http.StripPrefix(Path, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; connect-src *; img-src * data:; frame-ancestors *")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		static.ServeHTTP(w, r)
	})
}
