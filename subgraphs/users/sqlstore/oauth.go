package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
)

var _ oauth.Store = (*Store)(nil)

func (s *Store) CreateClient(ctx context.Context, c *oauth.Client) error {
	uris, _ := json.Marshal(c.RedirectURIs)
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO oauth_clients (id, name, secret_hash, redirect_uris, public, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
		c.ID, c.Name, c.SecretHash, string(uris), c.Public, c.CreatedAt.UTC())
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	return nil
}

func (s *Store) Client(ctx context.Context, id string) (*oauth.Client, error) {
	var r struct {
		ID           string    `db:"id"`
		Name         string    `db:"name"`
		SecretHash   string    `db:"secret_hash"`
		RedirectURIs string    `db:"redirect_uris"`
		Public       bool      `db:"public"`
		CreatedAt    time.Time `db:"created_at"`
	}
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT id, name, secret_hash, redirect_uris, public, created_at FROM oauth_clients WHERE id = ?`), id)
	if sqldb.IsNoRows(err) {
		return nil, oauth.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	c := &oauth.Client{ID: r.ID, Name: r.Name, SecretHash: r.SecretHash, Public: r.Public, CreatedAt: r.CreatedAt.UTC()}
	if err := json.Unmarshal([]byte(r.RedirectURIs), &c.RedirectURIs); err != nil {
		return nil, fmt.Errorf("client %s redirect URIs: %w", id, err)
	}
	return c, nil
}

func (s *Store) SigningKeys(ctx context.Context, since time.Time) ([]*oauth.SigningKey, error) {
	var rows []struct {
		KID        string     `db:"kid"`
		PrivatePEM string     `db:"private_pem"`
		CreatedAt  time.Time  `db:"created_at"`
		RetiredAt  *time.Time `db:"retired_at"`
	}
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT kid, private_pem, created_at, retired_at FROM oauth_signing_keys
		WHERE retired_at IS NULL OR retired_at > ? ORDER BY retired_at IS NOT NULL, created_at DESC, kid DESC`), since.UTC())
	if err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	out := make([]*oauth.SigningKey, 0, len(rows))
	for _, r := range rows {
		priv, err := oauth.DecodePEM(r.PrivatePEM)
		if err != nil {
			return nil, fmt.Errorf("signing key %s: %w", r.KID, err)
		}
		out = append(out, &oauth.SigningKey{KID: r.KID, Private: priv, CreatedAt: r.CreatedAt.UTC(), RetiredAt: r.RetiredAt})
	}
	return out, nil
}

func (s *Store) AddSigningKey(ctx context.Context, k *oauth.SigningKey) error {
	pemText, err := k.EncodePEM()
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO oauth_signing_keys (kid, private_pem, created_at) VALUES (?, ?, ?)`), k.KID, pemText, k.CreatedAt.UTC())
	return err
}

func (s *Store) RetireSigningKeys(ctx context.Context, except string, at time.Time) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE oauth_signing_keys SET retired_at = ? WHERE kid <> ? AND retired_at IS NULL`), at.UTC(), except)
	return err
}
