package compare

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// metricSpec is one row a benchmark fills.
type metricSpec struct {
	name, unit string
	better     Better
}

// benchmark is one of the comparison's measurements. prepare runs once per
// side after its servers are up (an error means the benchmark cannot run on
// that side, and the table says why). A load benchmark (load set) is run by
// the round in slices, the sides taking turns; another (round set) measures
// one side's turn at once and returns a value per metric, in order.
type benchmark struct {
	name    string
	about   string
	metrics []metricSpec
	prepare func(ctx context.Context, s *side) error
	load    *loadSpec
	round   func(ctx context.Context, s *side, r int) ([]float64, error)
}

// loadSpec is a closed-loop benchmark: call, from conns connections, on the
// side's server; values turns what a round measured into the metrics.
type loadSpec struct {
	conns  int
	server func(s *side) *server
	call   func(s *side, c *http.Client) func(context.Context) error
	values func(sample) []float64
}

var (
	joinQuery = `{ searchCigars(query: "padron", first: 5) { edges { node { id name brand { id name country } } } } }`
	// searchQueries are platform's TestSearchLoad's, in turn.
	searchQueries = []string{"padron", "montecristo no 2", "ryj churchill", "hemingway short", "robusto", "davidof", "liga privada", "maduro toro", "oliva serie v", "cohiba"}
)

const (
	joinConns     = 32
	searchConns   = 16
	paymentsConns = 16
	batchSize     = 1000 // cigars of a live import
	bandPhoto     = "examples/bands/padron-1964-anniversary.jpg"
)

// loadMetrics are the rows of a closed-loop benchmark, and loadValues fills
// them.
func loadMetrics(per string) []metricSpec {
	return []metricSpec{
		{"throughput", per + "/s", HigherIsBetter},
		{"p50", "ms", LowerIsBetter},
		{"p99", "ms", LowerIsBetter},
		{"server CPU", "µs/" + per, LowerIsBetter},
	}
}

func loadValues(sm sample) []float64 {
	return []float64{sm.perSecond(), percentile(sm.lat, 50), percentile(sm.lat, 99), sm.cpuPerCall(time.Microsecond)}
}

func (s *side) smallServer() *server { return s.small }
func (s *side) bigServer() *server   { return s.big }

// benchmarks are the comparison's, in the order of Benchmarks.
func (rn *runner) benchmarks() []*benchmark {
	none := func(ctx context.Context, s *side) error { return nil }
	return []*benchmark{
		{
			name:    "join",
			about:   fmt.Sprintf("POST /graphql %s with a developer key, demo catalog, %d connections in a closed loop", joinQuery, joinConns),
			metrics: loadMetrics("req"),
			prepare: none,
			load:    &loadSpec{conns: joinConns, server: (*side).smallServer, call: joinCall, values: loadValues},
		},
		{
			name:    "search",
			about:   fmt.Sprintf("GET /v1/cigars/search?q=… (%d queries in turn) on the %d-cigar catalog, %d connections", len(searchQueries), rn.catalogCigars, searchConns),
			metrics: loadMetrics("req"),
			prepare: none,
			load:    &loadSpec{conns: searchConns, server: (*side).bigServer, call: searchCall, values: loadValues},
		},
		{
			name:    "payments",
			about:   fmt.Sprintf("POST /api/v1/payment-sessions then GET …/status (a pair), one service client, %d connections", paymentsConns),
			metrics: loadMetrics("pair"),
			prepare: rn.preparePayments,
			load:    &loadSpec{conns: paymentsConns, server: (*side).smallServer, call: rn.paymentsCall, values: loadValues},
		},
		{
			name:    "identify",
			about:   "POST /v1/ai/cigars/identify of " + bandPhoto + " inline (quick profile), a new Idempotency-Key each, one call at a time",
			metrics: []metricSpec{{"p50", "ms", LowerIsBetter}, {"server CPU", "ms/call", LowerIsBetter}},
			prepare: rn.prepareIdentify,
			load: &loadSpec{conns: 1, server: (*side).smallServer, call: rn.identifyCall, values: func(sm sample) []float64 {
				return []float64{percentile(sm.lat, 50), sm.cpuPerCall(time.Millisecond)}
			}},
		},
		{
			name: "import",
			about: fmt.Sprintf("1k: `vitola import catalog` of %d new cigars into the served %d-cigar catalog, from the command's start until search finds every one "+
				"(server CPU over that time, this program's polls included); full: the %d cigars into empty stores (once per side per -full-imports round, before any server runs)",
				batchSize, rn.catalogCigars, rn.catalogCigars),
			metrics: []metricSpec{
				{"1k: start to all searchable", "ms", LowerIsBetter},
				{"1k: vitola import", "ms", LowerIsBetter},
				{"1k: import CPU", "ms", LowerIsBetter},
				{"1k: server CPU", "ms", LowerIsBetter},
				{"full: vitola import", "s", LowerIsBetter},
				{"full: import CPU", "s", LowerIsBetter},
			},
			prepare: none,
			round:   rn.importRound,
		},
	}
}

