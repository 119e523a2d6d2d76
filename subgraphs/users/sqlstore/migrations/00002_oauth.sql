-- +goose Up
CREATE TABLE oauth_clients (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    -- secret_hash is empty for public clients (PKCE only).
    secret_hash   TEXT NOT NULL DEFAULT '',
    redirect_uris TEXT NOT NULL,
    public        BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    TIMESTAMP NOT NULL
);

-- Access-token signing keys. Several may be live at once (two replicas starting
-- together may each make one); the newest signs, every unretired one verifies.
CREATE TABLE oauth_signing_keys (
    kid         TEXT PRIMARY KEY,
    private_pem TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    retired_at  TIMESTAMP NULL
);

-- +goose Down
DROP TABLE oauth_signing_keys;
DROP TABLE oauth_clients;
