-- +goose Up
CREATE TABLE developer_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    secret_hash  TEXT NOT NULL,
    entitlements TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMP NOT NULL,
    revoked_at   TIMESTAMP NULL
);

-- +goose Down
DROP TABLE developer_keys;
