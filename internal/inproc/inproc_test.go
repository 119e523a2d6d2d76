package inproc_test

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/inproc"
)

func get(t *testing.T, tr http.RoundTripper, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRoundTrip(t *testing.T) {
	big := strings.Repeat("x", 40<<10) // larger than a pooled buffer's least size
	tests := []struct {
		name    string
		handler http.HandlerFunc
		status  int
		body    string
	}{
		{"nothing written is an empty 200", func(w http.ResponseWriter, r *http.Request) {}, 200, ""},
		{"status only", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) }, 404, ""},
		{"first status wins", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusTeapot)
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "short")
		}, 418, "short"},
		{"pieces with a stated length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(big)+2))
			io.WriteString(w, "{")
			io.WriteString(w, big)
			io.WriteString(w, "}")
		}, 200, "{" + big + "}"},
		{"pieces past a wrong stated length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "3")
			io.WriteString(w, "ab")
			io.WriteString(w, big)
		}, 200, "ab" + big},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &inproc.Transport{Handlers: map[string]http.Handler{"a.internal": tt.handler}}
			res := get(t, tr, "http://a.internal/x")
			if res.StatusCode != tt.status || res.ContentLength != int64(len(tt.body)) {
				t.Fatalf("status %d, length %d; want %d, %d", res.StatusCode, res.ContentLength, tt.status, len(tt.body))
			}
			if got := string(res.Body.(*inproc.Body).Bytes()); got != tt.body {
				t.Fatalf("Bytes = %.40q…, want %.40q…", got, tt.body)
			}
			got, err := io.ReadAll(res.Body)
			if err != nil || string(got) != tt.body {
				t.Fatalf("read %.40q…, %v; want %.40q…", got, err, tt.body)
			}
			res.Body.Close()
			res.Body.Close() // a second Close does nothing
		})
	}
}

func TestBodyReadsInPlaceUntilClosed(t *testing.T) {
	tr := &inproc.Transport{Handlers: map[string]http.Handler{"a.internal": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Query().Get("say"))
	})}}
	kept := get(t, tr, "http://a.internal/?say=hello+world")
	b := kept.Body.(*inproc.Body)
	p := make([]byte, 6)
	if n, _ := b.Read(p); string(p[:n]) != "hello " || string(b.Bytes()) != "world" {
		t.Fatalf("read %q, rest %q", p[:n], b.Bytes())
	}
	// Other calls, their bodies closed and their buffers reused, leave an
	// open body alone.
	for i := range 100 {
		res := get(t, tr, "http://a.internal/?say="+strings.Repeat("z", i))
		io.ReadAll(res.Body)
		res.Body.Close()
	}
	if string(b.Bytes()) != "world" {
		t.Fatalf("an open body changed: %q", b.Bytes())
	}
	var sb strings.Builder
	if n, err := io.Copy(&sb, kept.Body); n != 5 || err != nil || sb.String() != "world" {
		t.Fatalf("io.Copy = %d, %v, %q", n, err, sb.String())
	}
	kept.Body.Close()
	if n, err := b.Read(p); n != 0 || err != io.EOF || b.Bytes() != nil {
		t.Fatalf("after Close: read %d, %v; Bytes %q", n, err, b.Bytes())
	}
}

func TestUnknownHost(t *testing.T) {
	tr := &inproc.Transport{Handlers: map[string]http.Handler{}}
	req, _ := http.NewRequest(http.MethodGet, "http://elsewhere/", nil)
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("no error for a host without a handler")
	}
	fallback := errors.New("fallback")
	tr.Fallback = roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, fallback })
	if _, err := tr.RoundTrip(req); err != fallback {
		t.Fatalf("err = %v, want the fallback's", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestStreamedResponse: a request for text/event-stream gets its response as
// soon as the handler flushes, and reads each write as it is made; closing
// the body fails the handler's next write.
func TestStreamedResponse(t *testing.T) {
	next := make(chan string)
	failed := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusAccepted)
		w.(http.Flusher).Flush()
		for s := range next {
			if _, err := io.WriteString(w, s); err != nil {
				failed <- err
				return
			}
		}
	})
	tr := &inproc.Transport{Handlers: map[string]http.Handler{"sg.test": h}}
	req, _ := http.NewRequest(http.MethodPost, "http://sg.test/graphql", strings.NewReader("{}"))
	req.Header.Set("Accept", "text/event-stream")
	res, err := tr.RoundTrip(req) // returns while the handler still runs
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusAccepted || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v", res.StatusCode, res.Header)
	}
	for _, want := range []string{"event: next\n\n", "event: next again\n\n"} {
		next <- want
		got := make([]byte, len(want))
		if _, err := io.ReadFull(res.Body, got); err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	res.Body.Close()
	next <- "lost"
	if err := <-failed; !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("write after close: %v", err)
	}
	close(next)
}
