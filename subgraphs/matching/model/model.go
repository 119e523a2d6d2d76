// Package model asks a vision-model vendor over HTTP which cigar photos show:
// identify's optional fallback, off unless VITOLA_VISION_MODEL_URL is set. The
// vendor receives the image URLs and the prompt, and answers the brand and
// name it sees; the platform resolves them in its own catalog.
package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"time"
)

// HTTP is a vendor endpoint: POST {imageUrls, prompt} → {brand, name}, with
// the key as a bearer token.
type HTTP struct {
	URL    string
	Key    string
	Client *http.Client
}

// New returns a vendor client with a 30-second bound per call. The URL must
// be https (http only on a loopback address): the key travels with every
// call and must not cross a network in clear.
func New(rawURL, key string) (*HTTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("vision model URL %q is not an absolute http(s) URL", rawURL)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("vision model URL must be https (http only on a loopback address), so its key is not sent in clear: %s://%s", u.Scheme, u.Host)
	}
	return &HTTP{URL: rawURL, Key: key, Client: &http.Client{Timeout: 30 * time.Second}}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Identify asks the vendor. Errors never include the key.
func (h *HTTP) Identify(ctx context.Context, imageURLs []string, prompt string) (string, string, error) {
	body, _ := json.Marshal(map[string]any{"imageUrls": imageURLs, "prompt": prompt})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return "", "", fmt.Errorf("vision model: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if h.Key != "" {
		req.Header.Set("Authorization", "Bearer "+h.Key)
	}
	res, err := h.Client.Do(req)
	if err != nil {
		// url.Error repeats the URL, which may carry a credential in its
		// query: the error (which is logged) keeps only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", "", fmt.Errorf("vision model at %s: %w", req.URL.Host, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("vision model answered %d", res.StatusCode)
	}
	var out struct{ Brand, Name string }
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&out); err != nil {
		return "", "", fmt.Errorf("vision model: %w", err)
	}
	return out.Brand, out.Name, nil
}
