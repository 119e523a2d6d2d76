package platform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	catalogimport "github.com/vitolahq/vitola/subgraphs/catalog/importer"
	catalogsql "github.com/vitolahq/vitola/subgraphs/catalog/sqlstore"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/bandgen"
	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	matchingsql "github.com/vitolahq/vitola/subgraphs/matching/sqlstore"
)

// TestIdentifyAccuracy asks identify, through the platform's REST API, to
// name photos of bands, one photo a request, and scores what the user gets:
// the right line first, among the first five, the right brand first, how
// often the answer is `matched`, and how many of those matches name a wrong
// line. It scores two renderers that share no code, so that tuning on one
// cannot pass for accuracy:
//
//   - bandart: the demo catalog's own bands (their evidence ships with the
//     demo);
//   - bandgen: brands of 2–4 lines that share one design and differ mostly
//     in the line's name, fed to the platform the way real data is: the
//     catalog imported (catalog importer), the flat designs added as
//     evidence as `vitola evidence add --flat` does.
//
// Both run at three levels (mild, medium, strong) in both research profiles
// (quick; thorough, which adds OCR). The recognition benchmark
// (fingerprint.TestAccuracy) scores images; this one scores identify's
// decision.
//
// By default it runs on a sample (every 28th demo line and every 8th
// generated line, one photo a level, both profiles) with floors, a little
// below what the code measured when they were set, that catch regressions.
// VITOLA_BENCH_IDENTIFY=1 runs the whole benchmark (every 7th demo line and
// every generated line but the first, two photos a level, VITOLA_BENCH_PHOTOS to change
// that), adds thorough with the brand typed as the prompt, logs every
// photo's outcome and reports the table:
//
//	VITOLA_BENCH_IDENTIFY=1 go test ./platform -run 'TestIdentifyAccuracy$' -v -timeout 90m
func TestIdentifyAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	full := os.Getenv("VITOLA_BENCH_IDENTIFY") != ""
	facts, err := catalogdemo.LoadFacts()
	if err != nil {
		t.Fatal(err)
	}
	f := open(t, sqldb.Config{DataDir: t.TempDir()})
	gen := bandgen.Catalog(24, 20)
	start := time.Now()
	importBands(t, f, gen)
	t.Logf("imported %d generated brands (%d lines) and their flat designs as evidence in %v", len(gen), len(bandgen.Lines(gen)), time.Since(start).Round(time.Millisecond))

	demo := demoBench(facts)
	generated := generatedBench(gen)
	// Lines are judged against every line the catalog knows.
	known := append(append([]benchLine{}, demo.lines...), generated.lines...)
	stride, photos := 28, 1
	genStride := 8
	if full {
		stride, photos, genStride = 7, 2, 1
		if n, err := strconv.Atoi(os.Getenv("VITOLA_BENCH_PHOTOS")); err == nil && n > 0 {
			photos = n
		}
	}
	demo.queried = everyNth(len(demo.lines), 3, stride)
	generated.queried = everyNth(len(generated.lines), genStride, genStride)
	variants := identifyVariants[:2]
	if full {
		variants = identifyVariants
	}
	host := benchPhotos(t, len(variants), demo, generated)
	waitRecognized(t, f, host.URL, generated)
	counts := scoreIdentify(t, f, host.URL, known, []*identifyBench{demo, generated}, variants, photos, full)

	// The floors hold on the sample they were measured on; the whole
	// benchmark reports.
	if full {
		return
	}
	for _, b := range []*identifyBench{demo, generated} {
		for _, lv := range b.levels {
			for _, v := range variants {
				s := counts[scoreKey{b.name, lv, v.name}]
				fl := b.floors[lv]
				if s.n == 0 {
					t.Errorf("%s %s %s: no photos scored", b.name, lv, v.name)
					continue
				}
				for _, c := range []struct {
					what  string
					got   int
					floor float64
				}{{"line top-1", s.top1, fl.top1}, {"line top-5", s.top5, fl.top5}, {"brand top-1", s.brand1, fl.brand1}} {
					if float64(c.got) < c.floor*float64(s.n) {
						t.Errorf("%s %s %s: %s %d of %d, floor %.0f%%", b.name, lv, v.name, c.what, c.got, s.n, 100*c.floor)
					}
				}
				if s.wrong > 0 {
					t.Errorf("%s %s %s: %d wrong matches in %d photos", b.name, lv, v.name, s.wrong, s.n)
				}
			}
			// OCR must help or stay out of the way: a reading the catalog
			// cannot resolve once made thorough match half as often as
			// quick.
			quick := counts[scoreKey{b.name, lv, "quick"}]
			for _, v := range variants[1:] {
				if m := counts[scoreKey{b.name, lv, v.name}].matched; m < quick.matched-max(1, quick.n/10) {
					t.Errorf("%s %s photos: %s matched %d, quick %d: text is outvoting the image", b.name, lv, v.name, m, quick.matched)
				}
			}
		}
	}
	if s := counts[scoreKey{"bandart", "mild", "quick"}]; s.matched < s.n*3/4 {
		t.Errorf("bandart mild photos: quick matched %d of %d, want at least 3/4", s.matched, s.n)
	}
}

