// Package imagefetch fetches user-supplied image URLs (photos of cigar bands)
// without turning the server into an SSRF vector: only http and https, no
// proxy, every address checked after DNS resolution at connect time, bounded
// redirects, bytes, pixels and time, and content sniffed from the bytes.
// An image may also come inline, as a base64 data URL (RFC 2397): it is never
// a network request, and is decoded with the same sniffing, limits and budget.
package imagefetch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/codes"
	"golang.org/x/image/webp"
	"golang.org/x/sync/semaphore"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/telemetry"
)

// Limits and defaults. They are part of the API contract: document them where
// imageUrl and imageUrls are described.
const (
	DefaultMaxBytes = 10 << 20 // 10 MiB per image
	// DefaultMaxInlineBytes caps an image given inline as a data URL, in
	// decoded bytes. It is far smaller than a fetched image's cap because its
	// base64 text (4/3 of it) rides in the request body, copied by the shim
	// and each internal call, and eight of them must fit one body (the
	// shim's paid body limit, 12 MiB); a band photo the fingerprint can use
	// (it reads 1,600 pixels a side at most) is a few hundred KB as a JPEG.
	DefaultMaxInlineBytes = 1 << 20 // 1 MiB per inline image
	DefaultMaxPixels      = 40_000_000
	// DefaultDecodeBudget: bytes decoding and the work on decoded images hold
	// at once, per Fetcher (see Config.DecodeBudget).
	DefaultDecodeBudget = 320 << 20
	// DefaultDecodeSide: images whose longer side is twice it or more are
	// handed out reduced by a whole factor, to 1 to 2 times it (the
	// fingerprint reads 1,600 pixels a side at most).
	DefaultDecodeSide   = 1600
	DefaultMaxRedirects = 3
	DefaultTimeout      = 15 * time.Second
	// DefaultStageTimeout bounds each of connecting, the TLS handshake and
	// waiting for response headers, within Timeout: a server that does not
	// answer is given up on before the whole fetch's time is spent.
	DefaultStageTimeout = 10 * time.Second
	MaxSide             = 16384 // pixels, either side
	MaxURLLength        = 2048  // bytes, of an http or https URL
	MaxURLs             = 8     // per FetchEach
)

// Error codes. Every refusal is an *Error with one of these stable codes.
const (
	CodeInvalidURL       = "invalid_image_url"      // not an absolute http(s) URL nor a base64 data URL, userinfo, too long
	CodeInvalidURLs      = "invalid_image_urls"     // FetchEach given 0 or more than MaxURLs URLs
	CodeAddressBlocked   = "image_address_blocked"  // resolves to a non-public address
	CodeTooManyRedirects = "too_many_redirects"     // more than MaxRedirects redirects
	CodeRedirectRefused  = "image_redirect_refused" // a redirect to a URL that is not fetched (scheme, userinfo)
	CodeFetchTimeout     = "image_fetch_timeout"    // the fetch took longer than Timeout
	CodeFetchFailed      = "image_fetch_failed"     // connection error or non-2xx status
	CodeFetchCanceled    = "image_fetch_canceled"   // the caller's context was canceled
	CodeTooLarge         = "image_too_large"        // more than MaxBytes (MaxInlineBytes inline)
	CodeUnsupportedType  = "unsupported_image_type" // not JPEG, PNG or WebP (a data URL: not of their media types)
	CodeTooManyPixels    = "image_too_many_pixels"  // more than MaxPixels or a side over MaxSide
	CodeInvalidImage     = "invalid_image"          // empty, truncated or corrupt image data
	// CodeOverCapacity (capacity.go) is not about the image: the server was busy.
)

