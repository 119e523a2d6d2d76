package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/envelope"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

type clientRow struct {
	ID                      string  `db:"id"`
	Name                    string  `db:"name"`
	KeyID                   *string `db:"key_id"`
	CallbackURL             string  `db:"callback_url"`
	ReturnURLs              string  `db:"return_urls"`
	Origins                 string  `db:"origins"`
	ResourceTypes           string  `db:"resource_types"`
	Scopes                  string  `db:"scopes"`
	Denied                  string  `db:"denied_actions"`
	RequireAssertion        int     `db:"require_assertion"`
	AssertionKeys           string  `db:"assertion_keys"`
	SecretHash              string  `db:"secret_hash"`
	PreviousSecretHash      *string `db:"previous_secret_hash"`
	PreviousSecretExpiresAt *int64  `db:"previous_secret_expires_at"`
	CreatedAt               int64   `db:"created_at"`
	RevokedAt               *int64  `db:"revoked_at"`
	SigningCiphertext       *string `db:"signing_ciphertext"`
	SigningKey              *string `db:"signing_key"`
	SigningKEK              *string `db:"signing_kek"`
	PrevSigningCiphertext   *string `db:"previous_signing_ciphertext"`
	PrevSigningKey          *string `db:"previous_signing_key"`
	PrevSigningKEK          *string `db:"previous_signing_kek"`
	PrevSigningExpiresAt    *int64  `db:"previous_signing_expires_at"`
	CallbacksDisabledAt     *int64  `db:"callbacks_disabled_at"`
}

const clientColumns = `id, name, key_id, callback_url, return_urls, origins, resource_types, scopes, denied_actions, require_assertion,
	assertion_keys, secret_hash, previous_secret_hash, previous_secret_expires_at, created_at, revoked_at,
	signing_ciphertext, signing_key, signing_kek, previous_signing_ciphertext, previous_signing_key, previous_signing_kek,
	previous_signing_expires_at, callbacks_disabled_at`

func (r clientRow) client() *payments.Client {
	c := &payments.Client{ID: r.ID, Name: r.Name, CallbackURL: r.CallbackURL, ReturnURLs: readList(r.ReturnURLs), Origins: readList(r.Origins),
		ResourceTypes: readList(r.ResourceTypes), Scopes: readList(r.Scopes), Denied: readList(r.Denied), RequireAssertion: r.RequireAssertion == 1,
		SecretHash: r.SecretHash, CreatedAt: fromMillis(r.CreatedAt), RevokedAt: optMillis(r.RevokedAt), PreviousSecretExpiresAt: optMillis(r.PreviousSecretExpiresAt)}
	if r.KeyID != nil {
		c.KeyID = *r.KeyID
	}
	if r.PreviousSecretHash != nil {
		c.PreviousSecretHash = *r.PreviousSecretHash
	}
	json.Unmarshal([]byte(r.AssertionKeys), &c.AssertionKeys)
	c.Signing = sealedOf(r.SigningCiphertext, r.SigningKey, r.SigningKEK)
	c.PreviousSigning = sealedOf(r.PrevSigningCiphertext, r.PrevSigningKey, r.PrevSigningKEK)
	c.PreviousSigningExpiresAt = optMillis(r.PrevSigningExpiresAt)
	c.CallbacksDisabledAt = optMillis(r.CallbacksDisabledAt)
	return c
}

// sealedOf reads a sealed record's three columns (nil when absent).
func sealedOf(ciphertext, key, kek *string) *envelope.Sealed {
	if ciphertext == nil || key == nil || kek == nil || *ciphertext == "" {
		return nil
	}
	return &envelope.Sealed{Ciphertext: *ciphertext, WrappedKey: *key, KEKID: *kek}
}

func (s *Store) CreateClient(ctx context.Context, c *payments.Client) error {
	keys, err := json.Marshal(c.AssertionKeys)
	if err != nil {
		return err
	}
	var keyID *string
	if c.KeyID != "" {
		keyID = &c.KeyID
	}
	var sealed envelope.Sealed
	if c.Signing != nil {
		sealed = *c.Signing
	}
	_, err = s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO service_clients (id, name, key_id, callback_url, return_urls, origins, resource_types, scopes,
		denied_actions, require_assertion, assertion_keys, secret_hash, created_at, signing_ciphertext, signing_key, signing_kek)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		c.ID, c.Name, keyID, c.CallbackURL, list(c.ReturnURLs).text(), list(c.Origins).text(), list(c.ResourceTypes).text(), list(c.Scopes).text(),
		list(c.Denied).text(), flag(c.RequireAssertion), string(keys), c.SecretHash, c.CreatedAt.UnixMilli(),
		nullable(sealed.Ciphertext), nullable(sealed.WrappedKey), nullable(sealed.KEKID))
	if err != nil {
		return fmt.Errorf("create service client: %w", err)
	}
	return nil
}

func (s *Store) Client(ctx context.Context, id string) (*payments.Client, error) {
	var r clientRow
	if err := getOne(ctx, s.db, &r, "service client", `SELECT `+clientColumns+` FROM service_clients WHERE id = ?`, id); err != nil {
		return nil, err
	}
	return r.client(), nil
}

func (s *Store) ListClients(ctx context.Context) ([]payments.Client, error) {
	var rows []clientRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+clientColumns+` FROM service_clients ORDER BY created_at, id`); err != nil {
		return nil, fmt.Errorf("list service clients: %w", err)
	}
	out := make([]payments.Client, len(rows))
	for i, r := range rows {
		out[i] = *r.client()
	}
	return out, nil
}

func (s *Store) RotateSecret(ctx context.Context, id, newHash string, graceUntil time.Time) error {
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE service_clients SET previous_secret_hash = secret_hash, previous_secret_expires_at = ?, secret_hash = ?
		WHERE id = ? AND revoked_at IS NULL`), graceUntil.UnixMilli(), newHash, id)
	if err != nil {
		return fmt.Errorf("rotate client secret: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return payments.ErrNotFound
	}
	return nil
}

func (s *Store) RevokeClient(ctx context.Context, id string, at time.Time) error {
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE service_clients SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`), at.UnixMilli(), id)
	if err != nil {
		return fmt.Errorf("revoke client: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return payments.ErrNotFound
	}
	return nil
}

// forgetSpentAssertions deletes a client's spent assertion IDs that have
// expired, on each request that uses one: searched by client and expiry
// (assertion_uses_expiry), where the key (client, ID) walked every live one
// of the client, a few thousand at 10 requests a second, under the write lock.
const forgetSpentAssertions = `DELETE FROM assertion_uses WHERE client_id = ? AND expires_at < ?`

func (s *Store) UseAssertion(ctx context.Context, clientID, jti string, expiresAt time.Time) error {
	now := s.millis()
	// Spent jtis are kept only while their assertion could still be replayed.
	if _, err := s.db.ExecContext(ctx, s.db.Rebind(forgetSpentAssertions), clientID, now); err != nil {
		return fmt.Errorf("forget old assertions: %w", err)
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO assertion_uses (client_id, jti, expires_at) VALUES (?, ?, ?) ON CONFLICT (client_id, jti) DO NOTHING`),
		clientID, jti, expiresAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("record assertion: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("%w: assertion %s was used before", payments.ErrConflict, strings.ToValidUTF8(jti, ""))
	}
	return nil
}
