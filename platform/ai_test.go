package platform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

// bandPhotos serves photos of rendered demo bands on loopback: the test's
// stand-in for a user's image host.
func bandPhotos(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	cache := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b, ok := cache[r.URL.RequestURI()]
		mu.Unlock()
		if !ok {
			// Rendered outside the lock: photos fetched together (eight in one
			// request) must not wait on each other's rendering, which on a
			// busy machine took longer than the fetcher waits for headers.
			seed, _ := strconv.Atoi(r.URL.Query().Get("seed"))
			band := bandart.Render(bandart.DesignFor("Padrón", "1964 Anniversary Series"), 600)
			var buf bytes.Buffer
			png.Encode(&buf, bandart.Photo(band, bandart.Mild, int64(seed)))
			b = buf.Bytes()
			mu.Lock()
			cache[r.URL.RequestURI()] = b
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// warm fetches a photo of bandPhotos once, so that it is rendered and cached
// before a request that fetches it: rendering eight at once on a busy machine
// takes longer than the image fetcher waits for an answer.
func warm(t *testing.T, url string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
}

// mysteryBand serves a photo of a band no evidence knows and returns its URL.
func mysteryBand(t *testing.T) string {
	t.Helper()
	band := bandart.Render(bandart.DesignFor("Unknown Maker", "Mystery Line"), 600)
	var buf bytes.Buffer
	png.Encode(&buf, bandart.Photo(band, bandart.Mild, 1))
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(buf.Bytes()) }))
	t.Cleanup(host.Close)
	return host.URL + "/mystery.png"
}

// aiKey makes a key with api.ai and the given credits.
func (f *fixture) aiKey(t *testing.T, credits int64) (plain, id string) {
	t.Helper()
	k, plain, err := f.p.Keys.CreateKey(context.Background(), "ai", []string{access.EntitlementAI})
	if err != nil {
		t.Fatal(err)
	}
	if credits > 0 {
		if _, err := f.p.Credits.Grant(context.Background(), k.ID, credits, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return plain, k.ID
}

func (f *fixture) balance(t *testing.T, keyID string) int64 {
	t.Helper()
	a, err := f.p.Credits.Account(context.Background(), keyID)
	if err != nil {
		t.Fatal(err)
	}
	return a.Credits()
}

type restResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r restResponse) code() string {
	var e struct{ Error string }
	json.Unmarshal(r.Body, &e)
	return e.Error
}

func (r restResponse) message() string {
	var e struct{ Message string }
	json.Unmarshal(r.Body, &e)
	return e.Message
}

func (f *fixture) postJSON(t *testing.T, path, key, idem, body string) restResponse {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("x-service-key", key)
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return restResponse{res.StatusCode, res.Header, b}
}

func (f *fixture) testPaidFingerprint(t *testing.T) {
	photos := bandPhotos(t)
	const path = "/v1/ai/cigars/fingerprint"
	body := fmt.Sprintf(`{"imageUrl": %q}`, photos.URL+"/band.png?seed=1")
	key, id := f.aiKey(t, 0)

	// Refusals before any work, each naming what to fix.
	for _, c := range []struct {
		name, key, idem, body string
		status                int
		code                  string
	}{
		{"key without api.ai", f.key, "k1", body, 403, "entitlement_required"},
		{"no Idempotency-Key", key, "", body, 400, "idempotency_key_required"},
		{"bad Idempotency-Key", key, "has space", body, 400, "idempotency_key_required"},
		{"no image", key, "k1", `{}`, 400, "invalid_image_urls"},
		{"nine images", key, "k1", `{"imageUrls": ["a","b","c","d","e","f","g","h","i"]}`, 400, "invalid_image_urls"},
		{"unknown field", key, "k1", `{"image": "x"}`, 400, "invalid_body"},
		{"no credits", key, "k1", body, 402, "insufficient_credits"},
	} {
		if r := f.postJSON(t, path, c.key, c.idem, c.body); r.Status != c.status || r.code() != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
	}
	// The refused key is free again: after credits arrive the same key works.
	f.p.Credits.Grant(context.Background(), id, 10, "test")
	r := f.postJSON(t, path, key, "k1", body)
	if r.Status != 200 || r.Header.Get("X-Service-Ai-Credits-Remaining") != "9" {
		t.Fatalf("paid fingerprint: %d %s %v", r.Status, r.Body, r.Header)
	}
	var fp struct {
		Object, Version, Seal string
		Views                 []map[string]any
	}
	if err := json.Unmarshal(r.Body, &fp); err != nil || fp.Object != "band_fingerprint" || len(fp.Views) != 1 || !strings.HasPrefix(fp.Seal, "hs256.") {
		t.Fatalf("fingerprint body: %v %s", err, r.Body)
	}
	// Deterministic: another request for the same photo describes it alike.
	again := f.postJSON(t, path, key, "k2", body)
	if !bytes.Equal(again.Body, r.Body) {
		t.Error("the same photo gave two different fingerprints")
	}
	// The same key and body replay the stored response with no second charge;
	// another body with that key is refused.
	replay := f.postJSON(t, path, key, "k1", body)
	if replay.Status != 200 || !bytes.Equal(replay.Body, r.Body) || replay.Header.Get("X-Service-Ai-Credits-Remaining") != "9" || replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %v", replay.Status, replay.Header)
	}
	if other := f.postJSON(t, path, key, "k1", fmt.Sprintf(`{"imageUrls": [%q, %q]}`, photos.URL+"/a.png", photos.URL+"/b.png")); other.Status != 422 || other.code() != "idempotency_key_reused" {
		t.Fatalf("same key, other body: %d %s", other.Status, other.Body)
	}
	if b := f.balance(t, id); b != 8 {
		t.Fatalf("balance %d after two charged fingerprints of one image, want 8", b)
	}
	// Unsafe or unusable images are refused with their reason, for free.
	for _, c := range []struct{ url, code string }{
		{"http://169.254.169.254/latest/meta-data/", "image_address_blocked"},
		{"http://10.0.0.1/band.jpg", "image_address_blocked"},
		{"ftp://example.com/band.jpg", "invalid_image_url"},
		{photos.URL + "/missing", ""},
	} {
		u := c.url
		if c.code == "" { // a page that is not an image
			u = f.srv.URL + "/docs"
			c.code = "unsupported_image_type"
		}
		r := f.postJSON(t, path, key, "refused-"+c.code+strconv.Itoa(len(u)), fmt.Sprintf(`{"imageUrl": %q}`, u))
		if r.Status/100 != 4 || r.code() != c.code {
			t.Errorf("%s: %d %s, want 4xx %s", u, r.Status, r.Body, c.code)
		}
		// The message names the field the client sent; in a list, the URL's place.
		if !strings.HasPrefix(r.message(), "imageUrl: ") {
			t.Errorf("%s: message %q does not begin with the field sent, imageUrl", u, r.message())
		}
		many := f.postJSON(t, path, key, "refused-list-"+c.code+strconv.Itoa(len(u)), fmt.Sprintf(`{"imageUrls": [%q, %q]}`, photos.URL+"/band.png?seed=1", u))
		if many.Status/100 != 4 || many.code() != c.code || !strings.HasPrefix(many.message(), "imageUrls[1]: ") {
			t.Errorf("%s second in a list: %d %s, want 4xx %s naming imageUrls[1]", u, many.Status, many.Body, c.code)
		}
	}
	if b := f.balance(t, id); b != 8 {
		t.Fatalf("balance %d after refused images, want 8 (refusals are free)", b)
	}
}