// identifyVariants are what the user sends: a profile, and perhaps the brand
// typed as the prompt (the app's "which brand is it?"). The sample runs the
// first two, the two profiles.
type identifyVariant struct {
	name, profile string
	brand         bool
}

var identifyVariants = []identifyVariant{
	{"quick", "quick", false}, {"thorough", "thorough", false}, {"thorough+brand", "thorough", true},
}

type benchLine struct{ brand, line string }

// floor is what a level of a renderer must keep on the sample in both
// profiles: line top-1, line top-5 and brand top-1 at least (shares of the
// photos). No wrong match is allowed anywhere.
type floor struct{ top1, top5, brand1 float64 }

// identifyBench is one renderer's part of the benchmark.
type identifyBench struct {
	name    string
	lines   []benchLine
	queried []int    // the lines photographed
	levels  []string // mildest first
	// photo answers line i's photo at a level as a file and its media type.
	photo  func(i int, level string, seed int) ([]byte, string)
	floors map[string]floor
}

func everyNth(n, from, stride int) []int {
	var out []int
	for i := from; i < n; i += stride {
		out = append(out, i)
	}
	return out
}

// demoBench photographs the demo catalog's bands (bandart).
func demoBench(facts *catalogdemo.Facts) *identifyBench {
	b := &identifyBench{name: "bandart", levels: []string{"mild", "medium", "strong"}}
	for _, l := range facts.Lines {
		b.lines = append(b.lines, benchLine{l.Brand, l.Name})
	}
	levels := map[string]bandart.Level{"mild": bandart.Mild, "medium": bandart.Medium, "strong": bandart.Strong}
	render := func(i int) *image.RGBA {
		return bandart.Render(bandart.DesignFor(b.lines[i].brand, b.lines[i].line), 800)
	}
	b.photo = func(i int, level string, seed int) ([]byte, string) {
		return pngOf(bandart.Photo(render(i), levels[level], int64(seed))), "image/png"
	}
	// The sample (8 lines), measured with keypoints (issue 24): mild and
	// medium 8 of 8 in every column in both profiles; strong 7 of 8 first,
	// 8 of 8 among five and of the right brand (before keypoints: 6, 7
	// and 6 of 8 in the quick profile).
	b.floors = map[string]floor{
		"mild":   {top1: 0.85, top5: 0.85, brand1: 0.85},
		"medium": {top1: 0.85, top5: 0.85, brand1: 0.85},
		"strong": {top1: 0.75, top5: 0.85, brand1: 0.85},
	}
	return b
}

