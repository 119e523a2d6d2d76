package sqlstore

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
)

var _ oauth.GrantStore = (*Store)(nil)

func (s *Store) SaveCode(ctx context.Context, c *oauth.Code) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, scope, code_challenge, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		c.Hash, c.ClientID, c.UserID, c.RedirectURI, c.Scope, c.CodeChallenge, c.ExpiresAt.UTC())
	return err
}

func (s *Store) UseCode(ctx context.Context, hash string, now time.Time) (*oauth.Code, error) {
	// Marking it used is the check: of two concurrent exchanges one wins.
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE oauth_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL AND expires_at > ?`), now.UTC(), hash, now.UTC())
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return nil, oauth.ErrInvalidGrant
	}
	var r struct {
		ClientID      string    `db:"client_id"`
		UserID        string    `db:"user_id"`
		RedirectURI   string    `db:"redirect_uri"`
		Scope         string    `db:"scope"`
		CodeChallenge string    `db:"code_challenge"`
		ExpiresAt     time.Time `db:"expires_at"`
	}
	if err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT client_id, user_id, redirect_uri, scope, code_challenge, expires_at FROM oauth_codes WHERE code_hash = ?`), hash); err != nil {
		return nil, err
	}
	return &oauth.Code{Hash: hash, ClientID: r.ClientID, UserID: r.UserID, RedirectURI: r.RedirectURI, Scope: r.Scope, CodeChallenge: r.CodeChallenge, ExpiresAt: r.ExpiresAt.UTC()}, nil
}

func (s *Store) SaveRefreshToken(ctx context.Context, t *oauth.RefreshToken) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO oauth_refresh_tokens (token_hash, family_id, client_id, user_id, scope, expires_at) VALUES (?, ?, ?, ?, ?, ?)`),
		t.Hash, t.FamilyID, t.ClientID, t.UserID, t.Scope, t.ExpiresAt.UTC())
	return err
}

func (s *Store) UseRefreshToken(ctx context.Context, hash string, now time.Time) (*oauth.RefreshToken, error) {
	var out *oauth.RefreshToken
	reused := false
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var r struct {
			FamilyID  string     `db:"family_id"`
			ClientID  string     `db:"client_id"`
			UserID    string     `db:"user_id"`
			Scope     string     `db:"scope"`
			ExpiresAt time.Time  `db:"expires_at"`
			UsedAt    *time.Time `db:"used_at"`
			RevokedAt *time.Time `db:"revoked_at"`
		}
		err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT family_id, client_id, user_id, scope, expires_at, used_at, revoked_at FROM oauth_refresh_tokens WHERE token_hash = ?`), hash)
		if sqldb.IsNoRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if r.RevokedAt != nil || !now.Before(r.ExpiresAt) {
			return nil
		}
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE oauth_refresh_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL`), now.UTC(), hash)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 || r.UsedAt != nil {
			// A refresh token presented twice was stolen or replayed: the whole
			// family goes, the legitimate client's newest token included.
			reused = true
			_, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE oauth_refresh_tokens SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL`), now.UTC(), r.FamilyID)
			return err
		}
		out = &oauth.RefreshToken{Hash: hash, FamilyID: r.FamilyID, ClientID: r.ClientID, UserID: r.UserID, Scope: r.Scope, ExpiresAt: r.ExpiresAt.UTC()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if reused || out == nil {
		return nil, oauth.ErrInvalidGrant
	}
	return out, nil
}

func (s *Store) RevokeRefreshFamily(ctx context.Context, clientID, hash string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE oauth_refresh_tokens SET revoked_at = ? WHERE revoked_at IS NULL
		AND family_id = (SELECT family_id FROM oauth_refresh_tokens WHERE token_hash = ? AND client_id = ?)`), now.UTC(), hash, clientID)
	return err
}

func (s *Store) RevokeAccessToken(ctx context.Context, jti string, expiresAt time.Time) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO oauth_revoked_tokens (jti, expires_at) VALUES (?, ?) ON CONFLICT (jti) DO NOTHING`), jti, expiresAt.UTC())
	return err
}

func (s *Store) AccessTokenRevoked(ctx context.Context, jti string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.db.Rebind(`SELECT COUNT(*) FROM oauth_revoked_tokens WHERE jti = ?`), jti)
	return n > 0, err
}
