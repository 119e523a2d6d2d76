// Package redis is the kv.Store shared by replicas, on go-redis. Every key is put
// under a prefix so that deployments (and test packages) can share one server.
package redis

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/vitolahq/vitola/internal/kv"
)

// Store implements kv.Store.
type Store struct {
	client *goredis.Client
	prefix string
}

var _ kv.Store = (*Store)(nil)

// Client options that keep one call short, so that a Redis that is down or
// slow costs a request little before the platform's breaker (kv/failover)
// opens and stops calling it. A URL's own query (dial_timeout=…,
// read_timeout=…, max_retries=…, pool_timeout=…) wins over them.
const (
	// DialTimeout bounds one connection attempt; DialerRetries 1: a single
	// attempt (go-redis would try 5 times, 100 ms apart).
	DialTimeout = 300 * time.Millisecond
	// ReadTimeout and WriteTimeout bound one command on the wire: Redis
	// answers these small commands in well under a millisecond.
	ReadTimeout  = 500 * time.Millisecond
	WriteTimeout = 500 * time.Millisecond
	// PoolTimeout bounds the wait for a free connection when all are busy.
	PoolTimeout = 500 * time.Millisecond
)

// New configures a client for the server at url (redis://…) without
// connecting: the first command connects. A malformed URL is an error that
// says what is wrong, without the URL itself (it may hold a password).
func New(url, prefix string) (*Store, error) {
	opts, err := Options(url)
	if err != nil {
		return nil, err
	}
	return &Store{client: goredis.NewClient(opts), prefix: prefix}, nil
}

// Options are the client options of every Redis client of the platform (the
// store's, the event bus's): the URL's, with the short bounds above where the
// URL sets none.
func Options(url string) (*goredis.Options, error) {
	opts, err := goredis.ParseURL(url)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL
		}
		return nil, fmt.Errorf("the Redis URL is not valid (%v): want redis://[user:password@]host:port[/db] or rediss://… for TLS", err)
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = DialTimeout
	}
	if opts.DialerRetries == 0 {
		opts.DialerRetries = 1
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = ReadTimeout
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = WriteTimeout
	}
	if opts.PoolTimeout == 0 {
		opts.PoolTimeout = PoolTimeout
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = -1 // none: the breaker's fallback answers instead
	}
	opts.ContextTimeoutEnabled = true // a caller's deadline bounds the call too
	return opts, nil
}

// Open is New, then a check that the server answers.
func Open(ctx context.Context, url, prefix string) (*Store, error) {
	s, err := New(url, prefix)
	if err != nil {
		return nil, err
	}
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("connect to Redis: %w", err)
	}
	return s, nil
}

func (s *Store) k(key string) string { return s.prefix + key }

func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := s.client.Get(ctx, s.k(key)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, kv.ErrNotFound
	}
	return b, err
}

func (s *Store) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return s.client.Set(ctx, s.k(key), value, ttl).Err()
}

func (s *Store) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	err := s.client.SetArgs(ctx, s.k(key), value, goredis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	if errors.Is(err, goredis.Nil) {
		return false, nil
	}
	return err == nil, err
}

// Compare and delete in one step, so a lock that expired and was taken by another
// owner is never released by the old one.
var deleteIfEqual = goredis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)

func (s *Store) DeleteIfEqual(ctx context.Context, key string, value []byte) (bool, error) {
	n, err := deleteIfEqual.Run(ctx, s.client, []string{s.k(key)}, value).Int()
	return n == 1, err
}

func (s *Store) Delete(ctx context.Context, key string) error {
	return s.client.Del(ctx, s.k(key)).Err()
}

// The first increment sets the window's expiry, atomically with the increment.
var incrWithTTL = goredis.NewScript(`local n = redis.call("INCR", KEYS[1]) if n == 1 then redis.call("PEXPIRE", KEYS[1], ARGV[1]) end return n`)

func (s *Store) Incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	return incrWithTTL.Run(ctx, s.client, []string{s.k(key)}, ttl.Milliseconds()).Int64()
}

// spend is kv.Bucket.Draw in one atomic step on the server's clock, in
// microseconds (exact in Lua's doubles for centuries): ARGV are the unit's
// interval, the period, the cost and the limit; it returns {ok, reset,
// retryAfter}.
var spend = goredis.NewScript(`
local iv, period, cost, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call("GET", KEYS[1]) or "0")
if tat < now then tat = now end
local nxt = tat + cost * iv
if cost <= limit and nxt - now <= period then
  redis.call("SET", KEYS[1], string.format("%d", nxt), "PX", math.ceil((nxt - now) / 1000))
  return {1, nxt - now, 0}
end
local retry = 0
if cost <= limit then retry = nxt - now - period end
return {0, tat - now, retry}`)

func (s *Store) Spend(ctx context.Context, key string, b kv.Bucket, cost int64) (kv.Spent, error) {
	iv := b.Interval()
	r, err := spend.Run(ctx, s.client, []string{s.k(key)}, iv.Microseconds(), b.Period.Microseconds(), cost, b.Limit).Int64Slice()
	if err != nil {
		return kv.Spent{}, err
	}
	if len(r) != 3 {
		return kv.Spent{}, fmt.Errorf("spend: unexpected reply %v", r)
	}
	sp := kv.Spent{OK: r[0] == 1, Reset: time.Duration(r[1]) * time.Microsecond, RetryAfter: time.Duration(r[2]) * time.Microsecond}
	sp.Remaining = int64((b.Period - sp.Reset) / iv)
	return sp, nil
}

func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return s.client.Ping(ctx).Err()
}

func (s *Store) Close() error { return s.client.Close() }

// OnError calls fn for every command that fails (a missing key is not a
// failure): the platform counts Redis errors with it.
func (s *Store) OnError(fn func()) { s.client.AddHook(errorHook{fn}) }

type errorHook struct{ fn func() }

func (h errorHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h errorHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && !errors.Is(err, goredis.Nil) {
			h.fn()
		}
		return err
	}
}

func (h errorHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		if err != nil && !errors.Is(err, goredis.Nil) {
			h.fn()
		}
		return err
	}
}