// Fifty identical paid requests at once: one runs and is charged once; every
// other either replays its response or is told it is still running.
func (f *fixture) testConcurrentIdempotency(t *testing.T) {
	photos := bandPhotos(t)
	key, id := f.aiKey(t, 5)
	body := fmt.Sprintf(`{"imageUrl": %q}`, photos.URL+"/band.png?seed=2")
	var wg sync.WaitGroup
	statuses := make([]int, 50)
	for i := range statuses {
		wg.Go(func() { statuses[i] = f.postJSON(t, "/v1/ai/cigars/fingerprint", key, "same-key", body).Status })
	}
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	if counts[200] < 1 || counts[200]+counts[409] != 50 {
		t.Fatalf("statuses %v, want 200s and 409s only", counts)
	}
	if b := f.balance(t, id); b != 4 {
		t.Fatalf("balance %d after 50 identical requests, want 4 (one charge)", b)
	}
	a, _ := f.p.Credits.Account(context.Background(), id)
	txs, _ := f.p.Credits.Transactions(context.Background(), a.ID)
	if sum := payments.SumBook(txs, a.ID, payments.AICredits, payments.BookAvailable); sum != 4 {
		t.Fatalf("ledger sums to %d, balance 4", sum)
	}
}

func (f *fixture) testRecognize(t *testing.T) {
	photos := bandPhotos(t)
	key, _ := f.aiKey(t, 20)
	r := f.postJSON(t, "/v1/ai/cigars/fingerprint", key, "rec-1", fmt.Sprintf(`{"imageUrl": %q}`, photos.URL+"/band.png?seed=3"))
	if r.Status != 200 {
		t.Fatalf("fingerprint: %d %s", r.Status, r.Body)
	}
	const path = "/v1/ai/cigars/fingerprint/recognize"
	ok := f.postJSON(t, path, f.key, "", fmt.Sprintf(`{"fingerprint": %s, "limit": 3}`, r.Body))
	var got struct {
		Candidates []struct {
			ID, Name string
			Brand    struct{ Name string }
			Score    float64
			Evidence struct {
				ID     string
				Scores map[string]any
			}
		}
	}
	json.Unmarshal(ok.Body, &got)
	// The photo is of the demo Padrón 1964 Anniversary Series band, whose demo
	// evidence names the line's first vitola.
	if ok.Status != 200 || len(got.Candidates) != 3 || got.Candidates[0].ID != catalog.CigarID("Padrón", "1964 Anniversary Series Exclusivo") ||
		got.Candidates[0].Brand.Name != "Padrón" || got.Candidates[0].Evidence.ID == "" || got.Candidates[0].Evidence.Scores["layout"] == nil ||
		got.Candidates[0].Score <= got.Candidates[1].Score {
		t.Fatalf("recognize: %d %s", ok.Status, ok.Body)
	}
	// The band's keypoints found its evidence: dozens of them in one
	// placement, against a handful for another band's.
	if in, _ := got.Candidates[0].Evidence.Scores["inliers"].(float64); in < 20 || got.Candidates[0].Evidence.Scores["keypoints"] == nil {
		t.Fatalf("recognize: the first candidate's keypoints: %v", got.Candidates[0].Evidence.Scores)
	}
	// Eight photos' views, up to 2,000 keypoints each, fit the route's body
	// limit (their fingerprint is larger than the 512 KB it once had).
	urls := make([]string, 8)
	for i := range urls {
		u := fmt.Sprintf("%s/band.png?seed=%d", photos.URL, 20+i)
		warm(t, u) // rendered now, not while the fetcher waits for headers
		urls[i] = fmt.Sprintf("%q", u)
	}
	eight := f.postJSON(t, "/v1/ai/cigars/fingerprint", key, "rec-8", fmt.Sprintf(`{"imageUrls": [%s]}`, strings.Join(urls, ",")))
	if eight.Status != 200 || len(eight.Body) <= 512<<10 {
		t.Fatalf("fingerprint of eight photos: %d, %d bytes %.300s", eight.Status, len(eight.Body), eight.Body)
	}
	if got := f.postJSON(t, path, f.key, "", fmt.Sprintf(`{"fingerprint": %s}`, eight.Body)); got.Status != 200 ||
		!bytes.Contains(got.Body, []byte(catalog.CigarID("Padrón", "1964 Anniversary Series Exclusivo"))) {
		t.Fatalf("recognize eight photos' fingerprint (%d bytes): %d %.300s", len(eight.Body), got.Status, got.Body)
	}
	tampered := bytes.Replace(r.Body, []byte(`"ground"`), []byte(`"accent"`), 1)
	if bytes.Equal(tampered, r.Body) {
		t.Fatal("the tamper changed nothing")
	}
	for name, c := range map[string]struct {
		body, code string
		status     int
	}{
		"modified":  {fmt.Sprintf(`{"fingerprint": %s}`, tampered), "invalid_fingerprint", 400},
		"truncated": {fmt.Sprintf(`{"fingerprint": %s}`, r.Body[:len(r.Body)/2]), "invalid_body", 400},
		"missing":   {`{"limit": 3}`, "invalid_fingerprint", 400},
		"limit":     {fmt.Sprintf(`{"fingerprint": %s, "limit": 21}`, r.Body), "invalid_limit", 400},
	} {
		if got := f.postJSON(t, path, f.key, "", c.body); got.Status != c.status || got.code() != c.code {
			t.Errorf("%s: %d %s, want %d %s", name, got.Status, got.Body, c.status, c.code)
		}
	}
	if got := f.postJSON(t, path, "", "", `{}`); got.Status != 401 {
		t.Errorf("recognize without a key: %d", got.Status)
	}
}

