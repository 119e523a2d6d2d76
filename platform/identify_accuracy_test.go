package platform_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/vitolahq/vitola/internal/sqldb"
	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
)

// TestIdentifyAccuracy asks identify, through the platform's REST API, to
// name photos of demo bands in both profiles, and counts what the user sees:
// the right line matched, a wrong match, the right line first among the
// suggestions, further down, or missing. The recognition benchmark
// (fingerprint.TestAccuracy) scores images; this one scores identify's
// decision, which also weighs the OCR text resolved in the catalog.
//
// By default it runs on a sample (every 28th demo line, one photo a level)
// with floors that catch regressions: no wrong match, and the thorough
// profile (which adds OCR), with or without the brand typed as the prompt,
// matching about as often as the quick one.
// VITOLA_BENCH_IDENTIFY=1 runs every 7th line with two photos a level and
// reports the table.
func TestIdentifyAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	stride, photos := 28, 1
	if os.Getenv("VITOLA_BENCH_IDENTIFY") != "" {
		stride, photos = 7, 2
	}
	facts, err := catalogdemo.LoadFacts()
	if err != nil {
		t.Fatal(err)
	}
	f := open(t, sqldb.Config{DataDir: t.TempDir()})
	host := demoBandPhotos(t, facts)

	type outcome struct{ level, profile, result string }
	var lines []int
	for i := 3; i < len(facts.Lines); i += stride {
		lines = append(lines, i)
	}
	// What the user sends: a profile, and perhaps the brand typed as the
	// prompt (the app's "which brand is it?").
	variants := []struct {
		name, profile string
		brand         bool
	}{
		{"quick", "quick", false}, {"thorough", "thorough", false}, {"thorough+brand", "thorough", true},
	}
	key, _ := f.aiKey(t, int64(len(lines)*photos*2*(2+5+5)))
	var (
		mu     sync.Mutex
		counts = map[outcome]int{}
		wg     sync.WaitGroup
		work   = make(chan [4]string) // line, level, seed, variant
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				line, _ := strconv.Atoi(w[0])
				v, _ := strconv.Atoi(w[3])
				prompt := ""
				if variants[v].brand {
					prompt = facts.Lines[line].Brand
				}
				r := f.postJSON(t, "/v1/ai/cigars/identify", key, strings.Join(w[:], "-"),
					fmt.Sprintf(`{"imageUrl": %q, "researchProfile": %q, "prompt": %q}`, fmt.Sprintf("%s/%s/%s/%s.png", host.URL, w[0], w[1], w[2]), variants[v].profile, prompt))
				result := "error"
				if r.Status == 200 {
					var got identified
					json.Unmarshal(r.Body, &got)
					result = judge(facts, facts.Lines[line], got)
				} else {
					t.Errorf("identify %v: %d %s", w, r.Status, r.Body)
				}
				mu.Lock()
				counts[outcome{w[1], variants[v].name, result}]++
				mu.Unlock()
			}
		}()
	}
	for _, i := range lines {
		for _, lv := range []bandart.Level{bandart.Mild, bandart.Strong} {
			for s := range photos {
				for v := range variants {
					work <- [4]string{strconv.Itoa(i), lv.String(), strconv.Itoa(500 + s), strconv.Itoa(v)}
				}
			}
		}
	}
	close(work)
	wg.Wait()

	n := len(lines) * photos
	results := []string{"matched", "WRONG match", "suggested first", "suggested lower", "not suggested"}
	var report strings.Builder
	fmt.Fprintf(&report, "identify on %d photos a level (every %dth demo line; OCR %v):\n", n, stride, fingerprint.TesseractAvailable())
	fmt.Fprintf(&report, "%-7s %-15s", "level", "request")
	for _, r := range results {
		fmt.Fprintf(&report, " %16s", r)
	}
	for _, lv := range []bandart.Level{bandart.Mild, bandart.Strong} {
		for _, v := range variants {
			fmt.Fprintf(&report, "\n%-7v %-15s", lv, v.name)
			for _, r := range results {
				c := counts[outcome{lv.String(), v.name, r}]
				fmt.Fprintf(&report, " %16s", fmt.Sprintf("%d (%.0f%%)", c, 100*float64(c)/float64(n)))
			}
		}
	}
	t.Log(report.String())

	for o, c := range counts {
		if o.result == "WRONG match" && c > 0 {
			t.Errorf("%s, %s: %d wrong matches", o.level, o.profile, c)
		}
	}
	// OCR and the user's words must help or stay out of the way: a reading
	// the catalog cannot resolve once made thorough match half as often as
	// quick.
	for _, lv := range []bandart.Level{bandart.Mild, bandart.Strong} {
		quick := counts[outcome{lv.String(), "quick", "matched"}]
		for _, v := range variants[1:] {
			if m := counts[outcome{lv.String(), v.name, "matched"}]; m < quick-max(1, n/10) {
				t.Errorf("%v photos: %s matched %d, quick %d: text is outvoting the image", lv, v.name, m, quick)
			}
		}
	}
	if m := counts[outcome{"mild", "quick", "matched"}]; m < n*3/4 {
		t.Errorf("mild photos: quick matched %d of %d, want at least 3/4", m, n)
	}
}

// demoBandPhotos serves /LINE/LEVEL/SEED.png: a photo of the demo line's
// rendered band at that perturbation level.
func demoBandPhotos(t *testing.T, facts *catalogdemo.Facts) *httptest.Server {
	t.Helper()
	levels := map[string]bandart.Level{bandart.Mild.String(): bandart.Mild, bandart.Strong.String(): bandart.Strong}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var line int
		var level, seed string
		parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), ".png"), "/")
		if len(parts) == 3 {
			line, _ = strconv.Atoi(parts[0])
			level, seed = parts[1], parts[2]
		}
		lv, ok := levels[level]
		s, err := strconv.Atoi(seed)
		if !ok || err != nil || line < 0 || line >= len(facts.Lines) {
			http.NotFound(w, r)
			return
		}
		l := facts.Lines[line]
		var buf bytes.Buffer
		png.Encode(&buf, bandart.Photo(bandart.Render(bandart.DesignFor(l.Brand, l.Name), 800), lv, int64(s)))
		w.Header().Set("Content-Type", "image/png")
		w.Write(buf.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// judge says what identify's answer gives the user for a photo of line l.
// Any vitola of the line is right: a band tells lines apart, not vitolas.
func judge(facts *catalogdemo.Facts, l catalogdemo.Line, got identified) string {
	right := func(brand, name string) bool { return lineOf(facts, brand, name) == l.Brand+"/"+l.Name }
	if got.Status == "matched" && got.Match != nil {
		if right(got.Match.Brand, got.Match.Name) {
			return "matched"
		}
		return "WRONG match"
	}
	cands := append(append([]map[string]any{}, got.Suggestions...), got.PendingSuggestions...)
	sort.SliceStable(cands, func(i, j int) bool { return cands[i]["confidence"].(float64) > cands[j]["confidence"].(float64) })
	for i, c := range cands {
		if brand, _ := c["brand"].(string); right(brand, c["name"].(string)) {
			if i == 0 {
				return "suggested first"
			}
			return "suggested lower"
		}
	}
	return "not suggested"
}

// lineOf names the demo line a cigar belongs to: the brand's longest line
// name its name begins with.
func lineOf(facts *catalogdemo.Facts, brand, name string) string {
	best := ""
	for _, l := range facts.Lines {
		if l.Brand == brand && strings.HasPrefix(name, l.Name+" ") && len(l.Name) > len(best) {
			best = l.Name
		}
	}
	return brand + "/" + best
}
