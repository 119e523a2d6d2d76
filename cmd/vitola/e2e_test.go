package main

import (
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/sdk/sdktest"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
)

// TestBuyingAICreditsEndToEnd is README's payments walk-through as one test,
// over real processes: the platform (`vitola serve --demo`), the operator's
// commands, a backend's calls, a browser (Debian's chromium) paying on the
// hosted checkout with a sandbox card, the callback reaching
// examples/receiver (built on sdk/callback), and identify spending the
// credits bought.
func TestBuyingAICreditsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("the end-to-end walk-through starts the platform and a browser")
	}
	sdktest.Require(t, "chromium")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	api, pay, recv := loopbackAddr(t), loopbackAddr(t), loopbackAddr(t)

	// The receiver, as `go run ./examples/receiver` runs it.
	receiverBin := filepath.Join(dir, "receiver")
	if out, err := exec.Command("go", "build", "-o", receiverBin, "../../examples/receiver").CombinedOutput(); err != nil {
		t.Fatalf("build examples/receiver: %v\n%s", err, out)
	}

	// make run's platform, with the photo host below on loopback allowed.
	serve := startProc(t, "serve", []string{"serve", "--demo", "--data", data, "--addr", api, "--payments-addr", pay,
		"--fetch-allow-cidrs", "127.0.0.1/32", "--log-format", "json"}, nil, nil)
	waitHealthy(t, serve, "http://"+pay+"/health")
	demoKey, err := os.ReadFile(filepath.Join(data, "demo-key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(demoKey))
	keyID := "key_" + strings.Split(key, "_")[1]

	// 1. The operator creates a service client bound to the developer key.
	line, err := admin(t, "payments", "clients", "create", "--data", data, "--name", "shop", "--developer-key", key,
		"--return-url", "http://"+recv+"/paid", "--return-url", "http://"+recv+"/cancelled", "--callback-url", "http://"+recv+"/hooks")
	creds := strings.Fields(line)
	if err != nil || len(creds) != 3 {
		t.Fatalf("payments clients create: %q %v", line, err)
	}
	receiver := &proc{log: &logBuffer{}, done: make(chan struct{})}
	receiver.cmd = exec.Command(receiverBin, "-addr", recv, "-secret", creds[2], "-db", filepath.Join(dir, "receiver.db"))
	receiver.cmd.Stdout, receiver.cmd.Stderr = receiver.log, receiver.log
	if err := receiver.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { receiver.err = receiver.cmd.Wait(); close(receiver.done) }()
	t.Cleanup(receiver.kill)

	// 2. Its backend resolves the key's account and opens a session for an
	// ai_credits offer.
	backend := func(method, path, body string, headers ...string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+pay+"/api/v1"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+creds[1])
		req.Header.Set("X-Service-Client-Id", creds[0])
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out struct {
			Data json.RawMessage
		}
		b, _ := io.ReadAll(res.Body)
		if json.Unmarshal(b, &out); res.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
		}
		var m map[string]any
		if json.Unmarshal(out.Data, &m) != nil {
			var list []map[string]any
			json.Unmarshal(out.Data, &list)
			m = map[string]any{"list": list}
		}
		return m
	}
	account := backend("POST", "/billing-accounts/resolve", `{"accountReference": "`+keyID+`"}`)
	offers := backend("GET", "/offers?resourceType=ai_credits", "")["list"].([]map[string]any)
	var offer map[string]any
	for _, o := range offers {
		if o["quantity"] == 100.0 {
			offer = o
		}
	}
	session := backend("POST", "/payment-sessions", fmt.Sprintf(`{"billingAccountId": %q, "offerId": %q, "returnUrl": "http://%s/paid", "cancelUrl": "http://%s/cancelled"}`,
		account["id"], offer["id"], recv, recv), "Idempotency-Key", "walkthrough-1")

	// 3. A browser completes the hosted checkout with a sandbox card.
	plan, _ := json.Marshal(map[string]any{"artifacts": dir, "shop": "http://" + recv, "stranger": "http://" + recv, "cases": map[string]any{
		"top": map[string]string{"url": session["url"].(string), "returnUrl": "http://" + recv + "/paid", "cancelUrl": "http://" + recv + "/cancelled"}}})
	var seen struct {
		Cases map[string]struct {
			Error  string
			Landed string `json:"landedOn"`
		}
		PageErrors []string
	}
	sdktest.RunBrowser(t, "checkout.mjs", []string{"CHECKOUT_PLAN=" + string(plan)}, &seen)
	if c := seen.Cases["top"]; c.Error != "" || len(seen.PageErrors) > 0 {
		t.Fatalf("the browser: %s %q", c.Error, seen.PageErrors)
	}
	if st := backend("GET", "/payment-sessions/"+session["id"].(string)+"/status", ""); st["state"] != "completed" {
		t.Fatalf("the session after paying: %v", st)
	}

	// 4. The signed callback reaches the receiver.
	deadline := time.Now().Add(30 * time.Second)
	want := "purchase.succeeded: 100 ai_credits for " + keyID
	for !strings.Contains(receiver.log.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the receiver did not get the purchase within 30 s:\n%s\nplatform:\n%s", receiver.log.String(), serve.log.tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// 5. The next identify shows the credits bought, and spends them.
	photos := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		band := bandart.Render(bandart.DesignFor("Padrón", "1964 Anniversary Series"), 600)
		png.Encode(w, bandart.Photo(band, bandart.Mild, 1))
	}))
	defer photos.Close()
	req, _ := http.NewRequest("POST", "http://"+api+"/v1/ai/cigars/identify", strings.NewReader(`{"imageUrl": "`+photos.URL+`/band.png"}`))
	req.Header.Set("x-service-key", key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "walkthrough-identify")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	// The demo key's 100, the 100 bought, less quick identify's 2.
	if res.StatusCode != 200 || res.Header.Get("X-Service-Ai-Credits-Remaining") != "198" {
		t.Fatalf("identify: %d, credits remaining %q: %s", res.StatusCode, res.Header.Get("X-Service-Ai-Credits-Remaining"), body)
	}
	if line, err := admin(t, "credits", "balance", "--data", data, "--key", keyID); err != nil || line != keyID+" has 198 credits" {
		t.Fatalf("balance: %q %v", line, err)
	}
}