// generatedBench photographs bandgen's bands.
func generatedBench(brands []bandgen.Brand) *identifyBench {
	lines := bandgen.Lines(brands)
	b := &identifyBench{name: "bandgen", levels: []string{"mild", "medium", "strong"}}
	for _, l := range lines {
		b.lines = append(b.lines, benchLine{l.Brand, l.Name})
	}
	levels := map[string]bandgen.Level{"mild": bandgen.Mild, "medium": bandgen.Medium, "strong": bandgen.Strong}
	b.photo = func(i int, level string, seed int) ([]byte, string) {
		return lines[i].Photo(levels[level], uint64(seed)), "image/jpeg"
	}
	// The sample (7 lines), measured with keypoints (issue 24): mild and
	// medium 7 of 7 in every column in both profiles; strong 4 of 7 first,
	// 5 of 7 among five and of the right brand. (Before keypoints: mild and
	// medium, quick found 3 of 7 lines first; strong, 0 first and 3 of 7
	// among five.)
	b.floors = map[string]floor{
		"mild":   {top1: 0.85, top5: 0.85, brand1: 0.85},
		"medium": {top1: 0.85, top5: 0.85, brand1: 0.85},
		"strong": {top1: 0.4, top5: 0.55, brand1: 0.55},
	}
	return b
}

