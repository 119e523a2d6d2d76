// Package compare is `make bench-compare`: it builds vitola from a commit and
// from the working tree and compares the two on the main benchmarks, driving
// each build only through what every version has, its command line and its
// HTTP API (never Go benchmark functions, which an older commit may lack), on
// loopback, the two sides taking turns round by round.
package compare

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// runner holds one comparison.
type runner struct {
	o     Options
	out   io.Writer // progress
	work  string
	sides []*side // old, new
	runID string
	seq   atomic.Int64

	catalogFile   string
	catalogCigars int
	batches       map[int]string // demo-lines copy → its batch file
	photoBody     []byte         // identify's request body
	payments      map[*side]payments
	pollClient    *http.Client
	warmUp        bool
	startLoad     string
	identical     bool // the two builds are the same binary

	results map[string][]*Metric // by benchmark, in its metrics' order
}

// Run runs the command: args are its flags (without the program's name);
// progress goes to progress, the table to stdout.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, progress io.Writer) error {
	o, err := ParseArgs(args, getenv)
	if err != nil {
		return err
	}
	rn := &runner{o: o, out: progress, batches: map[int]string{}, payments: map[*side]payments{},
		pollClient: newClient(2), results: map[string][]*Metric{}}
	return rn.run(ctx, stdout)
}

