package compare

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// loadResult is what a closed loop measured.
type loadResult struct {
	n, errs  int
	firstErr error
	lat      []time.Duration // sorted
	took     time.Duration
}

// sample is what a side's slices of a round measured together.
type sample struct {
	lat       []time.Duration // sorted
	took, cpu time.Duration   // the loops' time, the server's CPU over it
}

func (s *sample) add(o sample) {
	s.lat = append(s.lat, o.lat...)
	slices.Sort(s.lat)
	s.took += o.took
	s.cpu += o.cpu
}

func (s sample) perSecond() float64 { return float64(len(s.lat)) / s.took.Seconds() }

// cpuPerCall is the server's CPU per call, in unit.
func (s sample) cpuPerCall(unit time.Duration) float64 {
	return float64(s.cpu) / float64(unit) / float64(len(s.lat))
}

// closedLoop runs call from workers goroutines, each starting its next call
// when the last one answered, for d (a call started before d ends is
// finished and counted). It stops early when ctx ends.
func closedLoop(ctx context.Context, workers int, d time.Duration, call func(ctx context.Context) error) loadResult {
	var mu sync.Mutex
	var res loadResult
	var errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for range workers {
		wg.Go(func() {
			var lat []time.Duration
			for ctx.Err() == nil && time.Now().Before(end) {
				t0 := time.Now()
				if err := call(ctx); err != nil {
					if errs.Add(1) == 1 {
						mu.Lock()
						res.firstErr = err
						mu.Unlock()
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.took = time.Since(start)
	res.n, res.errs = len(res.lat), int(errs.Load())
	slices.Sort(res.lat)
	return res
}

// err is the loop's failure: any failed call fails the measurement, since a
// side that answers errors fast is not faster.
func (r loadResult) err() error {
	switch {
	case r.errs > 0:
		return fmt.Errorf("%d of %d calls failed, the first: %w", r.errs, r.errs+r.n, r.firstErr)
	case r.n == 0:
		return errors.New("no call completed")
	}
	return nil
}

// newClient is an HTTP client for conns connections to one server, never
// through a proxy from the environment. A round closes its connections when
// it ends: the server caps those one client address holds open
// (--max-conns-per-client), and a new round's would add to them.
func newClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 2 * time.Minute,
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			MaxConnsPerHost:     conns,
			IdleConnTimeout:     time.Minute,
		},
	}
}

// request is one HTTP call of a benchmark.
type request struct {
	method, url string
	header      map[string]string
	body        []byte
}

// do sends r and returns the body of a 2xx answer; anything else is an error
// quoting the start of the body.
func do(ctx context.Context, c *http.Client, r request) ([]byte, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return nil, err
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", r.method, pathOf(r.url), err)
	}
	if res.StatusCode/100 != 2 {
		return b, &statusError{Method: r.method, Path: pathOf(r.url), Status: res.StatusCode, Body: clip(string(b), 200)}
	}
	return b, nil
}

// statusError is a non-2xx answer.
type statusError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Body)
}

// pathOf is a URL without its scheme, host and query, for messages (a query
// may be long; a URL here never holds a secret, but keep messages short).
func pathOf(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
		if j := strings.IndexByte(u, '/'); j >= 0 {
			u = u[j:]
		}
	}
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	return u
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every architecture Go runs Linux on (sysconf(_SC_CLK_TCK) would need cgo).
const clockTicks = 100

// processCPU is the CPU time (user and system, with waited-for children's)
// the process pid has used, from /proc/PID/stat: the server's own, apart
// from the load this program makes.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("server CPU: %w", err)
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime, stime, cutime and cstime (fields 14 to 17) of a
// /proc/PID/stat line. The command name (field 2) is in parentheses and may
// hold spaces and parentheses itself, so fields are counted from the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("server CPU: /proc stat without a command name")
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3, the state
	if len(f) < 15 {
		return 0, fmt.Errorf("server CPU: /proc stat has %d fields after the name", len(f))
	}
	var ticks int64
	for _, s := range f[11:15] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("server CPU: /proc stat field %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