type identified struct {
	Status string
	Match  *struct {
		CigarID    int `json:"cigar_id"`
		ID, Brand  string
		Name       string
		Confidence float64
		Evidence   string
	}
	Suggestions        []map[string]any
	PendingSuggestions []map[string]any
	OpenWorld          *struct{ Text string }
	Metadata           struct {
		Source            string
		ImageCount        int    `json:"image_count"`
		CandidateCount    int    `json:"candidate_count"`
		ModelFallbackUsed bool   `json:"model_fallback_used"`
		DecisionReason    string `json:"decision_reason"`
	}
}

func (f *fixture) testIdentify(t *testing.T) {
	photos := bandPhotos(t)
	key, id := f.aiKey(t, 20)
	const path = "/v1/ai/cigars/identify"
	photo := fmt.Sprintf("%q", photos.URL+"/band.png?seed=4")
	for _, c := range []struct{ name, body, code string }{
		{"no image and no force", `{"prompt": "padron 1964"}`, "invalid_image_urls"},
		{"force without a prompt", `{"force": true}`, "invalid_prompt"},
		{"force not a boolean", `{"force": "yes", "prompt": "x"}`, "invalid_body"},
		{"long prompt", fmt.Sprintf(`{"imageUrl": %s, "prompt": %q}`, photo, strings.Repeat("a", 2001)), "invalid_prompt"},
		{"suggestion limit", fmt.Sprintf(`{"imageUrl": %s, "suggestionLimit": 11}`, photo), "invalid_suggestion_limit"},
		{"research mode", fmt.Sprintf(`{"imageUrl": %s, "researchMode": "web"}`, photo), "invalid_research_mode"},
		{"research profile", fmt.Sprintf(`{"imageUrl": %s, "researchProfile": "deep"}`, photo), "invalid_research_profile"},
	} {
		if r := f.postJSON(t, path, key, "bad-"+strings.ReplaceAll(c.name, " ", "-"), c.body); r.Status != 400 || r.code() != c.code {
			t.Errorf("%s: %d %s, want 400 %s", c.name, r.Status, r.Body, c.code)
		}
	}
	if b := f.balance(t, id); b != 20 {
		t.Fatalf("refused requests charged: balance %d", b)
	}

	// From the prompt alone (force): the catalog resolves it; cigar_id is the
	// catalog number and id the public ID.
	r := f.postJSON(t, "/v1/matches", key, "force-1", `{"force": true, "prompt": "padron 1964 anniversary exclusivo"}`)
	var got identified
	json.Unmarshal(r.Body, &got)
	if r.Status != 200 || got.Status != "matched" || got.Match == nil || got.Match.ID != catalog.CigarID("Padrón", "1964 Anniversary Series Exclusivo") ||
		got.Match.CigarID < 1 || got.Match.Evidence != "text" || got.Metadata.DecisionReason != "text_resolved" || got.Metadata.ImageCount != 0 ||
		got.Metadata.ModelFallbackUsed || r.Header.Get("X-Service-Ai-Credits-Remaining") != "18" {
		t.Fatalf("identify from the prompt: %d %s", r.Status, r.Body)
	}

	// From a photo, quick: image evidence; never more than one match, and
	// suggestions otherwise.
	r = f.postJSON(t, path, key, "photo-1", fmt.Sprintf(`{"imageUrl": %s, "suggestionLimit": 2}`, photo))
	got = identified{}
	json.Unmarshal(r.Body, &got)
	if r.Status != 200 || got.Metadata.ImageCount != 1 || got.Metadata.CandidateCount == 0 || got.Metadata.Source != "image" ||
		(got.Status != "matched" && got.Status != "suggestions") || len(got.Suggestions) > 2 || r.Header.Get("X-Service-Ai-Credits-Remaining") != "16" {
		t.Fatalf("identify from a photo: %d %s", r.Status, r.Body)
	}
	if got.Status == "matched" && got.Match.ID != catalog.CigarID("Padrón", "1964 Anniversary Series Exclusivo") {
		t.Fatalf("a photo of the 1964 band matched %+v", got.Match)
	}
	// Thorough without a configured model: charged the thorough price only.
	r = f.postJSON(t, path, key, "photo-2", fmt.Sprintf(`{"imageUrl": %s, "researchProfile": "thorough", "prompt": "padron"}`, photo))
	got = identified{}
	json.Unmarshal(r.Body, &got)
	if r.Status != 200 || got.Metadata.ModelFallbackUsed || got.Metadata.Source != "combined" || r.Header.Get("X-Service-Ai-Credits-Remaining") != "11" {
		t.Fatalf("thorough identify: %d %s %v", r.Status, r.Body, r.Header)
	}

	// /v1/matches is identify: the same key and body replay across the two.
	first := f.postJSON(t, "/v1/matches", key, "force-1", `{"force": true, "prompt": "padron 1964 anniversary exclusivo"}`)
	again := f.postJSON(t, path, key, "force-1", `{"force": true, "prompt": "padron 1964 anniversary exclusivo"}`)
	if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) || f.balance(t, id) != 11 {
		t.Fatalf("identify replaying /v1/matches: %d %s %v", again.Status, again.Body, again.Header)
	}

	// Without a vision model, thorough holds (and needs) its own price only.
	five, _ := f.aiKey(t, 5)
	if r := f.postJSON(t, path, five, "thorough-5", fmt.Sprintf(`{"imageUrl": %s, "researchProfile": "thorough"}`, photo)); r.Status != 200 || r.Header.Get("X-Service-Ai-Credits-Remaining") != "0" {
		t.Fatalf("thorough with 5 credits: %d %s", r.Status, r.Body)
	}

	// open_world reports what was read from a band the catalog does not know
	// (the band's text comes from OCR, which thorough runs).
	if !fingerprint.TesseractAvailable() {
		t.Log("tesseract not installed (make ocr): the open_world reading is not checked")
		return
	}
	r = f.postJSON(t, path, key, "open-world", fmt.Sprintf(`{"imageUrl": %q, "researchProfile": "thorough", "researchMode": "open_world"}`, mysteryBand(t)))
	var open struct {
		Status    string
		OpenWorld map[string]string `json:"openWorld"`
	}
	json.Unmarshal(r.Body, &open)
	if r.Status != 200 || open.Status != "open_world" || !strings.Contains(strings.ToUpper(open.OpenWorld["text"]), "MYSTERY") {
		t.Fatalf("open world: %d %s", r.Status, r.Body)
	}
}