func (rn *runner) run(ctx context.Context, stdout io.Writer) (err error) {
	repo, err := repoRoot(ctx, ".")
	if err != nil {
		return err
	}
	commit, short, err := resolveRef(ctx, repo, rn.o.Ref)
	if err != nil {
		return err
	}
	if rn.work, err = rn.workDir(); err != nil {
		return err
	}
	if rn.o.Work == "" && !rn.o.Keep {
		defer os.RemoveAll(rn.work) // after the servers are stopped (deferred below)
	} else {
		defer fmt.Fprintf(rn.out, "builds, data and server logs kept in %s\n", rn.work)
	}
	id := make([]byte, 4)
	rand.Read(id)
	rn.runID = hex.EncodeToString(id)
	old := &side{name: "old", label: short, out: rn.out, cannot: map[string]string{}}
	cur := &side{name: "new", label: treeLabel(ctx, repo), out: rn.out, cannot: map[string]string{}}
	rn.sides = []*side{old, cur}
	for _, s := range rn.sides {
		s.dir = filepath.Join(rn.work, s.name)
		s.bin = filepath.Join(s.dir, "vitola")
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return err
		}
	}
	defer func() {
		for _, s := range rn.sides {
			s.small.stop()
			s.big.stop()
		}
	}()
	start := time.Now()
	fmt.Fprintf(rn.out, "bench-compare: old = %s (%s), new = the working tree (%s); %s of %s a side; work in %s\n",
		short, rn.o.Ref, cur.label, plural(rn.o.Rounds, "round"), rn.o.Phase, rn.work)

	if err := buildRef(ctx, rn.out, repo, commit, short, rn.work, old.bin); err != nil {
		return err
	}
	if err := goBuild(ctx, rn.out, "building vitola of the working tree", repo, cur.bin); err != nil {
		return err
	}
	hashes := map[string]bool{}
	for _, s := range rn.sides {
		h, err := fileHash(s.bin)
		if err != nil {
			return err
		}
		hashes[h] = true
		fmt.Fprintf(rn.out, "%s: %s, sha256 %s\n", s.name, s.bin, h[:12])
	}
	if rn.identical = len(hashes) == 1; rn.identical {
		fmt.Fprintln(rn.out, "the two binaries are the same, byte for byte: the ratios will show the machine's noise alone")
	}
	for _, s := range rn.sides {
		help, err := s.command(ctx, "serve", "-h").Output()
		if err != nil {
			return fmt.Errorf("%s: vitola serve -h: %w", s.name, err)
		}
		s.serveHelp = string(help)
	}
	if photo, err := os.ReadFile(filepath.Join(repo, bandPhoto)); err == nil {
		rn.photoBody = photoJSON(photo)
	}

	needBig, needSmall := rn.o.Selected("search") || rn.o.Selected("import"), rn.o.Selected("join") || rn.o.Selected("payments") || rn.o.Selected("identify")
	if needBig {
		if err := rn.writeCatalogs(); err != nil {
			return err
		}
	}
	benches := rn.selected()
	if needBig {
		if err := rn.fullImports(ctx); err != nil {
			return err
		}
	}
	for _, s := range rn.sides {
		if needBig {
			rn.startBig(ctx, s)
		}
		if needSmall {
			rn.startSmall(ctx, s)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, b := range benches {
			if s.cannot[b.name] != "" {
				continue
			}
			if err := b.prepare(ctx, s); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				rn.cannot(s, b.name, "setup: "+err.Error())
			}
		}
		fmt.Fprintf(rn.out, "%s: serve flags added: %s\n", s.name, orNone(strings.Join(s.serveFlags(), " ")))
	}

	for r := -1; r < rn.o.Rounds; r++ {
		rn.warmUp = r < 0
		for _, b := range benches {
			var sides []*side
			for _, s := range rn.order(r) {
				if s.cannot[b.name] == "" {
					sides = append(sides, s)
				}
			}
			vals, errs := map[*side][]float64{}, map[*side]error{}
			if b.load != nil {
				vals, errs = rn.loadRound(ctx, b, sides)
			} else {
				for _, s := range sides {
					vals[s], errs[s] = b.round(ctx, s, r)
				}
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			for _, s := range sides {
				if errs[s] != nil {
					rn.cannot(s, b.name, fmt.Sprintf("failed in %s: %v", roundName(r, rn.o.Rounds), errs[s]))
					continue
				}
				rn.progressLine(r, b, s, vals[s])
				if r >= 0 {
					rn.record(b.name, s, r, 0, vals[s])
				}
			}
		}
	}
	for _, s := range rn.sides {
		s.small.stop()
		s.big.stop()
	}

	fmt.Fprintf(stdout, "\nbench-compare: old = %s, new = %s; %s of %s a side; %d CPUs, load %s at the start and %s at the end; %s in all\n\n",
		old.label, cur.label, plural(rn.o.Rounds, "round"), rn.o.Phase, runtime.NumCPU(), rn.startLoad, loadAverage(), time.Since(start).Round(time.Second))
	if rn.identical {
		fmt.Fprintf(stdout, "The two binaries are the same, byte for byte (the code %s has, built alike): the ratios show the machine's noise alone.\n\n", short)
	}
	for _, b := range benches {
		fmt.Fprintf(stdout, "%-10s %s\n", b.name+":", b.about)
	}
	fmt.Fprintln(stdout, "server CPU: the serving process's own (/proc/PID/stat), apart from this program's load.")
	fmt.Fprintln(stdout)
	var rows []Row
	var reasons []string
	for _, b := range benches {
		note := ""
		for _, s := range rn.sides {
			if why := s.cannot[b.name]; why != "" {
				note = strings.TrimSpace(note + " " + s.name + ": " + clip(firstLine(why), 50))
				reasons = append(reasons, fmt.Sprintf("%s on %s (%s): %s", b.name, s.name, s.label, why))
			}
		}
		for _, m := range rn.results[b.name] {
			m.Note = note
			rows = append(rows, Summarize(*m))
		}
	}
	if err := WriteTable(stdout, old.label, cur.label, rows); err != nil {
		return err
	}
	if len(reasons) > 0 {
		fmt.Fprintln(stdout, "\nNot measured:")
		for _, r := range reasons {
			fmt.Fprintln(stdout, "- "+r)
		}
	}
	return nil
}