// fullImportMetrics are the import benchmark's rows filled by the full
// imports rather than by its rounds.
const fullImportMetrics = 2

// loadRound runs a load benchmark's round: the phase of each side cut into
// slices of about a second, taken in turn, so that both sides meet the same
// swings of a shared machine's load; each side's slices add up to its
// figures. The pairs of slices go A B, B A, A B… (A first in the round's
// order), so neither side always follows the other's load (a server's work
// left after its slice, its GC, falls on the next). A side whose slice fails
// stops there, with the error.
func (rn *runner) loadRound(ctx context.Context, b *benchmark, sides []*side) (map[*side][]float64, map[*side]error) {
	vals, errs := map[*side][]float64{}, map[*side]error{}
	samples := map[*side]*sample{}
	calls := map[*side]func(context.Context) error{}
	for _, s := range sides {
		c := newClient(b.load.conns)
		defer c.CloseIdleConnections()
		calls[s], samples[s] = b.load.call(s, c), &sample{}
	}
	n, slice := rn.slices()
	for i := range n {
		for j := range sides {
			s := sides[j]
			if i%2 == 1 {
				s = sides[len(sides)-1-j]
			}
			if errs[s] != nil {
				continue
			}
			sm, err := measure(ctx, b.load.server(s), b.load.conns, slice, calls[s])
			if err != nil {
				errs[s] = err
				continue
			}
			samples[s].add(sm)
		}
		if ctx.Err() != nil {
			break
		}
	}
	for _, s := range sides {
		if errs[s] == nil {
			vals[s] = b.load.values(*samples[s])
		}
	}
	return vals, errs
}

// measure runs call in a closed loop on sv for d, with the server's CPU
// over the same time.
func measure(ctx context.Context, sv *server, conns int, d time.Duration, call func(context.Context) error) (sample, error) {
	cpu0, err := sv.cpu()
	if err != nil {
		return sample{}, err
	}
	res := closedLoop(ctx, conns, d, call)
	cpu1, err := sv.cpu()
	if err != nil {
		return sample{}, err
	}
	if err := res.err(); err != nil {
		return sample{}, err
	}
	return sample{lat: res.lat, took: res.took, cpu: cpu1 - cpu0}, nil
}

func joinCall(s *side, c *http.Client) func(context.Context) error {
	body, _ := json.Marshal(map[string]string{"query": joinQuery})
	req := request{method: "POST", url: s.small.api + "/graphql", body: body,
		header: map[string]string{"Content-Type": "application/json", "x-service-key": s.smallKey}}
	return func(ctx context.Context) error {
		b, err := do(ctx, c, req)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), `"errors"`) || !strings.Contains(string(b), `"brand"`) {
			return fmt.Errorf("POST /graphql answered %s", clip(string(b), 200))
		}
		return nil
	}
}

func searchCall(s *side, c *http.Client) func(context.Context) error {
	var next atomic.Int64
	return func(ctx context.Context) error {
		q := searchQueries[int(next.Add(1))%len(searchQueries)]
		b, err := do(ctx, c, request{method: "GET", url: s.big.api + "/v1/cigars/search?q=" + url.QueryEscape(q),
			header: map[string]string{"x-service-key": s.bigKey}})
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(b), `{"data":[{`) {
			return fmt.Errorf("search %q answered %s", q, clip(string(b), 200))
		}
		return nil
	}
}

// payments is a side's service client and what its sessions buy.
type payments struct {
	client, secret, body string
}

