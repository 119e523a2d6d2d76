-- +goose Up
-- Trusted documents (GraphQL operations registered from a client's build
-- manifest, `vitola graphql documents add`), by the ID the manifest gives them
-- and by the SHA-256 of their text; and the per-key setting that lets a key
-- run only them. (Numbered 00007, leaving room for other changes of the store.)
CREATE TABLE trusted_documents (
    id         TEXT      NOT NULL PRIMARY KEY,
    sha256     TEXT      NOT NULL,
    body       TEXT      NOT NULL,
    name       TEXT      NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX trusted_documents_sha256 ON trusted_documents (sha256);
ALTER TABLE developer_keys ADD COLUMN trusted_documents_only BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE developer_keys DROP COLUMN trusted_documents_only;
DROP TABLE trusted_documents;