// The vision model is a vendor outside the platform: a fake one stands in.
// It is asked only in the thorough profile when the rest is not conclusive, is
// charged for only when it answered, and is one witness among others.
func TestIdentifyAsksTheFakeVisionVendor(t *testing.T) {
	var calls atomic.Int32
	var auth atomic.Value
	fail := atomic.Bool{}
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		auth.Store(r.Header.Get("Authorization"))
		var in struct {
			ImageURLs []string `json:"imageUrls"`
			Prompt    string
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil || len(in.ImageURLs) != 1 || fail.Load() {
			http.Error(w, "bad", http.StatusInternalServerError)
			return
		}
		w.Write([]byte(`{"brand": "Arturo Fuente", "name": "Hemingway Short Story"}`))
	}))
	defer vendor.Close()
	f := openWith(t, sqldb.Config{DataDir: t.TempDir()}, func(o *platform.Options) {
		o.VisionModelURL, o.VisionModelKey = vendor.URL, "vendor-secret"
	})
	key, _ := f.aiKey(t, 30)

	body := fmt.Sprintf(`{"imageUrl": %q, "researchProfile": "%%s"}`, mysteryBand(t))

	r := f.postJSON(t, "/v1/ai/cigars/identify", key, "quick", fmt.Sprintf(body, "quick"))
	var got identified
	json.Unmarshal(r.Body, &got)
	if r.Status != 200 || got.Metadata.ModelFallbackUsed || calls.Load() != 0 || r.Header.Get("X-Service-Ai-Credits-Remaining") != "28" {
		t.Fatalf("quick must not ask the model: %d %s (%d calls)", r.Status, r.Body, calls.Load())
	}
	r = f.postJSON(t, "/v1/ai/cigars/identify", key, "thorough", fmt.Sprintf(body, "thorough"))
	got = identified{}
	json.Unmarshal(r.Body, &got)
	hemingway := catalog.CigarID("Arturo Fuente", "Hemingway Short Story")
	var named bool
	for _, s := range append(got.Suggestions, got.PendingSuggestions...) {
		named = named || (s["id"] == hemingway && s["evidence"] == "model")
	}
	if r.Status != 200 || !got.Metadata.ModelFallbackUsed || calls.Load() != 1 || auth.Load() != "Bearer vendor-secret" || got.Status == "matched" || !named ||
		r.Header.Get("X-Service-Ai-Credits-Remaining") != "18" {
		t.Fatalf("thorough asks the model (a witness, not a verdict): %d %s %v", r.Status, r.Body, r.Header)
	}
	if strings.Contains(string(r.Body), "vendor-secret") {
		t.Fatal("the vendor's key leaked into a response")
	}
	// A vendor that fails costs nothing and counts as not used.
	fail.Store(true)
	r = f.postJSON(t, "/v1/ai/cigars/identify", key, "thorough-2", fmt.Sprintf(body, "thorough"))
	got = identified{}
	json.Unmarshal(r.Body, &got)
	if r.Status != 200 || got.Metadata.ModelFallbackUsed || r.Header.Get("X-Service-Ai-Credits-Remaining") != "13" {
		t.Fatalf("failed vendor: %d %s %v", r.Status, r.Body, r.Header)
	}
}
