// Package memory is the in-process kv.Store of the one-process default. Entries
// really expire: reads check the deadline and a janitor sweeps the rest.
package memory

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/vitolahq/vitola/internal/kv"
)

type entry struct {
	value    []byte
	deadline time.Time
}

// Store is safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	entries map[string]entry
	now     func() time.Time
	stop    chan struct{}
	once    sync.Once
}

var _ kv.Store = (*Store)(nil)

// New returns an empty store. now is the clock (nil means time.Now); tests pass
// their own to expire entries without sleeping.
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	s := &Store{entries: map[string]entry{}, now: now, stop: make(chan struct{})}
	go s.sweep(time.Minute)
	return s
}

func (s *Store) sweep(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			now := s.now()
			for k, e := range s.entries {
				if !now.Before(e.deadline) {
					delete(s.entries, k)
				}
			}
			s.mu.Unlock()
		}
	}
}

// live returns the entry at key if it has not expired. Callers hold mu.
func (s *Store) live(key string) (entry, bool) {
	e, ok := s.entries[key]
	if !ok {
		return entry{}, false
	}
	if !s.now().Before(e.deadline) {
		delete(s.entries, key)
		return entry{}, false
	}
	return e, true
}

func (s *Store) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(key)
	if !ok {
		return nil, kv.ErrNotFound
	}
	return bytes.Clone(e.value), nil
}

func (s *Store) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries[key] = entry{value: bytes.Clone(value), deadline: s.now().Add(ttl)}
	return nil
}

func (s *Store) SetNX(_ context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.live(key); ok {
		return false, nil
	}
	s.entries[key] = entry{value: bytes.Clone(value), deadline: s.now().Add(ttl)}
	return true, nil
}

func (s *Store) DeleteIfEqual(_ context.Context, key string, value []byte) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(key)
	if !ok || !bytes.Equal(e.value, value) {
		return false, nil
	}
	delete(s.entries, key)
	return true, nil
}

func (s *Store) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
	return nil
}

func (s *Store) Incr(_ context.Context, key string, ttl time.Duration) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(key)
	var n int64
	if ok {
		v, err := strconv.ParseInt(string(e.value), 10, 64)
		if err != nil {
			return 0, err
		}
		n = v
	} else {
		e.deadline = s.now().Add(ttl)
	}
	n++
	e.value = []byte(strconv.FormatInt(n, 10))
	s.entries[key] = e
	return n, nil
}

func (s *Store) Spend(_ context.Context, key string, b kv.Bucket, cost int64) (kv.Spent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var tat time.Time
	if e, ok := s.live(key); ok {
		n, err := strconv.ParseInt(string(e.value), 10, 64)
		if err != nil {
			return kv.Spent{}, err
		}
		tat = time.Unix(0, n)
	}
	sp, next := b.Draw(now, tat, cost)
	if sp.OK && next.After(now) {
		// A full bucket needs no entry: it expires when it has refilled.
		s.entries[key] = entry{value: []byte(strconv.FormatInt(next.UnixNano(), 10)), deadline: next}
	}
	return sp, nil
}

func (s *Store) Ping(context.Context) error { return nil }

func (s *Store) Close() error {
	s.once.Do(func() { close(s.stop) })
	return nil
}
