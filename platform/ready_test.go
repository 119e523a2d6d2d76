package platform_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/kv/kvtest"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/platform"
)

// tcpProxy forwards connections to target until stopped: stopping it is
// Redis going away, to the platform.
type tcpProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *tcpProxy) stop() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestReadiness: /health/ready answers 200 while the stores and Redis
// answer, and 503 naming Redis (and nothing of its address) once Redis is
// gone, while /health, liveness, stays 200; the failures are counted.
func TestReadiness(t *testing.T) {
	redisURL := kvtest.RedisURL(t)
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := platform.Open(context.Background(), platform.Options{
		Store: sqldb.Config{DataDir: t.TempDir()}, RedisURL: u.String(), RedisPrefix: "vitola-test:ready:", InternalKey: internalKey, PublicURL: publicURL,
		Logger: zerolog.New(io.Discard), Telemetry: tel,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(p.API)
	defer srv.Close()
	get := func(path string) (int, string) {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	var ready struct {
		Status     string
		Components map[string]struct{ Status, Error string }
	}
	status, body := get("/health/ready")
	json.Unmarshal([]byte(body), &ready)
	if status != 200 || ready.Status != "ok" {
		t.Fatalf("ready: %d %s", status, body)
	}
	for _, c := range []string{"access", "kv", "catalog", "users", "venues", "payments", "matching"} {
		if ready.Components[c].Status != "ok" {
			t.Errorf("component %s: %+v", c, ready.Components[c])
		}
	}

	proxy.stop()
	status, body = get("/health/ready")
	ready.Components = nil
	json.Unmarshal([]byte(body), &ready)
	if status != 503 || ready.Status != "degraded" || ready.Components["kv"].Status != "unavailable" || ready.Components["catalog"].Status != "ok" {
		t.Fatalf("ready with Redis gone: %d %s", status, body)
	}
	if strings.Contains(body, "127.0.0.1") || strings.Contains(body, proxy.ln.Addr().String()) || strings.Contains(body, "redis://") {
		t.Fatalf("the readiness answer names an address: %s", body)
	}
	if status, body := get("/health"); status != 200 || !strings.Contains(body, `"ok"`) {
		t.Fatalf("liveness with Redis gone: %d %s", status, body)
	}
	// The payments origin's readiness checks Redis too.
	rec := httptest.NewRecorder()
	p.Payments.ServeHTTP(rec, httptest.NewRequest("GET", "/health/ready", nil))
	if rec.Code != 503 {
		t.Fatalf("payments ready with Redis gone: %d %s", rec.Code, rec.Body)
	}

	metrics := httptest.NewRecorder()
	tel.Metrics.Handler().ServeHTTP(metrics, httptest.NewRequest("GET", "/metrics", nil))
	if strings.Contains(metrics.Body.String(), "vitola_redis_errors_total 0") || !strings.Contains(metrics.Body.String(), "vitola_redis_errors_total") {
		t.Errorf("Redis errors not counted:\n%s", metrics.Body)
	}
}