// Error is a refusal with a stable Code and a Message meant for the API user:
// it names the reason and, where it helps, the fix. Messages never contain URL
// userinfo, query strings or paths (signed URLs carry secrets there), only hosts.
type Error struct {
	Code    string
	Message string
	// RetryAfter is when the request may be sent again (over_capacity only).
	RetryAfter time.Duration
	err        error // the underlying cause, if any, for errors.Is and errors.As
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause (context.Canceled for a canceled fetch, for example).
func (e *Error) Unwrap() error { return e.err }

func newError(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Config bounds a Fetcher. Zero fields take the defaults above.
type Config struct {
	// AllowCIDRs lists ranges that are fetched even though they are not public:
	// for private deployments (an image store on 10.0.0.0/8) and tests
	// (127.0.0.1/32). Empty by default; see ParseCIDRs.
	AllowCIDRs []netip.Prefix
	// MaxBytes caps the body, compressed image bytes as sent.
	MaxBytes int64
	// MaxInlineBytes caps an image given as a data URL, in decoded bytes.
	MaxInlineBytes int64
	// MaxPixels caps width*height, read from the image header before decoding:
	// a 50 KB PNG can claim 10 gigapixels and exhaust memory when decoded.
	MaxPixels int
	// DecodeSide is the least longer side, in pixels, the images handed out
	// need: an image whose longer side is twice it or more is reduced by the
	// whole factor that keeps at least DecodeSide (each pixel the mean of a
	// block), a PNG while it is read (row by row: the whole frame is never
	// held), a JPEG or WebP right after its decoder returns (Image.Width and
	// Height stay the original size).
	DecodeSide int
	// DecodeBudget caps the bytes one Fetcher's decoding holds at once: each
	// image counts what its decoder actually holds (its bit depth and colour
	// model, a progressive JPEG's coefficients, every copy made while
	// converting, the body), then, while FetchEach's fn runs, the image handed
	// out and Work. Images wait for their share; an image whose share is over
	// the whole budget is refused (image_too_many_pixels), so the bytes held
	// never exceed it.
	DecodeBudget int64
	// Work is the bytes FetchEach's fn holds while it works on an image of
	// w x h pixels (as handed out), counted in the budget; nil: none.
	Work func(w, h int) int64
	// CapacityWait bounds how long a request (a Fetch, a FetchEach) waits
	// for the decode budget while none of its images holds a share of it;
	// then it is refused with over_capacity, to be retried after
	// Error.RetryAfter. While one of its images holds a share, the others
	// wait for it. Zero: DefaultCapacityWait.
	CapacityWait time.Duration
	// MaxRedirects caps redirects followed; negative means none.
	MaxRedirects int
	// Timeout bounds the whole fetch: connect, TLS, headers and body.
	Timeout time.Duration
	// StageTimeout bounds each of connecting, the TLS handshake and the wait
	// for response headers (at most Timeout; zero: DefaultStageTimeout).
	StageTimeout time.Duration
	// Resolver resolves host names (nil: the system's). For tests and custom
	// DNS; whatever it answers, the connect-time address check still applies.
	Resolver *net.Resolver
}

// Fetcher fetches images. It is safe for concurrent use; make one and share it
// (it keeps its own connection pool).
type Fetcher struct {
	cfg    Config
	budget *semaphore.Weighted
	allow  []netip.Prefix
	client *http.Client
	dialer *net.Dialer
	stage  time.Duration // the connect, TLS and response-header timeout
}

// Image is a fetched and decoded image.
type Image struct {
	// Image is the decoded image; when the original's longer side is twice
	// Config.DecodeSide or more, it is reduced (see Config.DecodeSide).
	Image         image.Image
	Format        string // "jpeg", "png" or "webp", from the bytes, not Content-Type
	Bytes         int    // size of the fetched body
	Width, Height int    // the original size, from the header
	URL           string // the URL as requested (before redirects), or the data URL
}

// New returns a Fetcher with its own transport: never http.DefaultTransport,
// whose proxy setting comes from the environment and whose dialer checks nothing.
func New(cfg Config) *Fetcher {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxInlineBytes <= 0 {
		cfg.MaxInlineBytes = DefaultMaxInlineBytes
	}
	if cfg.MaxPixels <= 0 {
		cfg.MaxPixels = DefaultMaxPixels
	}
	if cfg.MaxRedirects == 0 {
		cfg.MaxRedirects = DefaultMaxRedirects
	} else if cfg.MaxRedirects < 0 {
		cfg.MaxRedirects = 0
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.DecodeBudget <= 0 {
		cfg.DecodeBudget = DefaultDecodeBudget
	}
	if cfg.DecodeSide <= 0 {
		cfg.DecodeSide = DefaultDecodeSide
	}
	if cfg.CapacityWait <= 0 {
		cfg.CapacityWait = DefaultCapacityWait
	}
	f := &Fetcher{cfg: cfg, budget: semaphore.NewWeighted(cfg.DecodeBudget)}
	for _, p := range cfg.AllowCIDRs {
		f.allow = append(f.allow, normalizePrefix(p))
	}
	stage := cfg.StageTimeout
	if stage <= 0 || stage > cfg.Timeout {
		stage = min(cfg.Timeout, DefaultStageTimeout)
	}
	f.stage = stage
	f.dialer = &net.Dialer{
		Timeout:  stage,
		Resolver: cfg.Resolver,
		// Control runs after DNS resolution, on the socket about to connect to
		// the address actually used: a check here cannot be raced by DNS
		// rebinding the way a lookup-then-connect check can.
		Control: f.control,
	}
	transport := &http.Transport{
		Proxy:                  nil, // never from the environment: a proxy would connect for us, unchecked
		DialContext:            f.dial,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    stage,
		ResponseHeaderTimeout:  stage,
		MaxResponseHeaderBytes: 64 << 10,
		DisableCompression:     true, // images are compressed already; MaxBytes counts wire bytes
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
	}
	f.client = &http.Client{
		Transport:     transport,
		CheckRedirect: f.checkRedirect,
	}
	return f
}

// Fetch fetches, checks and decodes one image.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Image, error) {
	r, perr := f.parseRef(rawURL)
	if perr != nil {
		return nil, perr
	}
	a, done := f.admit(ctx)
	defer done()
	img, release, err := f.load(ctx, a, r)
	if err != nil {
		return nil, err
	}
	release() // the caller holds the image outside the budget
	return img, nil
}

// Check validates 1 to MaxURLs image references without fetching or
// decoding anything: each is an absolute http or https URL, or a base64 data
// URL of a JPEG, PNG or WebP image within MaxInlineBytes. A refusal is an
// *Error whose Message begins with the reference's index ("imageUrls[2]:
// ..."). FetchEach checks the same first; a caller checks ahead to refuse a
// request before it holds anything for it.
func (f *Fetcher) Check(refs []string) error {
	_, err := f.parseRefs(refs)
	return err
}

func (f *Fetcher) parseRefs(refs []string) ([]ref, error) {
	switch {
	case len(refs) == 0:
		return nil, newError(CodeInvalidURLs, "imageUrl or imageUrls (1 to %d images, each an http or https URL or a data URL) is required", MaxURLs)
	case len(refs) > MaxURLs:
		return nil, newError(CodeInvalidURLs, "imageUrls holds %d images: at most %d per request", len(refs), MaxURLs)
	}
	parsed := make([]ref, len(refs))
	for i, raw := range refs {
		r, err := f.parseRef(raw)
		if err != nil {
			return nil, indexed(i, err)
		}
		parsed[i] = r
	}
	return parsed, nil
}

// FetchEach fetches 1 to MaxURLs images concurrently and calls fn with each
// (i is its index in urls) while the image holds its share of the decode
// budget; the image must not be kept after fn returns. Every URL is
// validated before anything is fetched (Check). The first failure (a
// fetch's or fn's) cancels the other fetches and is returned, an *Error's
// Message prefixed with the URL's index ("imageUrls[2]: ...").
func (f *Fetcher) FetchEach(ctx context.Context, urls []string, fn func(i int, img *Image) error) error {
	parsed, err := f.parseRefs(urls)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a, done := f.admit(ctx)
	defer done()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for i := range urls { // one goroutine per URL: at most MaxURLs at once
		wg.Go(func() {
			err := f.each(ctx, a, parsed[i], func(img *Image) error { return fn(i, img) })
			if err != nil {
				once.Do(func() {
					firstErr = indexed(i, err)
					cancel()
				})
			}
		})
	}
	wg.Wait()
	return firstErr
}

func (f *Fetcher) each(ctx context.Context, a *admission, r ref, fn func(*Image) error) error {
	img, release, err := f.load(ctx, a, r)
	if err != nil {
		return err
	}
	defer release()
	return fn(img)
}

// load fetches (or, for a data URL, decodes) and decodes one image, in a
// span of its own, counting its outcome (ok or the refusal's code). a is
// the request's admission to the decode budget.
func (f *Fetcher) load(ctx context.Context, a *admission, r ref) (img *Image, release func(), err error) {
	ctx, span := telemetry.Start(ctx, "image fetch")
	defer func() {
		outcome := "ok"
		if err != nil {
			outcome = "error"
			var e *Error
			if errors.As(err, &e) {
				outcome = e.Code
			}
			span.SetStatus(codes.Error, outcome)
		}
		telemetry.FromContext(ctx).ImageFetch(outcome)
		span.End()
	}()
	if r.url != nil {
		return f.fetch(ctx, a, r.url, r.raw)
	}
	data, err := base64.RawStdEncoding.DecodeString(r.data)
	if err != nil { // parseRef checked the alphabet and length: this is a bad final quantum
		return nil, nil, newError(CodeInvalidURL, "data URL is not valid base64: %s", base64Hint)
	}
	if int64(len(data)) > f.cfg.MaxInlineBytes {
		return nil, nil, f.inlineTooLarge(int64(len(data)))
	}
	img, release, ierr := f.decode(ctx, a, data, "data URL holds")
	if ierr != nil {
		return nil, nil, ierr
	}
	img.URL = r.raw
	return img, release, nil
}

func indexed(i int, err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Code == CodeOverCapacity { // the server's state: no image is to blame
		return err
	}
	return &Error{Code: e.Code, Message: fmt.Sprintf("imageUrls[%d]: %s", i, e.Message), err: e.err}
}

// ref is one image reference: a URL to fetch, or a data URL's base64 text.
type ref struct {
	raw  string
	url  *url.URL // an http or https URL
	data string   // a data URL's payload, base64 without padding
}

// parseRef reads a reference: a data URL (RFC 2397) or an http or https URL.
func (f *Fetcher) parseRef(raw string) (ref, *Error) {
	raw = strings.TrimSpace(raw)
	if len(raw) >= 5 && strings.EqualFold(raw[:5], "data:") {
		data, err := f.parseDataURL(raw[5:])
		return ref{raw: raw, data: data}, err
	}
	u, err := parseURL(raw)
	return ref{raw: raw, url: u}, err
}

// inlineTypes are the media types a data URL may declare (image/jpg is a
// common misspelling of image/jpeg). The bytes decide the format, as they do
// for a fetched image whatever its Content-Type.
var inlineTypes = map[string]bool{"image/jpeg": true, "image/jpg": true, "image/png": true, "image/webp": true}

const base64Hint = "give data:image/jpeg;base64, (or image/png, image/webp) followed by the image's bytes in standard base64 (A-Z, a-z, 0-9, + and /, padded with =)"

// parseDataURL checks a data URL after its scheme without decoding it: a
// media type of an accepted image format, base64, a payload of the base64
// alphabet whose decoded size is within MaxInlineBytes. It returns the
// payload without padding.
func (f *Fetcher) parseDataURL(rest string) (string, *Error) {
	header, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", newError(CodeInvalidURL, "data URL has no comma between its media type and its data: %s", base64Hint)
	}
	params := strings.Split(header, ";")
	media := strings.ToLower(strings.TrimSpace(params[0]))
	if !strings.EqualFold(strings.TrimSpace(params[len(params)-1]), "base64") || len(params) < 2 {
		return "", newError(CodeInvalidURL, "data URL is not base64-encoded (its media type is not followed by ;base64): %s", base64Hint)
	}
	if !inlineTypes[media] {
		if media == "" {
			media = "none (text/plain by default)"
		} else {
			media = apierr.Quote(media)
		}
		return "", newError(CodeUnsupportedType, "data URL's media type is %s: give image/jpeg, image/png or image/webp with the bytes of a JPEG, PNG or WebP image", media)
	}
	payload = strings.TrimRight(payload, "=")
	// Decoded, n base64 characters are 3n/4 bytes: an oversized image is
	// refused before its text is scanned or decoded.
	if n := int64(len(payload)) * 3 / 4; n > f.cfg.MaxInlineBytes {
		return "", f.inlineTooLarge(n)
	}
	if payload == "" {
		return "", newError(CodeInvalidImage, "data URL holds no image: %s", base64Hint)
	}
	for i := 0; i < len(payload); i++ {
		if c := payload[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
			what := fmt.Sprintf("character %d", i)
			if c > ' ' && c < 0x7f {
				what = fmt.Sprintf("%q at character %d", rune(c), i)
			}
			return "", newError(CodeInvalidURL, "data URL is not valid base64 (%s is not of its alphabet): %s", what, base64Hint)
		}
	}
	if len(payload)%4 == 1 { // no whole byte ends there: the text was cut
		return "", newError(CodeInvalidURL, "data URL is not valid base64 (its length is not that of whole bytes: was it cut short?): %s", base64Hint)
	}
	return payload, nil
}

func (f *Fetcher) inlineTooLarge(n int64) *Error {
	return newError(CodeTooLarge, "data URL holds an image of %d bytes: an inline image may have %d bytes (%s); scale the photo down (the fingerprint reads at most %d pixels a side) or give its http or https URL (up to %s)",
		n, f.cfg.MaxInlineBytes, sizeText(f.cfg.MaxInlineBytes), f.cfg.DecodeSide, sizeText(f.cfg.MaxBytes))
}

// parseURL accepts absolute http and https URLs with a host and no userinfo.
// Messages never echo the URL: it may carry credentials.
func parseURL(raw string) (*url.URL, *Error) {
	if raw == "" {
		return nil, newError(CodeInvalidURL, "image URL is empty: give the http or https URL of a JPEG, PNG or WebP image, or a data URL")
	}
	if len(raw) > MaxURLLength {
		return nil, newError(CodeInvalidURL, "image URL is %d bytes long: the limit is %d", len(raw), MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error's text repeats the URL
		}
		return nil, newError(CodeInvalidURL, "image URL does not parse (%v): give an absolute http or https URL", err)
	}
	return u, checkURL(u)
}

// checkURL runs on the URL given and on every redirect target.
func checkURL(u *url.URL) *Error {
	switch u.Scheme {
	case "http", "https":
	case "":
		return newError(CodeInvalidURL, "image URL has no scheme: give an absolute http or https URL")
	default:
		return newError(CodeInvalidURL, "image URL scheme %q is not supported: only http and https URLs are fetched (or give the image inline as a base64 data URL)", u.Scheme)
	}
	if u.User != nil {
		return newError(CodeInvalidURL, "image URL must not contain a user name or password: give a URL that needs no credentials")
	}
	if u.Hostname() == "" {
		return newError(CodeInvalidURL, "image URL has no host: give an absolute http or https URL")
	}
	if len(u.String()) > MaxURLLength {
		return newError(CodeInvalidURL, "image URL is longer than %d bytes", MaxURLLength)
	}
	return nil
}

func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.cfg.MaxRedirects {
		return newError(CodeTooManyRedirects, "image URL redirected more than %d times: give the image's final URL", f.cfg.MaxRedirects)
	}
	if err := checkURL(req.URL); err != nil {
		// The URL given was fine; where its server sent us is not: the
		// image cannot be used (422), rather than the request being malformed.
		return &Error{Code: CodeRedirectRefused, Message: "image URL redirects to a URL that is refused: " + err.Message}
	}
	return nil // the target's address is checked when it is dialed
}