func (rn *runner) preparePayments(ctx context.Context, s *side) error {
	if !s.has(ctx, "payments", "clients", "create") {
		return errors.New("no `vitola payments clients create`")
	}
	line, err := s.cli(ctx, "payments", "clients", "create", "--data", s.smallData(), "--name", "bench-compare", "--return-url", "https://shop.example/paid")
	if err != nil {
		return err
	}
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[0], "pcl_") {
		return fmt.Errorf("payments clients create printed %q, not the client's ID and secret", clip(line, 20))
	}
	p := payments{client: f[0], secret: f[1]}
	c := newClient(1)
	defer c.CloseIdleConnections()
	b, err := do(ctx, c, p.request(s, "POST", "/billing-accounts/resolve", `{"accountReference": "bench-compare"}`, ""))
	if err != nil {
		return err
	}
	var account struct{ Data struct{ ID string } }
	if json.Unmarshal(b, &account); account.Data.ID == "" {
		return fmt.Errorf("POST /billing-accounts/resolve answered %s", clip(string(b), 200))
	}
	b, err = do(ctx, c, p.request(s, "GET", "/offers?resourceType=ai_credits", "", ""))
	if err != nil {
		return err
	}
	var offers struct{ Data []struct{ ID string } }
	if json.Unmarshal(b, &offers); len(offers.Data) == 0 {
		return fmt.Errorf("GET /offers answered %s (the demo seeds two)", clip(string(b), 200))
	}
	p.body = fmt.Sprintf(`{"billingAccountId": %q, "offerId": %q, "returnUrl": "https://shop.example/paid"}`, account.Data.ID, offers.Data[0].ID)
	rn.payments[s] = p
	return nil
}

// request is a call to the payments API as the service client.
func (p payments) request(s *side, method, path, body, idemKey string) request {
	r := request{method: method, url: s.small.pay + "/api/v1" + path, header: map[string]string{
		"Authorization": "Bearer " + p.secret, "X-Service-Client-Id": p.client, "Content-Type": "application/json"}}
	if body != "" {
		r.body = []byte(body)
	}
	if idemKey != "" {
		r.header["Idempotency-Key"] = idemKey
	}
	return r
}

func (rn *runner) paymentsCall(s *side, c *http.Client) func(context.Context) error {
	p := rn.payments[s]
	return func(ctx context.Context) error {
		b, err := do(ctx, c, p.request(s, "POST", "/payment-sessions", p.body, rn.idempotencyKey()))
		if err != nil {
			return err
		}
		var created struct{ Data struct{ ID string } }
		if json.Unmarshal(b, &created); created.Data.ID == "" {
			return fmt.Errorf("POST /payment-sessions answered %s", clip(string(b), 200))
		}
		_, err = do(ctx, c, p.request(s, "GET", "/payment-sessions/"+url.PathEscape(created.Data.ID)+"/status", "", ""))
		return err
	}
}

// idempotencyKey is new for every call of the run (and of any run, should
// stores be reused).
func (rn *runner) idempotencyKey() string {
	return fmt.Sprintf("bench-%s-%d", rn.runID, rn.seq.Add(1))
}

func (rn *runner) prepareIdentify(ctx context.Context, s *side) error {
	switch {
	case rn.photoBody == nil:
		return errors.New("no photo: " + bandPhoto + " is missing from the working tree")
	case s.smallKeyNote != "":
		return errors.New(s.smallKeyNote)
	case !s.has(ctx, "credits", "add"):
		return errors.New("no `vitola credits add`")
	}
	_, err := s.cli(ctx, "credits", "add", "--data", s.smallData(), "--key", s.smallKey, "--amount", "1000000000", "--note", "bench-compare")
	return err
}

func (rn *runner) identifyCall(s *side, c *http.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		b, err := do(ctx, c, request{method: "POST", url: s.small.api + "/v1/ai/cigars/identify", body: rn.photoBody,
			header: map[string]string{"Content-Type": "application/json", "x-service-key": s.smallKey, "Idempotency-Key": rn.idempotencyKey()}})
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), `"status"`) {
			return fmt.Errorf("identify answered %s", clip(string(b), 200))
		}
		return nil
	}
}