// workDir makes the directory of builds, data and logs: -work's (kept), or a
// temporary one removed at the end unless -keep.
func (rn *runner) workDir() (string, error) {
	rn.startLoad = loadAverage()
	if rn.o.Work != "" {
		abs, err := filepath.Abs(rn.o.Work)
		if err != nil {
			return "", err
		}
		return abs, os.MkdirAll(abs, 0o755)
	}
	return os.MkdirTemp("", "vitola-bench-compare-")
}

// selected are the benchmarks to run, with their metrics' slots.
func (rn *runner) selected() []*benchmark {
	var out []*benchmark
	for _, b := range rn.benchmarks() {
		if !rn.o.Selected(b.name) {
			continue
		}
		out = append(out, b)
		for i, spec := range b.metrics {
			n := rn.o.Rounds
			if b.name == "import" && i >= len(b.metrics)-fullImportMetrics {
				n = rn.o.FullImports
			}
			rn.results[b.name] = append(rn.results[b.name], &Metric{Bench: b.name, Name: spec.name, Unit: spec.unit, Better: spec.better, Old: nans(n), New: nans(n)})
		}
	}
	return out
}

func nans(n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = math.NaN()
	}
	return xs
}

// record stores a side's values of round r, from the benchmark's metric at
// first on.
func (rn *runner) record(bench string, s *side, r, first int, vals []float64) {
	for i, v := range vals {
		m := rn.results[bench][first+i]
		if s == rn.sides[0] {
			m.Old[r] = v
		} else {
			m.New[r] = v
		}
	}
}

// order is the sides in round r's order: old first in even rounds (and the
// warm-up), new first in odd ones, so neither always has the machine just
// after the other's load.
func (rn *runner) order(r int) []*side {
	if r >= 0 && r%2 == 1 {
		return []*side{rn.sides[1], rn.sides[0]}
	}
	return rn.sides
}

// sliceLength is about how long a side's turn lasts in a load benchmark's
// round: short enough that the two sides take turns often within a round,
// long enough that a turn holds many calls.
const sliceLength = time.Second

// slices cuts a round's phase of each side into turns of about sliceLength:
// how many, and how long each is. The warm-up runs half the phase.
func (rn *runner) slices() (int, time.Duration) {
	phase := rn.o.Phase
	if rn.warmUp {
		phase /= 2
	}
	n := max(1, int(math.Round(float64(phase)/float64(sliceLength))))
	return n, phase / time.Duration(n)
}

func (rn *runner) cannot(s *side, bench, why string) {
	s.cannot[bench] = why
	fmt.Fprintf(rn.out, "%s: %s will not be measured: %s\n", s.name, bench, why)
}

func roundName(r, rounds int) string {
	if r < 0 {
		return "the warm-up"
	}
	return fmt.Sprintf("round %d of %d", r+1, rounds)
}

func (rn *runner) progressLine(r int, b *benchmark, s *side, vals []float64) {
	var parts []string
	for i, v := range vals {
		parts = append(parts, fmt.Sprintf("%s %s %s", b.metrics[i].name, formatValue(v), b.metrics[i].unit))
	}
	fmt.Fprintf(rn.out, "%-14s %-8s %s: %s\n", roundName(r, rn.o.Rounds), b.name, s.name, strings.Join(parts, ", "))
}