// fetch downloads and decodes an image; release gives its pixels back to the
// decode budget.
func (f *Fetcher) fetch(parent context.Context, a *admission, u *url.URL, rawURL string) (img *Image, release func(), err error) {
	ctx, cancel := context.WithTimeout(parent, f.cfg.Timeout)
	defer cancel()
	host := u.Hostname()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, newError(CodeInvalidURL, "image URL is not a valid request URL: give an absolute http or https URL")
	}
	req.Header.Set("Accept", "image/jpeg, image/png, image/webp")
	req.Header.Set("User-Agent", "Vitola-ImageFetch/1")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, nil, f.transportError(parent, ctx, host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The reason phrase is the server's; the standard one is ours.
		return nil, nil, newError(CodeFetchFailed, "image server %s answered HTTP %d %s: the URL must return the image itself",
			host, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	if resp.ContentLength > f.cfg.MaxBytes {
		return nil, nil, f.tooLarge(resp.ContentLength)
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	// Content-Length may be absent (chunked) or wrong: the read is capped too.
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, f.cfg.MaxBytes+1)); err != nil {
		return nil, nil, f.transportError(parent, ctx, host, err)
	}
	if int64(buf.Len()) > f.cfg.MaxBytes {
		return nil, nil, f.tooLarge(-1)
	}
	// The wait for the decode budget is bounded by the caller, not by the
	// fetch's timeout: it is not the image server's fault.
	img, release, ierr := f.decode(parent, a, buf.Bytes(), "image URL returned")
	if ierr != nil {
		return nil, nil, ierr
	}
	img.URL = rawURL
	return img, release, nil
}

