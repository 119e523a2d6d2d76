package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/kv/kvtest"
)

// call sends query to /graphql with key and returns the response, its body read
// into the map.
func call(t *testing.T, addr, key, query string) (*http.Response, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	res, raw := postJSON(t, "http://"+addr+"/graphql", key, "", body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return res, out
}

func errorCode(out map[string]any) string {
	errs, _ := out["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	ext, _ := errs[0].(map[string]any)["extensions"].(map[string]any)
	code, _ := ext["code"].(string)
	return code
}

var rateLimitItem = regexp.MustCompile(`^"(requests|cost)";r=(\d+);t=(\d+)$`)

// remaining reads RateLimit's r of policy.
func remaining(t *testing.T, h http.Header, policy string) int {
	t.Helper()
	for _, v := range strings.Split(h.Get("RateLimit"), ", ") {
		if m := rateLimitItem.FindStringSubmatch(v); m != nil && m[1] == policy {
			n, _ := strconv.Atoi(m[2])
			return n
		}
	}
	t.Fatalf("no RateLimit item for %q in %q", policy, h.Values("RateLimit"))
	return 0
}

// TestQuotasPerKey drives the quotas through the real server: the default
// requests-per-second quota refuses the burst's excess with 429, Retry-After and
// the RateLimit fields; REST routes spend it too; a key's own limits (set by
// the admin command while the server runs) apply within the key cache's TTL;
// an operation costlier than the key's per-minute quota is refused before it
// runs; measure mode refuses nothing and logs what it would have refused.
func TestQuotasPerKey(t *testing.T) {
	data := t.TempDir()
	addr := loopbackAddr(t)
	serveForTest(t, addr, "--demo", "--data", data, "--payments-addr", loopbackAddr(t), "--quota-rps", "5", "--quota-cost-per-minute", "1000")
	key, err := admin(t, "keys", "create", "--name", "quota", "--data", data)
	if err != nil {
		t.Fatal(err)
	}

	passed := 0
	var refused *http.Response
	var refusedBody map[string]any
	start := time.Now()
	for range 8 {
		res, out := call(t, addr, key, `{ __typename }`)
		switch res.StatusCode {
		case 200:
			passed++
			if p := res.Header.Get("RateLimit-Policy"); !strings.Contains(p, `"requests";q=5;w=1`) || !strings.Contains(p, `"cost";q=1000;w=60;qu="graphql-cost"`) {
				t.Fatalf("RateLimit-Policy = %q", p)
			}
		case 429:
			refused, refusedBody = res, out
		default:
			t.Fatalf("status %d: %v", res.StatusCode, out)
		}
	}
	// 5 at once, and one more for each 200 ms the loop took.
	if most := 5 + int(time.Since(start)/(200*time.Millisecond)); passed < 5 || passed > most || refused == nil {
		t.Fatalf("%d of 8 requests passed (want 5 to %d, the rest refused)", passed, most)
	}
	if code := errorCode(refusedBody); code != "RATE_LIMITED" {
		t.Fatalf("refusal code %q: %v", code, refusedBody)
	}
	if ra, err := strconv.Atoi(refused.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 1 {
		t.Fatalf("Retry-After = %q, want 1", refused.Header.Get("Retry-After"))
	}
	if r := remaining(t, refused.Header, "requests"); r != 0 {
		t.Fatalf("RateLimit requests r = %d on a refusal", r)
	}

	// REST routes spend the same quota: still empty, so refused in REST's shape.
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/cigars/search?q=padron", nil)
	req.Header.Set("x-service-key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var restErr struct{ Error, Message string }
	json.NewDecoder(res.Body).Decode(&restErr)
	res.Body.Close()
	if res.StatusCode != 429 || restErr.Error != "rate_limited" || res.Header.Get("Retry-After") == "" || !strings.Contains(restErr.Message, "5 requests per second") {
		t.Fatalf("REST over quota: %d %+v (Retry-After %q)", res.StatusCode, restErr, res.Header.Get("Retry-After"))
	}

	// The key's own limits, set while the server runs.
	if line, err := admin(t, "keys", "limits", "set", key, "--rps", "1000", "--cost-per-minute", "30", "--data", data); err != nil || !strings.HasSuffix(line, ": rps=1000 cost-per-minute=30") {
		t.Fatalf("keys limits set: %q %v", line, err)
	}
	if line, _ := admin(t, "keys", "list", "--data", data); line != "3 keys, 3 active" {
		t.Fatalf("keys list: %q", line)
	}
	time.Sleep(600 * time.Millisecond) // the key cache's TTL (500 ms)
	for range 20 {
		if res, out := call(t, addr, key, `{ __typename }`); res.StatusCode != 200 {
			t.Fatalf("with --rps 1000: %d %v", res.StatusCode, out)
		}
	}
	// The cost quota: 30 per minute. A search of 20 cigars with their brands
	// costs more than that at once, so it can never run.
	res, out := call(t, addr, key, `{ searchCigars(query: "a", first: 20) { edges { node { name brand { name } } } } }`)
	if res.StatusCode != 429 || errorCode(out) != "RATE_LIMITED" || res.Header.Get("Retry-After") != "" ||
		!strings.Contains(out["errors"].([]any)[0].(map[string]any)["message"].(string), "whole quota of 30 per minute") {
		t.Fatalf("an operation over the whole cost quota: %d %v (Retry-After %q)", res.StatusCode, out, res.Header.Get("Retry-After"))
	}
	// A cheap one spends it down.
	first := -1
	for i := range 40 {
		res, out := call(t, addr, key, `{ brands(first: 1) { edges { node { name } } } }`)
		if res.StatusCode == 429 {
			if first < 1 || errorCode(out) != "RATE_LIMITED" || res.Header.Get("Retry-After") == "" {
				t.Fatalf("cost refusal after %d operations: %v (Retry-After %q)", i, out, res.Header.Get("Retry-After"))
			}
			break
		}
		if i == 39 {
			t.Fatal("40 operations never spent a cost quota of 30 per minute")
		}
		if r := remaining(t, res.Header, "cost"); first < 0 {
			first = r
		}
	}
	if line, err := admin(t, "keys", "limits", "set", "--data", data, key, "--cost-per-minute", "default"); err != nil || !strings.HasSuffix(line, ": rps=1000 cost-per-minute=default") {
		t.Fatalf("keys limits set default: %q %v", line, err)
	}
	for _, bad := range [][]string{
		{"keys", "limits", "set", key, "--data", data},                  // nothing to set
		{"keys", "limits", "set", key, "--rps", "0", "--data", data},    // 0 is not a quota
		{"keys", "limits", "set", key, "--rps", "many", "--data", data}, // not a number
		{"keys", "limits", "set", "key_0000000000000000", "--rps", "5", "--data", data},
		{"keys", "limits", "--data", data},
	} {
		if line, err := admin(t, bad...); err == nil {
			t.Errorf("vitola %v succeeded: %q", bad, line)
		}
	}
}

func TestQuotaMeasureModeRefusesNothing(t *testing.T) {
	data := t.TempDir()
	addr := loopbackAddr(t)
	metrics := loopbackAddr(t)
	_, stderr := serveForTest(t, addr, "--data", data, "--payments-addr", loopbackAddr(t), "--quota-rps", "2", "--quota-mode", "measure", "--metrics-addr", metrics)
	key, _ := admin(t, "keys", "create", "--name", "measured", "--data", data)
	for i := range 6 {
		if res, out := call(t, addr, key, `{ __typename }`); res.StatusCode != 200 || res.Header.Get("RateLimit") == "" {
			t.Fatalf("request %d in measure mode: %d %v (RateLimit %q)", i, res.StatusCode, out, res.Header.Get("RateLimit"))
		}
	}
	if !strings.Contains(stderr.String(), `"message":"over quota"`) || !strings.Contains(stderr.String(), `"refused":false`) {
		t.Fatalf("measure mode logged no would-be refusal:\n%s", stderr)
	}
	if strings.Contains(stderr.String(), key) {
		t.Fatal("the key itself is in the log")
	}
	// And counted: 6 requests on a burst of 2 are 4 (or, if the loop took
	// over half a second, 3) would-be refusals.
	res, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`(?m)^vitola_quota_refusals_total\{mode="measure",policy="requests"\} (\d+)$`).FindSubmatch(body)
	if m == nil || (string(m[1]) != "4" && string(m[1]) != "3") {
		t.Fatalf("quota refusals metric: %q", m)
	}
}

// TestQuotaSharedByReplicas runs two replicas on one PostgreSQL database and
// one Redis: a key's requests-per-second quota is one budget across both.
func TestQuotaSharedByReplicas(t *testing.T) {
	dbURL, redisURL := topologyServices(t)
	db := createTestDatabase(t, dbURL)
	common := []string{"--database-url", db, "--redis-url", redisURL, "--redis-prefix", kvtest.Prefix("quota"), "--quota-rps", "5"}
	a, c := loopbackAddr(t), loopbackAddr(t)
	serveForTest(t, a, append([]string{"--payments-addr", loopbackAddr(t)}, common...)...)
	serveForTest(t, c, append([]string{"--payments-addr", loopbackAddr(t)}, common...)...)
	key, err := admin(t, "keys", "create", "--name", "replicas", "--database-url", db)
	if err != nil {
		t.Fatal(err)
	}
	passed := map[string]int{}
	start := time.Now()
	for i := range 12 {
		addr := []string{a, c}[i%2]
		if res, out := call(t, addr, key, `{ __typename }`); res.StatusCode == 200 {
			passed[addr]++
		} else if res.StatusCode != 429 {
			t.Fatalf("status %d: %v", res.StatusCode, out)
		}
	}
	total := passed[a] + passed[c]
	// Alone, each replica would pass 5 of its 6; shared, 5 pass in all (one
	// more for each 200 ms the loop took).
	if most := 5 + int(time.Since(start)/(200*time.Millisecond)); total < 5 || total > most || passed[a] == 0 || passed[c] == 0 {
		t.Fatalf("passed %v of 12 alternating requests: want 5 to %d in all, from both replicas", passed, most)
	}
}
