package sqlstore

import (
	"context"
	"fmt"
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

func (s *Store) UseCode(ctx context.Context, hash, family string, now time.Time) (*oauth.Code, error) {
	var out *oauth.Code
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		// Marking it used is the check: of two concurrent exchanges one wins.
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE oauth_codes SET used_at = ?, family_id = ? WHERE code_hash = ? AND used_at IS NULL AND expires_at > ?`),
			now.UTC(), family, hash, now.UTC())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			// Used before (expired since or not): revoke what it issued.
			var used *string
			err := tx.GetContext(ctx, &used, tx.Rebind(`SELECT family_id FROM oauth_codes WHERE code_hash = ? AND used_at IS NOT NULL`), hash)
			if sqldb.IsNoRows(err) || (err == nil && used == nil) {
				return nil
			}
			if err != nil {
				return err
			}
			return revokeFamily(ctx, tx, *used, now)
		}
		var r struct {
			ClientID      string    `db:"client_id"`
			UserID        string    `db:"user_id"`
			RedirectURI   string    `db:"redirect_uri"`
			Scope         string    `db:"scope"`
			CodeChallenge string    `db:"code_challenge"`
			ExpiresAt     time.Time `db:"expires_at"`
		}
		if err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT client_id, user_id, redirect_uri, scope, code_challenge, expires_at FROM oauth_codes WHERE code_hash = ?`), hash); err != nil {
			return err
		}
		out = &oauth.Code{Hash: hash, ClientID: r.ClientID, UserID: r.UserID, RedirectURI: r.RedirectURI, Scope: r.Scope, CodeChallenge: r.CodeChallenge, ExpiresAt: r.ExpiresAt.UTC()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, oauth.ErrInvalidGrant
	}
	return out, nil
}

// revokeFamily revokes a refresh-token family: its refresh tokens, and its
// listing, which also refuses its access tokens and any refresh token of it
// saved later (an exchange that raced the revocation).
func revokeFamily(ctx context.Context, tx *sqlx.Tx, family string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE oauth_refresh_tokens SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL`), now.UTC(), family); err != nil {
		return fmt.Errorf("revoke refresh tokens: %w", err)
	}
	_, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO oauth_revoked_families (family_id, revoked_at, expires_at) VALUES (?, ?, ?) ON CONFLICT (family_id) DO NOTHING`),
		family, now.UTC(), now.Add(oauth.RevokedFamilyTTL).UTC())
	if err != nil {
		return fmt.Errorf("list the revoked family: %w", err)
	}
	return nil
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
			// FamilyRevoked counts the family's listing: a token saved after
			// its family was revoked has no revoked_at of its own.
			FamilyRevoked int `db:"family_revoked"`
		}
		err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT t.family_id, t.client_id, t.user_id, t.scope, t.expires_at, t.used_at, t.revoked_at,
			(SELECT COUNT(*) FROM oauth_revoked_families f WHERE f.family_id = t.family_id) AS family_revoked
			FROM oauth_refresh_tokens t WHERE t.token_hash = ?`), hash)
		if sqldb.IsNoRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if r.RevokedAt != nil || r.FamilyRevoked > 0 || !now.Before(r.ExpiresAt) {
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
			return revokeFamily(ctx, tx, r.FamilyID, now)
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

func (s *Store) RevokeRefreshFamily(ctx context.Context, clientID, hash string, now time.Time) (string, error) {
	var family string
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		family = ""
		err := tx.GetContext(ctx, &family, tx.Rebind(`SELECT family_id FROM oauth_refresh_tokens WHERE token_hash = ? AND client_id = ?`), hash, clientID)
		if sqldb.IsNoRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return revokeFamily(ctx, tx, family, now)
	})
	if err != nil {
		return "", err
	}
	return family, nil
}

func (s *Store) RevokeAccessToken(ctx context.Context, jti string, expiresAt time.Time) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO oauth_revoked_tokens (jti, expires_at) VALUES (?, ?) ON CONFLICT (jti) DO NOTHING`), jti, expiresAt.UTC())
	return err
}

func (s *Store) AccessTokenRevoked(ctx context.Context, jti, family string) (bool, error) {
	// One round trip, two primary-key lookups: this runs on the hot path.
	var n int
	err := s.db.GetContext(ctx, &n, s.db.Rebind(`SELECT (SELECT COUNT(*) FROM oauth_revoked_tokens WHERE jti = ?) + (SELECT COUNT(*) FROM oauth_revoked_families WHERE family_id = ?)`), jti, family)
	return n > 0, err
}
