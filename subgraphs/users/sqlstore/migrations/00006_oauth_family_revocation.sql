-- +goose Up
-- The refresh-token family an authorization code started, recorded when the
-- code is used: a replay of the code revokes that family (RFC 6749 §4.1.2).
ALTER TABLE oauth_codes ADD COLUMN family_id TEXT NULL;

-- Revoked refresh-token families, until every token of theirs has expired. A
-- listed family's refresh tokens (even one saved after the revocation) and its
-- access tokens (by their sid claim) are refused.
CREATE TABLE oauth_revoked_families (
    family_id  TEXT PRIMARY KEY,
    revoked_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE oauth_revoked_families;
ALTER TABLE oauth_codes DROP COLUMN family_id;
