-- +goose Up
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL DEFAULT '',
    display_name  TEXT NOT NULL,
    first_name    TEXT NULL,
    last_name     TEXT NULL,
    image_url     TEXT NULL,
    cover_url     TEXT NULL,
    website       TEXT NULL,
    bio           TEXT NULL,
    private       BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE users;