func (f *Fetcher) tooLarge(n int64) *Error {
	if n >= 0 {
		return newError(CodeTooLarge, "image is %d bytes: the limit is %d bytes (%s)", n, f.cfg.MaxBytes, sizeText(f.cfg.MaxBytes))
	}
	return newError(CodeTooLarge, "image is larger than the limit of %d bytes (%s)", f.cfg.MaxBytes, sizeText(f.cfg.MaxBytes))
}

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", (n+1023)>>10)
}

// transportError turns a client or body-read error into an *Error. Refusals
// made by the fetcher itself (a blocked address, a redirect) pass through.
// Messages say what went wrong in the user's terms: never the text of a Go
// error, which names the platform's DNS resolver ("lookup x on 10.0.0.2:53"),
// local addresses and Go types.
func (f *Fetcher) transportError(parent, ctx context.Context, host string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(parent.Err(), context.Canceled) {
		return &Error{Code: CodeFetchCanceled, Message: fmt.Sprintf("fetching the image from %s was canceled", host), err: context.Canceled}
	}
	fail := func(format string) *Error {
		return &Error{Code: CodeFetchFailed, Message: fmt.Sprintf(format, host), err: err}
	}
	// The overall deadline first: when it passed, it is what fired, whatever
	// stage the fetch was in.
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{Code: CodeFetchTimeout, Message: fmt.Sprintf("fetching the image from %s took longer than %s: use a faster host or a smaller image", host, f.cfg.Timeout), err: context.DeadlineExceeded}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		switch {
		case dns.IsNotFound:
			return fail("the host %s could not be found (it has no DNS record): check the URL")
		case dns.IsTimeout:
			return fail("the host %s could not be looked up in time (DNS did not answer): try again later")
		}
		return fail("the host %s could not be looked up (DNS failed): try again later")
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		// A stage's own timeout (connect, TLS handshake, response headers)
		// fired before the overall one: name it, not the overall timeout.
		var op *net.OpError
		what := "did not answer (TLS handshake and response headers)"
		if errors.As(err, &op) && op.Op == "dial" {
			what = "did not accept the connection"
		}
		return &Error{Code: CodeFetchTimeout, Message: fmt.Sprintf("the image server %s %s within %s: use a faster host", host, what, f.stage), err: context.DeadlineExceeded}
	}
	var (
		unknownCA   x509.UnknownAuthorityError
		hostnameErr x509.HostnameError
		invalidCert x509.CertificateInvalidError
		recordErr   tls.RecordHeaderError
		alert       tls.AlertError
		certErr     *tls.CertificateVerificationError
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fail("the image server %s refused the connection: check the URL's host and port")
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return fail("the image server %s cannot be reached: check the URL's host")
	case errors.As(err, &unknownCA), errors.As(err, &hostnameErr), errors.As(err, &invalidCert), errors.As(err, &certErr):
		return fail("the image server %s did not present a valid TLS certificate for its name: fix its certificate or use another host")
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"): // net/http's text; it has no type
		return fail("the image server %s answered in plain HTTP on an https URL: use http://, or the port it serves TLS on")
	case errors.As(err, &recordErr), errors.As(err, &alert):
		return fail("the image server %s did not complete a TLS handshake: check that the URL's scheme and port are right")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fail("the image server %s closed the connection before the image was complete: try again, or use another host")
	}
	return fail("the image could not be fetched from %s (the connection failed): check the URL, or try again later")
}