// photoJSON is identify's body for a JPEG sent inline.
func photoJSON(jpeg []byte) []byte {
	b, _ := json.Marshal(map[string]string{"imageUrl": "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpeg)})
	return b
}

// importRound imports a batch of new cigars into the served large catalog
// and times it from the command's start until search finds every one: the
// import's own wall time and CPU, and the server's CPU over the same time
// (picking the batch up, and answering this program's polls).
func (rn *runner) importRound(ctx context.Context, s *side, r int) ([]float64, error) {
	k := rn.batchCopy(r)
	if n, err := rn.countCopy(ctx, s, k); err != nil || n != 0 {
		return nil, fmt.Errorf("before importing %s: %d found, %v", copyWord(k), n, err)
	}
	cpu0, err := s.big.cpu()
	if err != nil {
		return nil, err
	}
	cmd := s.command(ctx, "import", "catalog", "--data", s.bigData(), rn.batches[k])
	var tail tailWriter
	cmd.Stdout, cmd.Stderr = &tail, &tail
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: vitola import: %w", s.name, err)
	}
	exited := make(chan error, 1)
	var importTook time.Duration
	go func() {
		err := cmd.Wait()
		importTook = time.Since(start)
		exited <- err
	}()
	importDone := false
	defer func() { // a measurement cut short leaves no import running
		if !importDone {
			cmd.Process.Kill()
			<-exited
		}
	}()
	var searchable time.Duration
	for {
		n, err := rn.countCopy(ctx, s, k)
		if err != nil {
			return nil, err
		}
		if n >= batchSize {
			searchable = time.Since(start)
			break
		}
		if time.Since(start) > 2*time.Minute {
			return nil, fmt.Errorf("%s: %d of %d imported cigars searchable after 2 minutes", s.name, n, batchSize)
		}
		select {
		case err := <-exited:
			importDone = true
			if err != nil {
				return nil, fmt.Errorf("%s: vitola import: %w: %s", s.name, err, clip(tail.String(), 500))
			}
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !importDone {
		importDone = true
		if err := <-exited; err != nil {
			return nil, fmt.Errorf("%s: vitola import: %w: %s", s.name, err, clip(tail.String(), 500))
		}
	}
	cpu1, err := s.big.cpu()
	if err != nil {
		return nil, err
	}
	importCPU := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return []float64{ms(searchable), ms(importTook), ms(importCPU), ms(cpu1 - cpu0)}, nil
}

// batchCopy is the demo-lines copy round r imports (the warm-up, r = -1,
// the first after the large catalog's).
func (rn *runner) batchCopy(r int) int { return rn.o.Scale + 1 + r }

// countCopy counts the cigars of copy k search finds, paging through
// "lote K" and counting only names holding "Lote K " (a prefix of the last
// word, or a cigar whose own name holds K, may add others).
func (rn *runner) countCopy(ctx context.Context, s *side, k int) (int, error) {
	c := rn.pollClient
	word := copyWord(k)
	n, cursor := 0, ""
	for page := 0; page < 50; page++ {
		u := s.big.api + "/v1/cigars/search?limit=100&q=" + url.QueryEscape(strings.ToLower(word))
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		b, err := do(ctx, c, request{method: "GET", url: u, header: map[string]string{"x-service-key": s.bigKey}})
		if err != nil {
			return n, fmt.Errorf("%s: %w", s.name, err)
		}
		var res struct {
			Data       []struct{ Name string }
			Pagination struct {
				HasNextPage bool
				EndCursor   string
			}
		}
		if err := json.Unmarshal(b, &res); err != nil {
			return n, fmt.Errorf("%s: search answered %s", s.name, clip(string(b), 200))
		}
		for _, d := range res.Data {
			if strings.Contains(d.Name, word+" ") {
				n++
			}
		}
		if !res.Pagination.HasNextPage || res.Pagination.EndCursor == "" {
			break
		}
		cursor = res.Pagination.EndCursor
	}
	return n, nil
}

// fullImport imports the large catalog into data (empty stores) and returns
// the command's wall time and CPU.
func (rn *runner) fullImport(ctx context.Context, s *side, data string, round int) (wall, cpu time.Duration, err error) {
	cmd := s.command(ctx, "import", "catalog", "--data", data, rn.catalogFile)
	what := fmt.Sprintf("%s: importing the %d-cigar catalog (full import %d of %d)", s.name, rn.catalogCigars, round+1, rn.o.FullImports)
	wall, err = runLong(rn.out, what, cmd)
	if err != nil {
		return 0, 0, err
	}
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}
