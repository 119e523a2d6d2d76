package compare

import (
	"context"
	"net/http"
	"time"
)

// Internals the black-box tests drive.
var (
	EncodeCatalog = encodeCatalog
	CopyWord      = copyWord
	ParseStatCPU  = parseStatCPU
	Percentile    = percentile
	RedactArgs    = redactArgs
)

// ClosedLoop runs call as the load benchmarks do: the calls answered, those
// that failed, the latencies and the loop's verdict.
func ClosedLoop(ctx context.Context, workers int, d time.Duration, call func(context.Context) error) (n, errs int, lat []time.Duration, err error) {
	r := closedLoop(ctx, workers, d, call)
	return r.n, r.errs, r.lat, r.err()
}

// Get is a benchmark's GET: the body of a 2xx answer, an error otherwise.
func Get(ctx context.Context, url string) ([]byte, error) {
	return do(ctx, &http.Client{}, request{method: "GET", url: url, header: map[string]string{"x-service-key": "vk_not_in_messages"}})
}