// codec is one accepted format. Decoders are called directly, not through
// image.Decode's global registry, so a format some other package registers
// (GIF, BMP, TIFF, ...) is never accepted here.
type codec struct {
	format string
	magic  func([]byte) bool
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
}

var codecs = []codec{
	{"jpeg", func(b []byte) bool { return bytes.HasPrefix(b, []byte("\xff\xd8\xff")) }, jpeg.DecodeConfig, jpeg.Decode},
	{"png", func(b []byte) bool { return bytes.HasPrefix(b, []byte(pngMagic)) }, png.DecodeConfig, png.Decode},
	{"webp", func(b []byte) bool { return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP" }, webp.DecodeConfig, webp.Decode},
}

// Decode checks and decodes image bytes from elsewhere (a file an operator
// adds as evidence) with the same rules as fetched images: JPEG, PNG or WebP,
// sniffed, within the byte and pixel caps.
func (f *Fetcher) Decode(data []byte) (*Image, error) {
	if int64(len(data)) > f.cfg.MaxBytes {
		return nil, f.tooLarge(int64(len(data)))
	}
	img, release, err := f.decode(context.Background(), nil, data, "image holds")
	if err != nil {
		return nil, err
	}
	release()
	return img, nil
}

// decode sniffs the format from the bytes (Content-Type is the server's claim,
// not a fact), checks the dimensions in the header, and only then takes the
// bytes decoding will hold from the decode budget (waiting while ctx and the
// request's admission a let it; nil: while ctx does) and decodes. release
// gives back what the image handed out still holds.
func (f *Fetcher) decode(ctx context.Context, a *admission, data []byte, from string) (img *Image, release func(), _ *Error) {
	c, cfg, e := f.sniff(data, from)
	if e != nil {
		return nil, nil, e
	}
	k := reduceFactor(cfg.Width, cfg.Height, f.cfg.DecodeSide)
	w, h := reducedSize(cfg.Width, cfg.Height, k)
	reduced := k > 1
	var decoding, handed int64 // bytes held while decoding; by the image handed out
	switch {
	case reduced && c.format == "png":
		decoding = pngReducedCost(cfg.Width, cfg.Height, k, isInterlacedPNG(data))
		handed = 4 * int64(w) * int64(h)
	case reduced:
		handed = 4 * int64(w) * int64(h)
		decoding = decodeCost(c.format, data, cfg.Width, cfg.Height) + reducerBytes(cfg.Width, cfg.Height, k, true)
	default:
		decoding = decodeCost(c.format, data, cfg.Width, cfg.Height)
		handed = decoding
	}
	work := int64(0)
	if f.cfg.Work != nil {
		work = f.cfg.Work(w, h)
	}
	// Decoding holds the body and the decoder's memory; afterwards fn holds
	// the image handed out and its work: the share is the larger of the two.
	weight := max(int64(len(data))+decoding, handed+work)
	if weight > f.cfg.DecodeBudget {
		fix := "scale it down"
		if c.format == "jpeg" && progressiveJPEG(data) {
			fix = "save it as a baseline (not progressive) JPEG, or scale it down"
		}
		return nil, nil, newError(CodeTooManyPixels, "image is %dx%d pixels, a %s that takes %s to decode: the limit is %s; %s",
			cfg.Width, cfg.Height, describe(c.format, data), mbText(weight), mbText(f.cfg.DecodeBudget), fix)
	}
	if err := a.acquire(ctx, f, weight); err != nil {
		if errors.Is(err, errOverCapacity) {
			return nil, nil, f.overCapacity()
		}
		return nil, nil, &Error{Code: CodeFetchCanceled, Message: "the request ended while the image waited to be decoded", err: err}
	}
	decoded, err := safely(func() (image.Image, error) {
		if reduced && c.format == "png" {
			return decodePNGReduced(data, k)
		}
		full, err := c.decode(bytes.NewReader(data))
		if err != nil || !reduced {
			return full, err
		}
		return reduce(full, k), nil
	})
	// What decoding held beyond the image handed out (the frame a large image
	// was reduced from) is garbage now: collect it before fn's work or
	// another image is let in to use its bytes, or the heap would hold both
	// until the collector's own pace caught up (up to twice the budget).
	if decoding-handed >= 16<<20 {
		runtime.GC()
	}
	if spare := weight - (handed + work); spare > 0 {
		f.budget.Release(spare)
		weight -= spare
	}
	release = sync.OnceFunc(func() {
		f.budget.Release(weight)
		a.release()
	})
	if err != nil {
		release()
		return nil, nil, newError(CodeInvalidImage, "image is not a valid %s: %v", strings.ToUpper(c.format), err)
	}
	return &Image{Image: decoded, Format: c.format, Bytes: len(data), Width: cfg.Width, Height: cfg.Height}, release, nil
}

// sniff finds the codec from the magic bytes and reads the header's size,
// refusing what is not an image of an accepted format or is over the size
// limits. from says where the bytes came from ("image URL returned").
func (f *Fetcher) sniff(data []byte, from string) (*codec, image.Config, *Error) {
	if len(data) == 0 {
		return nil, image.Config{}, newError(CodeInvalidImage, "%s an empty body: it is not an image", from)
	}
	var c *codec
	for i := range codecs {
		if codecs[i].magic(data) {
			c = &codecs[i]
			break
		}
	}
	if c == nil {
		return nil, image.Config{}, newError(CodeUnsupportedType, "%s %s, not a JPEG, PNG or WebP image", from, http.DetectContentType(data))
	}
	cfg, err := safely(func() (image.Config, error) { return c.config(bytes.NewReader(data)) })
	if err != nil {
		return nil, image.Config{}, newError(CodeInvalidImage, "image is not a valid %s: %v", strings.ToUpper(c.format), err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, image.Config{}, newError(CodeInvalidImage, "image is not a valid %s: it is %dx%d pixels", strings.ToUpper(c.format), cfg.Width, cfg.Height)
	}
	if cfg.Width > MaxSide || cfg.Height > MaxSide || int64(cfg.Width)*int64(cfg.Height) > int64(f.cfg.MaxPixels) {
		return nil, image.Config{}, newError(CodeTooManyPixels, "image is %dx%d pixels: the limit is %d pixels in all and %d on either side; scale it down",
			cfg.Width, cfg.Height, f.cfg.MaxPixels, MaxSide)
	}
	return c, cfg, nil
}

func isInterlacedPNG(data []byte) bool { return len(data) > 28 && data[28] == 1 }

// describe names what makes an image dear to decode.
func describe(format string, data []byte) string {
	switch format {
	case "jpeg":
		if progressiveJPEG(data) {
			return "progressive JPEG"
		}
		return "JPEG"
	case "webp":
		return "WebP"
	}
	return strings.ToUpper(format)
}

func mbText(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KB", (n+1023)>>10)
	}
	return fmt.Sprintf("%d MB", (n+(1<<20)-1)>>20)
}

// safely turns a decoder panic on hostile input into an error.
func safely[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder failed: %v", r)
		}
	}()
	return fn()
}

