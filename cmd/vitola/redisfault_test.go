package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/kv/kvtest"
)

// The store-fault tests run serve as a process with --redis-url pointing at a
// redis-server of the test's own, and kill that server (SIGKILL) under load:
// the platform degrades to per-replica state and never stalls on Redis.

// redisRig is serve over SQLite and its own Redis.
type redisRig struct {
	t      *testing.T
	data   string
	api    string
	redis  *kvtest.RedisServer
	serve  *proc
	client *http.Client
}

func newRedisRig(t *testing.T) *redisRig {
	t.Helper()
	return &redisRig{t: t, data: t.TempDir(), api: loopbackAddr(t), redis: kvtest.NewRedisServer(t, loopbackPort(t)),
		client: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
}

// start runs serve with quotas high enough never to refuse (their RateLimit
// fields are what is checked) and waits for liveness, not readiness.
func (rg *redisRig) start() {
	rg.t.Helper()
	rg.serve = startProc(rg.t, "serve", []string{"serve", "--data", rg.data, "--addr", rg.api, "--payments-addr", loopbackAddr(rg.t),
		"--redis-url", rg.redis.URL(), "--redis-prefix", kvtest.Prefix("outage"), "--quota-rps", "1000000", "--log-format", "json"}, nil, nil)
	waitHealthy(rg.t, rg.serve, "http://"+rg.api+"/health")
}

// request is the i-th request of the load: GraphQL and REST in turn.
func (rg *redisRig) request(i int, key string) *http.Request {
	var req *http.Request
	if i%2 == 0 {
		req, _ = http.NewRequest("POST", "http://"+rg.api+"/graphql", strings.NewReader(`{"query": "{ __typename }"}`))
		req.Header.Set("Content-Type", "application/json")
	} else {
		req, _ = http.NewRequest("GET", "http://"+rg.api+"/v1/cigars/search?q=padron", nil)
	}
	req.Header.Set("x-service-key", key)
	return req
}

var requestsItem = regexp.MustCompile(`(^|, )"requests";r=\d+;t=\d+`)

// drive sends the load from workers for d and returns how many requests were
// answered. Every answer must be a 200 with the quota's RateLimit fields; a
// transport error or any other answer fails the test.
func (rg *redisRig) drive(key string, workers int, d time.Duration) int {
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := 0
			defer func() { mu.Lock(); n += mine; mu.Unlock() }()
			for i := w; time.Now().Before(deadline); i += workers {
				req := rg.request(i, key)
				res, err := rg.client.Do(req)
				if err != nil {
					rg.t.Errorf("%s %s: %v", req.Method, req.URL.Path, err)
					return
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					rg.t.Errorf("%s %s: %d %s", req.Method, req.URL.Path, res.StatusCode, body)
					return
				}
				if !requestsItem.MatchString(res.Header.Get("RateLimit")) || res.Header.Get("RateLimit-Policy") == "" {
					rg.t.Errorf("%s %s: no RateLimit fields (RateLimit %q, RateLimit-Policy %q)", req.Method, req.URL.Path, res.Header.Get("RateLimit"), res.Header.Get("RateLimit-Policy"))
					return
				}
				mine++
			}
		}()
	}
	wg.Wait()
	return n
}

// ready returns the API's /health/ready status and its kv component.
func (rg *redisRig) ready() (int, struct{ Status, Error string }, string) {
	rg.t.Helper()
	return rg.readyAt(rg.api)
}

