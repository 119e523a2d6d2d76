package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/trust"
)

// Every setting is a flag whose default comes from an environment variable, so a
// flag given wins over the environment, which wins over the built-in default.

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

func envBool(getenv func(string) string, name string) bool {
	b, _ := strconv.ParseBool(getenv(name))
	return b
}

// envBoolOr is envBool for a setting on by default.
func envBoolOr(getenv func(string) string, name string, def bool) bool {
	if b, err := strconv.ParseBool(getenv(name)); err == nil {
		return b
	}
	return def
}

func envInt(getenv func(string) string, name string, def int) int {
	if n, err := strconv.Atoi(getenv(name)); err == nil {
		return n
	}
	return def
}

func envInt64(getenv func(string) string, name string, def int64) int64 {
	if n, err := strconv.ParseInt(getenv(name), 10, 64); err == nil {
		return n
	}
	return def
}

// secretVar declares a flag whose value may hold a credential (a password in a
// URL, a signing key). Its default comes from the environment like any other,
// but usage text never prints it: -h or a mistyped flag shows "(set)" at most.
func secretVar(fs *flag.FlagSet, p *string, name, env string, getenv func(string) string, usage string) {
	*p = getenv(env)
	if *p != "" {
		usage += " (set)"
	}
	fs.Var((*secretValue)(p), name, usage)
}

type secretValue string

func (v *secretValue) Set(s string) error { *v = secretValue(s); return nil }
func (v *secretValue) String() string     { return "" }

// storeSettings are the flags every command that touches a store takes.
type storeSettings struct {
	DataDir     string
	DatabaseURL string
}

func (s *storeSettings) register(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&s.DataDir, "data", envOr(getenv, "VITOLA_DATA", "./data"), "directory of the SQLite stores, the embedded default (env VITOLA_DATA)")
	secretVar(fs, &s.DatabaseURL, "database-url", "DATABASE_URL", getenv, "PostgreSQL URL (postgres://…); every store becomes a schema there (env DATABASE_URL)")
}

func (s storeSettings) config() sqldb.Config {
	return sqldb.Config{DataDir: s.DataDir, DatabaseURL: s.DatabaseURL}
}

// defaultAddr is the public API's address when neither --addr nor VITOLA_ADDR
// gives one.
const defaultAddr = "127.0.0.1:8080"

// registerPublicURL declares --public-url: the address clients reach the API
// at, the OAuth issuer and audience. Empty, it follows the API's address
// (publicURL).
func registerPublicURL(fs *flag.FlagSet, p *string, getenv func(string) string) {
	fs.StringVar(p, "public-url", envOr(getenv, "VITOLA_PUBLIC_URL", ""), "the public base URL of the API: the OAuth issuer and token audience; default: http:// and the address --addr listens on; a --component other than the shim needs it given (env VITOLA_PUBLIC_URL)")
}

// publicSettings are an admin command's view of where the public API is
// reached, for what it mints (access tokens): the same settings and default as
// serve's, from --addr as configured since nothing listens here.
type publicSettings struct{ URL, Addr string }

func (p *publicSettings) register(fs *flag.FlagSet, getenv func(string) string) {
	registerPublicURL(fs, &p.URL, getenv)
	fs.StringVar(&p.Addr, "addr", envOr(getenv, "VITOLA_ADDR", defaultAddr), "the address `vitola serve` listens on, for the default --public-url (env VITOLA_ADDR)")
}

func (p publicSettings) url() string { return publicURL(p.URL, p.Addr) }

// publicURL is the URL an origin is reached at: the one configured (without a
// trailing slash), or else http:// and addr as this machine reaches it. serve
// passes the address it listens on, so port 0 becomes the port it was given.
// One rule for the API (--public-url) and the payments origin
// (--payments-public-url).
func publicURL(configured, addr string) string {
	if configured != "" {
		return strings.TrimSuffix(configured, "/")
	}
	return "http://" + loopbackHost(addr)
}

// loopbackHost names a listen address as this machine reaches it: an
// address on every interface (":8081", "0.0.0.0:8081", "[::]:8081") is
// reached on 127.0.0.1.
func loopbackHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// urlMap is a repeatable NAME=URL flag.
type urlMap map[string]string

func (m urlMap) String() string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

func (m urlMap) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, url, ok := strings.Cut(part, "=")
		if !ok || name == "" || !strings.HasPrefix(url, "http") {
			return fmt.Errorf("want NAME=http://HOST:PORT/graphql, got %q", part)
		}
		m[name] = url
	}
	return nil
}

// internalKey returns the key that signs internal tokens. Without one configured,
// the SQLite shape keeps a generated key in the data directory (so components
// sharing it agree); the one-process shape may use a throw-away key; a scale-out
// component must be given one.
func internalKey(configured string, store storeSettings, oneProcess bool) ([]byte, error) {
	if configured != "" {
		if len(configured) < trust.MinKeyLen {
			return nil, fmt.Errorf("the internal key (--internal-key, VITOLA_INTERNAL_KEY) must be at least %d characters", trust.MinKeyLen)
		}
		return []byte(configured), nil
	}
	if store.DatabaseURL == "" {
		return dataDirKey(filepath.Join(store.DataDir, "internal.key"))
	}
	if oneProcess {
		return []byte(randomHex(32)), nil
	}
	return nil, errors.New("set the internal key (--internal-key or VITOLA_INTERNAL_KEY, at least 32 characters) to the same value in every component")
}

func dataDirKey(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if b, err := os.ReadFile(path); err == nil {
		return checkKeyFile(path, b)
	}
	// Write a complete file aside, then link it into place: a process starting at
	// the same moment either wins the link or reads the winner's whole key.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".internal.key.*")
	if err != nil {
		return nil, fmt.Errorf("create internal key: %w", err)
	}
	defer os.Remove(tmp.Name())
	key := randomHex(32)
	_, werr := tmp.WriteString(key)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("write internal key: %w", werr)
	}
	os.Chmod(tmp.Name(), 0o600)
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("install internal key: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read internal key: %w", err)
	}
	return checkKeyFile(path, b)
}

func checkKeyFile(path string, b []byte) ([]byte, error) {
	if len(b) < trust.MinKeyLen {
		return nil, fmt.Errorf("%s is too short: delete it to get a new key", path)
	}
	return b, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}

func envFloat(getenv func(string) string, name string, def float64) float64 {
	if f, err := strconv.ParseFloat(getenv(name), 64); err == nil {
		return f
	}
	return def
}

func envDuration(getenv func(string) string, name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(getenv(name)); err == nil {
		return d
	}
	return def
}
