// Package envelope encrypts small secrets at rest (gateway credentials, vault
// references) with AES-256-GCM under a fresh data key per record; the data key
// is itself encrypted ("wrapped") under a key-encryption key (KEK) from
// configuration. A sealed record names the KEK that wrapped it, so KEKs rotate
// without downtime: a new KEK wraps new records, old records still open with
// the old KEK, and Rewrap moves a record to the current KEK without touching its
// ciphertext.
//
// Each record is bound to additional data (its ID): a ciphertext copied to
// another record does not open.
package envelope

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Sealed is an encrypted record as stored: every field is safe to store and
// useless without the KEK named by KEKID.
type Sealed struct {
	// Ciphertext is base64 of nonce || AES-256-GCM(data key, plaintext, aad).
	Ciphertext string
	// WrappedKey is base64 of nonce || AES-256-GCM(KEK, data key, aad || KEK ID).
	WrappedKey string
	KEKID      string
}

// Keyring holds the KEKs: the current one seals, any of them opens. The zero
// Keyring is empty: Add the first KEK.
type Keyring struct {
	current string
	keks    map[string]cipher.AEAD
}

// Errors.
var (
	// ErrUnknownKEK: the record was wrapped by a KEK this keyring lacks.
	ErrUnknownKEK = errors.New("the key-encryption key that sealed this record is not configured")
	// ErrOpen: the record was altered, or belongs to other additional data.
	ErrOpen = errors.New("the record does not open: altered, or sealed for another record")
)

var kekID = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ParseKeyring reads KEKs written as "ID:BASE64KEY,ID:BASE64KEY": each key is 32
// random bytes in standard or URL-safe base64; the first one is current.
func ParseKeyring(spec string) (*Keyring, error) {
	k := &Keyring{keks: map[string]cipher.AEAD{}}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, b64, ok := strings.Cut(part, ":")
		if !ok || !kekID.MatchString(id) {
			return nil, fmt.Errorf("key-encryption keys: want ID:BASE64KEY (ID of letters, digits, '.', '_' or '-'), got an entry without one")
		}
		raw, err := decodeKey(b64)
		if err != nil {
			return nil, fmt.Errorf("key-encryption key %q: %w", id, err)
		}
		if err := k.Add(id, raw); err != nil {
			return nil, err
		}
	}
	if k.current == "" {
		return nil, errors.New("key-encryption keys: none given")
	}
	return k, nil
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != 32 {
				return nil, fmt.Errorf("want 32 bytes (256 bits), got %d", len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// Add adds a 32-byte KEK; the first one added is current.
func (k *Keyring) Add(id string, key []byte) error {
	if !kekID.MatchString(id) {
		return fmt.Errorf("key-encryption key ID %q: use 1 to 64 letters, digits, '.', '_' or '-'", id)
	}
	if k.keks == nil {
		k.keks = map[string]cipher.AEAD{}
	}
	if _, dup := k.keks[id]; dup {
		return fmt.Errorf("key-encryption key %q is given twice", id)
	}
	aead, err := newAEAD(key)
	if err != nil {
		return fmt.Errorf("key-encryption key %q: %w", id, err)
	}
	k.keks[id] = aead
	if k.current == "" {
		k.current = id
	}
	return nil
}

// Current names the KEK that seals new records.
func (k *Keyring) Current() string { return k.current }

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("want 32 bytes (256 bits), got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Seal encrypts plaintext for the record named by aad.
func (k *Keyring) Seal(plaintext []byte, aad string) (Sealed, error) {
	dataKey := make([]byte, 32)
	rand.Read(dataKey)
	aead, err := newAEAD(dataKey)
	if err != nil {
		return Sealed{}, err
	}
	ct := seal(aead, plaintext, []byte(aad))
	wrapped := seal(k.keks[k.current], dataKey, wrapAAD(aad, k.current))
	clear(dataKey)
	return Sealed{Ciphertext: b64(ct), WrappedKey: b64(wrapped), KEKID: k.current}, nil
}

// Open decrypts a record sealed for aad.
func (k *Keyring) Open(s Sealed, aad string) ([]byte, error) {
	dataKey, err := k.unwrap(s, aad)
	if err != nil {
		return nil, err
	}
	defer clear(dataKey)
	aead, err := newAEAD(dataKey)
	if err != nil {
		return nil, ErrOpen
	}
	ct, err := base64.StdEncoding.DecodeString(s.Ciphertext)
	if err != nil {
		return nil, ErrOpen
	}
	return open(aead, ct, []byte(aad))
}

// Rewrap wraps the record's data key under the current KEK; the ciphertext is
// unchanged. A record already under the current KEK comes back as it is.
func (k *Keyring) Rewrap(s Sealed, aad string) (Sealed, error) {
	if s.KEKID == k.current {
		return s, nil
	}
	dataKey, err := k.unwrap(s, aad)
	if err != nil {
		return Sealed{}, err
	}
	defer clear(dataKey)
	return Sealed{Ciphertext: s.Ciphertext, WrappedKey: b64(seal(k.keks[k.current], dataKey, wrapAAD(aad, k.current))), KEKID: k.current}, nil
}

func (k *Keyring) unwrap(s Sealed, aad string) ([]byte, error) {
	kek, ok := k.keks[s.KEKID]
	if !ok {
		return nil, fmt.Errorf("%w (KEK %q)", ErrUnknownKEK, s.KEKID)
	}
	wrapped, err := base64.StdEncoding.DecodeString(s.WrappedKey)
	if err != nil {
		return nil, ErrOpen
	}
	return open(kek, wrapped, wrapAAD(aad, s.KEKID))
}

// wrapAAD binds a wrapped data key to its record and to the KEK's ID.
func wrapAAD(aad, kekID string) []byte { return []byte(aad + "\x00" + kekID) }

func seal(aead cipher.AEAD, plaintext, aad []byte) []byte {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	rand.Read(nonce)
	return aead.Seal(nonce, nonce, plaintext, aad)
}

func open(aead cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < aead.NonceSize() {
		return nil, ErrOpen
	}
	pt, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