// importBands puts generated brands into the platform's stores the way an
// operator does: the catalog from JSON Lines through the catalog importer
// (`vitola import catalog`), then each line's flat design as evidence of its
// first vitola, described as `vitola evidence add --flat` describes it.
func importBands(t *testing.T, f *fixture, brands []bandgen.Brand) {
	t.Helper()
	ctx := context.Background()
	var jsonl strings.Builder
	leaf := `[{"region": "Estelí", "type": "Habano", "label": "Nicaraguan Habano"}]`
	for _, b := range brands {
		for _, l := range b.Lines {
			for _, v := range bandgen.Vitolas {
				fmt.Fprintf(&jsonl, `{"brand": %q, "name": %q, "origin": "Nicaragua", "wrapper": %s, "binder": %s, "filler": %s}`+"\n", b.Name, l.Name+" "+v, leaf, leaf, leaf)
			}
		}
	}
	recs, err := catalogimport.Parse(strings.NewReader(jsonl.String()))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalogsql.Open(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if _, err := catalogimport.Apply(ctx, cat, recs, nil); err != nil {
		t.Fatal(err)
	}
	var ocr fingerprint.OCR
	if fingerprint.TesseractAvailable() {
		ocr = fingerprint.Tesseract{}
	}
	lines := bandgen.Lines(brands)
	ev := make([]*matching.Evidence, len(lines))
	var wg sync.WaitGroup
	for i, l := range lines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := l.Name + " " + bandgen.Vitolas[0]
			fp, err := evidence.Describe(l.Flat(800), fingerprint.Label{Brand: l.Brand, Line: name}, true, ocr)
			if err != nil {
				t.Errorf("evidence of %s: %v", l, err)
				return
			}
			raw, _ := json.Marshal(fp)
			ev[i] = &matching.Evidence{ID: ids.New(ids.Evidence), CigarID: catalog.CigarID(l.Brand, name), Source: "bandgen.png", Fingerprint: raw, CreatedAt: time.Now().UTC()}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	st, err := matchingsql.Open(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.AddEvidence(ctx, ev); err != nil {
		t.Fatal(err)
	}
}

// benchPhotos serves /BENCH/LINE/LEVEL/SEED: a photo of the bench's line.
// A photo is rendered once and kept until it has been fetched fetches times
// (scoreIdentify sends a photo's variants one after another).
func benchPhotos(t *testing.T, fetches int, benches ...*identifyBench) *httptest.Server {
	t.Helper()
	by := map[string]*identifyBench{}
	for _, b := range benches {
		by[b.name] = b
	}
	type cached struct {
		once  sync.Once
		img   []byte
		media string
		left  int
	}
	var mu sync.Mutex
	cache := map[string]*cached{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if len(parts) != 4 || by[parts[0]] == nil {
			http.NotFound(w, r)
			return
		}
		b := by[parts[0]]
		line, err1 := strconv.Atoi(parts[1])
		seed, err2 := strconv.Atoi(parts[3])
		if err1 != nil || err2 != nil || line < 0 || line >= len(b.lines) || !slices.Contains(b.levels, parts[2]) {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		c := cache[r.URL.Path]
		if c == nil {
			c = &cached{left: fetches}
			cache[r.URL.Path] = c
		}
		if c.left--; c.left <= 0 {
			delete(cache, r.URL.Path)
		}
		mu.Unlock()
		c.once.Do(func() { c.img, c.media = b.photo(line, parts[2], seed) })
		w.Header().Set("Content-Type", c.media)
		w.Write(c.img)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func pngOf(img image.Image) []byte {
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

// waitRecognized waits until identify names any of the bench's brands for
// a photo of one of its lines: the platform follows its stores, and what
// another handle imported shows within a second or so.
func waitRecognized(t *testing.T, f *fixture, host string, b *identifyBench) {
	t.Helper()
	key, _ := f.aiKey(t, 200)
	brands := map[string]bool{}
	for _, l := range b.lines {
		brands[l.brand] = true
	}
	deadline := time.Now().Add(15 * time.Second)
	for n := 0; ; n++ {
		r := f.postJSON(t, "/v1/ai/cigars/identify", key, fmt.Sprintf("wait-%s-%d", b.name, n),
			fmt.Sprintf(`{"imageUrl": "%s/%s/%d/%s/1", "researchProfile": "quick", "suggestionLimit": 5}`, host, b.name, b.queried[0], b.levels[0]))
		var got identified
		json.Unmarshal(r.Body, &got)
		if got.Match != nil && brands[got.Match.Brand] {
			return
		}
		for _, s := range got.Suggestions {
			if brand, _ := s["brand"].(string); brands[brand] {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: identify names none of its brands: %d %s", b.name, r.Status, r.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type scoreKey struct{ bench, level, variant string }

// score counts a renderer's photos at one level in one variant: how many,
// the right line first, among the first five, the right brand first,
// answered matched, and matched to a wrong line.
type score struct{ n, top1, top5, brand1, matched, wrong int }

// scoreIdentify sends every queried line's photos, one a request, in every
// variant, scores the answers and logs the table.
func scoreIdentify(t *testing.T, f *fixture, host string, known []benchLine, benches []*identifyBench, variants []identifyVariant, photos int, logEach bool) map[scoreKey]score {
	t.Helper()
	type job struct {
		b          *identifyBench
		line, seed int
		level      string
		variant    int
	}
	var jobs []job
	for _, b := range benches {
		for _, i := range b.queried {
			for _, lv := range b.levels {
				for s := range photos {
					for v := range variants {
						jobs = append(jobs, job{b, i, 1000*i + 500 + s, lv, v})
					}
				}
			}
		}
	}
	key, _ := f.aiKey(t, int64(len(jobs)*(2+5+5)))
	var (
		mu     sync.Mutex
		counts = map[scoreKey]score{}
		wg     sync.WaitGroup
		work   = make(chan job)
	)
	start := time.Now()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				v := variants[j.variant]
				prompt := ""
				if v.brand {
					prompt = j.b.lines[j.line].brand
				}
				url := fmt.Sprintf("%s/%s/%d/%s/%d", host, j.b.name, j.line, j.level, j.seed)
				r := f.postJSON(t, "/v1/ai/cigars/identify", key, fmt.Sprintf("%s-%d-%s-%d-%d", j.b.name, j.line, j.level, j.seed, j.variant),
					fmt.Sprintf(`{"imageUrl": %q, "researchProfile": %q, "prompt": %q, "suggestionLimit": 5}`, url, v.profile, prompt))
				var a answer
				if r.Status == 200 {
					var got identified
					json.Unmarshal(r.Body, &got)
					a = judge(known, j.b.lines[j.line], got)
				} else {
					t.Errorf("identify %s: %d %s", url, r.Status, r.Body)
					a.rank = -1
				}
				k := scoreKey{j.b.name, j.level, v.name}
				if logEach {
					t.Logf("photo %s %d %s %d %s: matched %v, rank %d, brand first %v", j.b.name, j.line, j.level, j.seed, v.name, a.matched, a.rank, a.brandFirst)
				}
				mu.Lock()
				s := counts[k]
				s.n++
				s.top1 += b2i(a.rank == 0)
				s.top5 += b2i(a.rank >= 0 && a.rank < 5)
				s.brand1 += b2i(a.brandFirst)
				s.matched += b2i(a.matched)
				s.wrong += b2i(a.matched && a.rank != 0)
				counts[k] = s
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()

	var report strings.Builder
	fmt.Fprintf(&report, "identify, one photo a request (%d requests in %v; OCR %v):\n", len(jobs), time.Since(start).Round(time.Second), fingerprint.TesseractAvailable())
	fmt.Fprintf(&report, "| renderer | profile | level | photos | line top-1 | line top-5 | brand top-1 | answered `matched` | wrong among `matched` |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	pct := func(n, d int) string {
		if d == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(d))
	}
	for _, b := range benches {
		for _, v := range variants {
			for _, lv := range b.levels {
				s := counts[scoreKey{b.name, lv, v.name}]
				fmt.Fprintf(&report, "| %s | %s | %s | %d | %s | %s | %s | %s | %s (%d) |\n", b.name, v.name, lv, s.n,
					pct(s.top1, s.n), pct(s.top5, s.n), pct(s.brand1, s.n), pct(s.matched, s.n), pct(s.wrong, s.matched), s.wrong)
			}
		}
	}
	t.Log(report.String())
	return counts
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// answer is what identify's answer gives the user for a photo of one line:
// whether it said matched, where the right line stands among the lines it
// names (the match first, then the suggestions and the pending ones in the
// order given, which carries the brand-level finding; -1: absent), and
// whether the first of them is of the right brand.
type answer struct {
	matched    bool
	rank       int
	brandFirst bool
}

// judge scores an answer for a photo of line l. Any vitola of the line is
// right: a band tells lines apart, not vitolas. known are the catalog's
// lines, to tell a cigar's line from its vitola.
func judge(known []benchLine, l benchLine, got identified) answer {
	var names []benchLine
	if got.Status == "matched" && got.Match != nil {
		names = append(names, benchLine{got.Match.Brand, got.Match.Name})
	}
	for _, c := range append(append([]map[string]any{}, got.Suggestions...), got.PendingSuggestions...) {
		brand, _ := c["brand"].(string)
		name, _ := c["name"].(string)
		names = append(names, benchLine{brand, name})
	}
	a := answer{matched: got.Status == "matched" && got.Match != nil, rank: -1}
	var lines []benchLine // distinct lines, in order
	for _, n := range names {
		ln := lineOf(known, n.brand, n.line)
		if !slices.Contains(lines, ln) {
			lines = append(lines, ln)
		}
	}
	for i, ln := range lines {
		if ln == l && a.rank < 0 {
			a.rank = i
		}
	}
	a.brandFirst = len(lines) > 0 && lines[0].brand == l.brand
	return a
}

// lineOf names the line a catalog cigar belongs to: the brand's longest
// known line its name begins with.
func lineOf(known []benchLine, brand, name string) benchLine {
	best := ""
	for _, l := range known {
		if l.brand == brand && strings.HasPrefix(name, l.line+" ") && len(l.line) > len(best) {
			best = l.line
		}
	}
	return benchLine{brand, best}
}
