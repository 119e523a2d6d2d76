// Package weborigin checks the web origins and URLs that keys and clients
// register: https, or http on the machine itself (development).
package weborigin

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/vitolahq/vitola/internal/apierr"
)

// ErrBad: an origin is https://host[:port] (http only for localhost), without
// a path.
var ErrBad = errors.New("an origin is https://host[:port] (http only for localhost), without a path")

// Loopback reports whether a host name is this machine's.
func Loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// SecureScheme reports whether u may carry secrets: https, or http on the
// machine itself.
func SecureScheme(u *url.URL) bool {
	return u.Scheme == "https" || (u.Scheme == "http" && Loopback(u.Hostname()))
}

// Normalize checks a website origin and returns its canonical
// scheme://host[:port] form, in lower case.
func Normalize(origin string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(origin))
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil || !SecureScheme(u) {
		return "", fmt.Errorf("%s: %w", apierr.Quote(origin), ErrBad)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}
