package matcher_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
	"github.com/vitolahq/vitola/subgraphs/matching/matcher"
)

// MemoryBound is the documented bound (README, Image matching) on what four
// concurrent fingerprint requests of eight worst-case photos each add to the
// server's resident memory: the default decode budget (320 MiB) and room for
// the bodies, the Go runtime's slack and the HTTP machinery.
const MemoryBound = 512 << 20

// BenchmarkPeakMemory measures the peak resident memory (VmHWM) that FOUR
// CONCURRENT fingerprint requests of EIGHT photos each add above idle, in a
// fresh process per case (so that one case's heap cannot hide another's),
// with the fetcher configured as the server configures it (default decode
// budget, fingerprint.WorkBytes). The baseline is one request of one small
// photo, in the same run. Photos: 40 MP (7296x5472) 16-bit RGBA PNG, the
// same picture as a progressive JPEG, a lossy WebP and a lossless WebP.
//
//	go test -run '^$' -bench PeakMemory -benchtime 1x ./subgraphs/matching/matcher/
func BenchmarkPeakMemory(b *testing.B) {
	dir := b.TempDir()
	small := filepath.Join(dir, "small.png")
	writeFile(b, small, encodePNG(b, bandart.StudioPhoto("Padrón", "1964 Anniversary")))
	png16 := filepath.Join(dir, "band16.png")
	writeFile(b, png16, bigPNG16(b))
	cases := []struct {
		name, file string
		requests   int
		photos     int
	}{
		{"baseline_1_request_1_small_photo", small, 1, 1},
		{"4x8_40MP_16bit_RGBA_PNG", png16, 4, 8},
		{"4x8_40MP_progressive_JPEG", "testdata/band-progressive.jpg", 4, 8},
		{"4x8_40MP_lossy_WebP", "testdata/band-lossy.webp", 4, 8},
		{"4x8_40MP_lossless_WebP", "testdata/band-lossless.webp", 4, 8},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var got childReport
			for range b.N {
				got = runChild(b, c.file, c.requests, c.photos)
			}
			above := got.PeakKB - got.IdleKB
			b.ReportMetric(float64(above)/1024, "MB-above-idle")
			b.ReportMetric(float64(got.IdleKB)/1024, "MB-idle")
			b.ReportMetric(float64(got.Millis), "ms")
			if got.Err != "" {
				b.Fatalf("requests failed: %s", got.Err)
			}
			if above<<10 > MemoryBound {
				b.Errorf("peak %d MB above idle: over the bound of %d MB", above>>10, MemoryBound>>20)
			}
		})
	}
}

type childReport struct {
	IdleKB, PeakKB, Millis int64
	Err                    string
}

// runChild runs TestPeakMemoryChild in a new process of this test binary.
func runChild(b *testing.B, file string, requests, photos int) childReport {
	abs, err := filepath.Abs(file)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeakMemoryChild$", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("VITOLA_MEMORY_CHILD=%s,%d,%d", abs, requests, photos))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "REPORT "); ok {
			var r childReport
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				b.Fatal(err)
			}
			return r
		}
	}
	b.Fatalf("child printed no report:\n%s", out)
	return childReport{}
}

// TestPeakMemoryChild is BenchmarkPeakMemory's child process (skipped
// otherwise): it serves the photo on loopback, settles, resets its peak,
// runs the requests concurrently and reports idle and peak resident memory.
func TestPeakMemoryChild(t *testing.T) {
	spec := os.Getenv("VITOLA_MEMORY_CHILD")
	if spec == "" {
		t.Skip("run by BenchmarkPeakMemory")
	}
	parts := strings.Split(spec, ",")
	requests, _ := strconv.Atoi(parts[1])
	photos, _ := strconv.Atoi(parts[2])
	data, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	base := serveImages(t, map[string][]byte{"photo": data})
	m := &matcher.Matcher{
		Fetch: imagefetch.New(imagefetch.Config{
			AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
			Work:       fingerprint.WorkBytes,
			// The bound is for every request served: none is sent away
			// over capacity while others' photos fill the budget.
			CapacityWait: time.Hour,
		}),
		Sealer: matching.NewSealer([]byte("0123456789abcdef0123456789abcdef")),
	}
	urls := make([]string, photos)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/photo?i=%d", base, i)
	}
	runtime.GC()
	debug.FreeOSMemory()
	idle := procStatus(t, "VmRSS")
	// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	start := nowMillis()
	var wg sync.WaitGroup
	errs := make([]error, requests)
	for r := range requests {
		wg.Go(func() { _, errs[r] = m.Fingerprint(t.Context(), urls) })
	}
	wg.Wait()
	rep := childReport{IdleKB: idle, PeakKB: procStatus(t, "VmHWM"), Millis: nowMillis() - start}
	for _, err := range errs {
		if err != nil {
			rep.Err = err.Error()
		}
	}
	line, _ := json.Marshal(rep)
	fmt.Printf("REPORT %s\n", line)
}

// procStatus reads a kB figure from /proc/self/status.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status: peak memory is measured on Linux")
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// bigPNG16 is the worst case of the issue: a 40 MP PNG of 16-bit RGBA (with
// some transparency, so it is stored as RGBA), which compresses to a few
// hundred KB and decodes whole to 320 MB.
func bigPNG16(b *testing.B) []byte {
	const w, h = 7296, 5472
	img := image.NewNRGBA64(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA64{uint16(40+x/200) << 8, uint16(30+y/200) << 8, 20 << 8, 0xffff}
			if y > h/3 && y < 2*h/3 {
				c = color.NRGBA64{200 << 8, 170 << 8, 90 << 8, 0xffff}
				if (x/180)%2 == 0 && (y-h/3)/150%3 == 1 && x > w/5 && x < 4*w/5 {
					c = color.NRGBA64{120 << 8, 20 << 8, 30 << 8, 0xffff}
				}
			}
			if x == 0 && y == 0 {
				c.A = 0xfffe
			}
			img.SetNRGBA64(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func writeFile(b *testing.B, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
}

func nowMillis() int64 { return time.Now().UnixMilli() }
