package imagefetch_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

// holdBudget has one request hold the decode budget with img (a data URL)
// until the test ends, as a request whose photo is being fingerprinted does.
func holdBudget(t *testing.T, f *imagefetch.Fetcher, img string) {
	t.Helper()
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- f.FetchEach(context.Background(), []string{img}, func(int, *imagefetch.Image) error {
			close(held)
			<-release
			return nil
		})
	}()
	t.Cleanup(func() {
		close(release)
		if err := <-done; err != nil {
			t.Errorf("the request holding the budget: %v", err)
		}
	})
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("the request holding the budget ended: %v", err)
	}
}

// A request that finds the decode budget full waits CapacityWait, then is
// refused with over_capacity and when to retry: the server is busy, the
// image is not to blame (no index, no fault named). The caller going away
// while it waits is still image_fetch_canceled.
func TestOverCapacity(t *testing.T) {
	img := dataURL("image/png", pngBytes(t, 100, 100))
	s, _ := serve(t, body("image/png", pngBytes(t, 100, 100)))
	const wait = 50 * time.Millisecond
	for _, tt := range []struct {
		name  string
		fetch func(ctx context.Context, f *imagefetch.Fetcher) error
	}{
		{"Fetch, inline", func(ctx context.Context, f *imagefetch.Fetcher) error { _, err := f.Fetch(ctx, img); return err }},
		{"FetchEach, fetched and inline", func(ctx context.Context, f *imagefetch.Fetcher) error {
			return f.FetchEach(ctx, []string{s.URL + "/band.png", img}, func(int, *imagefetch.Image) error { return nil })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := loopback()
			cfg.DecodeBudget, cfg.CapacityWait = 60_000, wait // room for one 100x100 PNG
			f := imagefetch.New(cfg)
			holdBudget(t, f, img)
			// Without a bound of its own the wait would last as long as ctx.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			start := time.Now()
			err := tt.fetch(ctx, f)
			took := time.Since(start)
			e := wantError(t, err, imagefetch.CodeOverCapacity, "busy", "retry in 1 s")
			if e.RetryAfter != time.Second {
				t.Errorf("RetryAfter = %v, want 1s (the wait, rounded up to whole seconds)", e.RetryAfter)
			}
			for _, s := range []string{"imageUrls[", "invalid", "not a valid", "too large"} {
				if strings.Contains(e.Message, s) {
					t.Errorf("message %q blames the image (%q)", e.Message, s)
				}
			}
			if took < wait || took > 100*wait {
				t.Errorf("refused after %v, want after the capacity wait of %v", took, wait)
			}
		})
	}

	t.Run("the caller goes away", func(t *testing.T) {
		cfg := loopback()
		cfg.DecodeBudget, cfg.CapacityWait = 60_000, time.Minute
		f := imagefetch.New(cfg)
		holdBudget(t, f, img)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(wait, cancel)
		_, err := f.Fetch(ctx, img)
		if e := wantError(t, err, imagefetch.CodeFetchCanceled); !errors.Is(e, context.Canceled) {
			t.Error("a canceled wait does not wrap context.Canceled")
		}
	})
}

// A request whose images do not fit the budget together is not refused
// while one of them holds a share, however long its work takes: the
// others wait for it. Only a request holding nothing is over capacity.
func TestCapacityWaitsForTheRequestsOwnImages(t *testing.T) {
	cfg := loopback()
	cfg.DecodeBudget, cfg.CapacityWait = 60_000, 20*time.Millisecond // room for one 100x100 PNG
	img := dataURL("image/png", pngBytes(t, 100, 100))
	var done atomic.Int32
	err := imagefetch.New(cfg).FetchEach(t.Context(), []string{img, img, img}, func(int, *imagefetch.Image) error {
		time.Sleep(5 * cfg.CapacityWait) // the work on the image, longer than the wait
		done.Add(1)
		return nil
	})
	if err != nil || done.Load() != 3 {
		t.Fatalf("%d of 3 images, %v", done.Load(), err)
	}
}