// writeCatalogs writes the large catalog and the live imports' batches, once
// for both sides.
func (rn *runner) writeCatalogs() error {
	dir := filepath.Join(rn.work, "catalog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rn.catalogFile = filepath.Join(dir, "large.jsonl")
	fmt.Fprintf(rn.out, "writing the catalogs to import (%d copies of the demo lines, and a batch of %d new cigars a round)…\n", rn.o.Scale, batchSize)
	n, err := writeCatalog(rn.catalogFile, 0, rn.o.Scale, 0)
	if err != nil {
		return err
	}
	rn.catalogCigars = n
	if !rn.o.Selected("import") {
		return nil
	}
	for r := -1; r < rn.o.Rounds; r++ {
		k := rn.batchCopy(r)
		rn.batches[k] = filepath.Join(dir, fmt.Sprintf("batch-%d.jsonl", k))
		if _, err := writeCatalog(rn.batches[k], k, k+1, batchSize); err != nil {
			return err
		}
	}
	return nil
}

// fullImports imports the large catalog into each side's empty stores, the
// sides taking turns: the first import is the one served; the others (with
// -full-imports above 1) go into scratch directories, removed after.
func (rn *runner) fullImports(ctx context.Context) error {
	rounds := 1
	if rn.o.Selected("import") {
		rounds = rn.o.FullImports
	}
	for i := range rounds {
		for _, s := range rn.order(i) {
			if s.cannot["search"] != "" {
				continue
			}
			data := s.bigData()
			if i > 0 {
				data = filepath.Join(s.dir, fmt.Sprintf("scratch-%d", i))
			}
			wall, cpu, err := rn.fullImport(ctx, s, data, i)
			if i > 0 {
				os.RemoveAll(data)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				if i == 0 {
					rn.cannot(s, "search", "importing the large catalog: "+err.Error())
					rn.cannot(s, "import", "importing the large catalog: "+err.Error())
				}
				continue
			}
			if rn.o.Selected("import") {
				rn.record("import", s, i, len(rn.results["import"])-fullImportMetrics, []float64{wall.Seconds(), cpu.Seconds()})
			}
		}
	}
	return nil
}

// startBig serves the large catalog with a key of its own, and waits until
// search answers from it.
func (rn *runner) startBig(ctx context.Context, s *side) {
	if s.cannot["search"] != "" {
		return
	}
	fail := func(err error) {
		rn.cannot(s, "search", "serving the large catalog: "+err.Error())
		rn.cannot(s, "import", "serving the large catalog: "+err.Error())
	}
	key, err := s.cli(ctx, "keys", "create", "--data", s.bigData(), "--name", "bench-compare")
	if err != nil {
		fail(err)
		return
	}
	s.bigKey = key
	fmt.Fprintf(rn.out, "%s: starting vitola serve on the large catalog (it reads and indexes it first)…\n", s.name)
	t0 := time.Now()
	if s.big, err = s.startServer(ctx, "large", s.bigData()); err != nil {
		fail(err)
		return
	}
	if n, err := rn.countCopy(ctx, s, rn.o.Scale-1); err != nil || (rn.o.Scale > 1 && n == 0) {
		fail(fmt.Errorf("search finds %d cigars of %s: %v", n, copyWord(rn.o.Scale-1), err))
		return
	}
	fmt.Fprintf(rn.out, "%s: serving the large catalog after %s\n", s.name, time.Since(t0).Round(100*time.Millisecond))
}

// startSmall serves the demo (seeded on first start) with a key that may
// call the paid routes.
func (rn *runner) startSmall(ctx context.Context, s *side) {
	fail := func(err error) {
		for _, b := range []string{"join", "payments", "identify"} {
			if rn.o.Selected(b) {
				rn.cannot(s, b, "serving the demo: "+err.Error())
			}
		}
	}
	fmt.Fprintf(rn.out, "%s: starting vitola serve --demo…\n", s.name)
	var err error
	if s.small, err = s.startServer(ctx, "demo", s.smallData(), "--demo"); err != nil {
		fail(err)
		return
	}
	s.smallKey, err = s.cli(ctx, "keys", "create", "--data", s.smallData(), "--name", "bench-compare", "--entitlement", "api.ai")
	if err != nil {
		// A build without entitlements can still serve the rest.
		s.smallKeyNote = "a key with api.ai: " + err.Error()
		if s.smallKey, err = s.cli(ctx, "keys", "create", "--data", s.smallData(), "--name", "bench-compare"); err != nil {
			fail(err)
		}
	}
}

func (s *side) smallData() string { return filepath.Join(s.dir, "demo-data") }
func (s *side) bigData() string   { return filepath.Join(s.dir, "large-data") }

// loadAverage is the machine's 1-, 5- and 15-minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