// readyAt returns /health/ready's status and kv component at addr.
func (rg *redisRig) readyAt(addr string) (int, struct{ Status, Error string }, string) {
	rg.t.Helper()
	res, err := rg.client.Get("http://" + addr + "/health/ready")
	if err != nil {
		rg.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var out struct {
		Components map[string]struct{ Status, Error string }
	}
	json.Unmarshal(body, &out)
	return res.StatusCode, out.Components["kv"], string(body)
}

// checkDegraded: /health/ready answers 503 with the kv check failing and
// saying the fallback serves, naming no address.
func (rg *redisRig) checkDegraded() {
	rg.t.Helper()
	status, kvc, body := rg.ready()
	if status != 503 || kvc.Status != "unavailable" || !strings.Contains(kvc.Error, "fallback") {
		rg.t.Fatalf("/health/ready with Redis down: %d %s", status, body)
	}
	if strings.Contains(body, "127.0.0.1") || strings.Contains(body, rg.redis.Addr) || strings.Contains(body, "redis://") {
		rg.t.Fatalf("/health/ready names an address: %s", body)
	}
}

// waitReady waits for /health/ready's 200 after Redis came back: the breaker
// probes after back-offs of 0.5 s doubling to 10 s.
func (rg *redisRig) waitReady() time.Duration {
	rg.t.Helper()
	start := time.Now()
	for {
		status, _, body := rg.ready()
		if status == 200 {
			return time.Since(start)
		}
		if time.Since(start) > 60*time.Second {
			rg.t.Fatalf("not ready within 60 s of Redis's restart: %s\n%s", body, rg.serve.log.tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logged counts the serve log's lines with msg in their message.
func (rg *redisRig) logged(msg string) int {
	n := 0
	for _, line := range strings.Split(rg.serve.log.String(), "\n") {
		var e struct{ Message string }
		if json.Unmarshal([]byte(line), &e) == nil && strings.Contains(e.Message, msg) {
			n++
		}
	}
	return n
}

// TestRedisOutageUnderLoad kills Redis under load: no request fails, the
// RateLimit fields stay, throughput stays (the goal is 80% of what it was;
// under 20% would mean requests wait for Redis), a key revoked meanwhile is
// refused within access.CacheTTL, /health/ready reports kv failing until
// Redis is back, and the warnings are logged once each.
func TestRedisOutageUnderLoad(t *testing.T) {
	rg := newRedisRig(t)
	rg.redis.Start()
	rg.start()
	rg.waitReady()
	key, err := admin(t, "keys", "create", "--name", "load", "--data", rg.data)
	if err != nil {
		t.Fatal(err, key)
	}
	const workers, phase = 4, 3 * time.Second
	rg.drive(key, workers, 500*time.Millisecond) // warm up
	up := rg.drive(key, workers, phase)

	rg.redis.Kill()
	down := rg.drive(key, workers, phase)
	if t.Failed() {
		t.FailNow()
	}
	ratio := float64(down) / float64(up)
	verdict := "met"
	if ratio < 0.8 {
		verdict = "missed (a shared, noisy machine: see the figures)"
	}
	t.Logf("throughput with Redis up %.0f req/s, killed %.0f req/s: ratio %.2f; goal >= 0.80 %s", float64(up)/phase.Seconds(), float64(down)/phase.Seconds(), ratio, verdict)
	fmt.Printf("redis outage throughput ratio (down/up): %.2f (%d/%d requests in %v each); goal >= 0.80 %s\n", ratio, down, up, phase, verdict)
	if ratio < 0.2 {
		t.Fatalf("throughput fell to %.0f%% with Redis down: requests are waiting for Redis", 100*ratio)
	}
	rg.checkDegraded()

	// A key revoked while Redis is down: key verdicts come from SQL, cached
	// for access.CacheTTL, so it is refused once that has passed.
	if line, err := admin(t, "keys", "revoke", "--data", rg.data, key); err != nil || !strings.HasPrefix(line, "revoked ") {
		t.Fatalf("keys revoke: %q %v", line, err)
	}
	time.Sleep(access.CacheTTL + 100*time.Millisecond) // a verdict read as the revocation committed
	for i := range 2 {
		res, err := rg.client.Do(rg.request(i, key))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Fatalf("a key revoked %v ago answered %d, want 401", access.CacheTTL, res.StatusCode)
		}
	}

	rg.redis.Start()
	t.Logf("ready again %v after Redis's restart", rg.waitReady())
	if opened, closed := rg.logged("Redis is unreachable"), rg.logged("Redis answers again"); opened != 1 || closed != 1 {
		t.Fatalf("logged %d openings and %d closings, want one each:\n%s", opened, closed, rg.serve.log.tail(30))
	}
}

// TestServeStartsWithRedisDown: serve starts although Redis does not answer,
// is not ready (kv failing) but serves requests with their RateLimit fields,
// and turns ready once a redis-server starts on that port; so does the
// router component alone (its kv check).
func TestServeStartsWithRedisDown(t *testing.T) {
	rg := newRedisRig(t)
	rg.start()
	rg.checkDegraded()
	routerAddr := loopbackAddr(t)
	router := startProc(t, "router", []string{"serve", "--component", "router", "--data", rg.data, "--addr", routerAddr, "--redis-url", rg.redis.URL(),
		"--subgraph-url", "catalog=http://" + rg.api + "/graphql,users=http://" + rg.api + "/graphql,venues=http://" + rg.api + "/graphql"}, nil, nil)
	waitHealthy(t, router, "http://"+routerAddr+"/health")
	if _, kvc, body := rg.readyAt(routerAddr); kvc.Status != "unavailable" || !strings.Contains(kvc.Error, "fallback") {
		t.Fatalf("the router's readiness with Redis down: %s", body)
	}
	key, err := admin(t, "keys", "create", "--name", "early", "--data", rg.data)
	if err != nil {
		t.Fatal(err, key)
	}
	if n := rg.drive(key, 2, 300*time.Millisecond); n == 0 || t.Failed() {
		t.Fatalf("%d requests served with Redis down", n)
	}
	rg.redis.Start()
	t.Logf("ready %v after Redis started", rg.waitReady())
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		_, kvc, body := rg.readyAt(routerAddr)
		if kvc.Status == "ok" {
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("the router's kv check still fails 60 s after Redis started: %s", body)
		}
	}
	if n := rg.drive(key, 2, 300*time.Millisecond); n == 0 || t.Failed() {
		t.Fatalf("%d requests served with Redis up", n)
	}
}

// TestServeRefusesAMalformedRedisURL: an unreachable Redis does not stop
// serve, but a URL that cannot be one does, saying so without repeating it
// (it may hold a password).
func TestServeRefusesAMalformedRedisURL(t *testing.T) {
	for _, u := range []string{"redis://user:s3cret@127.0.0.1:%zz", "http://user:s3cret@127.0.0.1:6379"} {
		var stdout, stderr strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := run(ctx, []string{"vitola", "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--payments-addr", "127.0.0.1:0", "--redis-url", u}, noEnv, nil, &stdout, &stderr)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "--redis-url") || !strings.Contains(err.Error(), "redis://") {
			t.Fatalf("serve --redis-url %s: %v", u, err)
		}
		if strings.Contains(err.Error()+stderr.String(), "s3cret") {
			t.Fatalf("the password is in the error: %v\n%s", err, stderr.String())
		}
	}
}