// dial checks a literal IP before the socket exists, so that the refusal does
// not depend on whether this host can open, say, an IPv6 socket; Control (run
// for every address a name resolves to) is the check that covers names. Either
// way the refusal is reworded here, where the URL's host is known.
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if b := f.check(ip); b != nil {
			return nil, b.error(host)
		}
	}
	conn, err := f.dialer.DialContext(ctx, network, addr)
	if err != nil {
		var b *blocked
		if errors.As(err, &b) {
			return nil, b.error(host)
		}
		return nil, err
	}
	return conn, nil
}

// control is net.Dialer.Control: address is the resolved "ip:port" about to
// be connected to. Anything that does not parse is refused.
func (f *Fetcher) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &blocked{kind: "an unparseable", addr: address}
	}
	if b := f.check(ap.Addr()); b != nil {
		return b
	}
	return nil
}

// blocked is the dialer's refusal, before the URL's host is known.
type blocked struct {
	kind string // with its article: "a loopback"
	addr string
}

func (b *blocked) Error() string { return "refused to connect to " + b.kind + " address " + b.addr }

func (b *blocked) error(host string) *Error {
	// A literal address is the user's own; the address a name resolves to is
	// not named: it would tell anyone what the platform's DNS says about
	// internal names (db.corp -> 10.2.3.4).
	where := fmt.Sprintf("image URL points to %s address (%s)", b.kind, b.addr)
	if _, err := netip.ParseAddr(host); err != nil {
		where = fmt.Sprintf("image URL host %s resolves to %s address", host, b.kind)
	}
	return &Error{
		Code: CodeAddressBlocked,
		Message: where + ": Vitola fetches images only from public addresses " +
			"(operators of private deployments can allow a range with VITOLA_FETCH_ALLOW_CIDRS)",
		err: b,
	}
}

