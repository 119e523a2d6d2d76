-- +goose Up
-- Authorization codes: single use, short-lived, kept by hash.
CREATE TABLE oauth_codes (
    code_hash      TEXT PRIMARY KEY,
    client_id      TEXT NOT NULL,
    user_id        TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    scope          TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    expires_at     TIMESTAMP NOT NULL,
    used_at        TIMESTAMP NULL
);

-- Refresh tokens, kept by hash. Each refresh replaces the token with a new one
-- of the same family; presenting a used one again revokes the whole family.
CREATE TABLE oauth_refresh_tokens (
    token_hash  TEXT PRIMARY KEY,
    family_id   TEXT NOT NULL,
    client_id   TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    scope       TEXT NOT NULL,
    expires_at  TIMESTAMP NOT NULL,
    used_at     TIMESTAMP NULL,
    revoked_at  TIMESTAMP NULL
);
CREATE INDEX oauth_refresh_family ON oauth_refresh_tokens (family_id);

-- Revoked access tokens by jti, until they would have expired anyway.
CREATE TABLE oauth_revoked_tokens (
    jti        TEXT PRIMARY KEY,
    expires_at TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE oauth_revoked_tokens;
DROP TABLE oauth_refresh_tokens;
DROP TABLE oauth_codes;