// check refuses every address that is not public unicast, unless the operator
// allowed it.
func (f *Fetcher) check(ip netip.Addr) *blocked {
	if !ip.IsValid() {
		return &blocked{kind: "an invalid", addr: ip.String()}
	}
	// A zoned address never matches a prefix; ::ffff:10.0.0.1 is 10.0.0.1 on
	// the wire and is judged as IPv4.
	a := ip.WithZone("").Unmap()
	for _, p := range f.allow {
		if p.Contains(a) {
			return nil
		}
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(a) {
			return &blocked{kind: r.kind, addr: ip.String()}
		}
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return &blocked{kind: "a reserved IPv6", addr: ip.String()}
	}
	return nil
}

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// blockedRanges are the special-purpose ranges (IANA registries, RFC 6890) that
// are not publicly routable or that lead somewhere internal. Earlier entries
// name the address in the message, so specific ranges come before wider ones.
var blockedRanges = func() []struct {
	prefix netip.Prefix
	kind   string
} {
	list := []struct{ cidr, kind string }{
		{"0.0.0.0/8", "an unspecified"},
		{"10.0.0.0/8", "a private"},
		{"100.64.0.0/10", "a carrier-grade NAT (shared)"},
		{"127.0.0.0/8", "a loopback"},
		{"169.254.0.0/16", "a link-local (cloud metadata)"},
		{"172.16.0.0/12", "a private"},
		{"192.0.0.0/24", "an IETF protocol"},
		{"192.0.2.0/24", "a documentation"},
		{"192.88.99.0/24", "a 6to4 relay"},
		{"192.168.0.0/16", "a private"},
		{"198.18.0.0/15", "a benchmarking"},
		{"198.51.100.0/24", "a documentation"},
		{"203.0.113.0/24", "a documentation"},
		{"224.0.0.0/4", "a multicast"},
		{"255.255.255.255/32", "a broadcast"},
		{"240.0.0.0/4", "a reserved"},

		{"::/128", "an unspecified"},
		{"::1/128", "a loopback"},
		{"::/96", "an IPv4-compatible IPv6"},
		{"64:ff9b::/96", "a NAT64 (embedded IPv4)"},
		{"64:ff9b:1::/48", "a NAT64 (embedded IPv4)"},
		{"100::/64", "a discard"},
		{"2001::/32", "a Teredo (embedded IPv4)"},
		{"2001:db8::/32", "a documentation"},
		{"2001::/23", "an IETF protocol"},
		{"2002::/16", "a 6to4 (embedded IPv4)"},
		{"3fff::/20", "a documentation"},
		{"fc00::/7", "a unique local (private IPv6)"},
		{"fe80::/10", "a link-local"},
		{"fec0::/10", "a site-local"},
		{"ff00::/8", "a multicast"},
	}
	out := make([]struct {
		prefix netip.Prefix
		kind   string
	}, len(list))
	for i, r := range list {
		out[i].prefix = netip.MustParsePrefix(r.cidr)
		out[i].kind = r.kind
	}
	return out
}()

// ParseCIDRs parses an allow-list such as VITOLA_FETCH_ALLOW_CIDRS:
// "127.0.0.1/32, 10.0.0.0/8". Entries are separated by commas or spaces; a
// bare address means that address alone.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, field := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		var p netip.Prefix
		var err error
		if strings.Contains(field, "/") {
			p, err = netip.ParsePrefix(field)
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(field); err == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("allow-list entry %q is neither a CIDR range (10.0.0.0/8) nor an IP address", field)
		}
		out = append(out, normalizePrefix(p))
	}
	return out, nil
}

// normalizePrefix masks host bits and turns an IPv4-mapped IPv6 range into
// IPv4, the form addresses are compared in.
func normalizePrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}
