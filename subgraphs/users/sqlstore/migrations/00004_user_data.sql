-- +goose Up
CREATE TABLE collections (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    name       TEXT NOT NULL,
    type       TEXT NOT NULL,
    private    BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at TEXT NOT NULL,
    items      TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX collections_user ON collections (user_id, id);

CREATE TABLE humidors (
    id      TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    name    TEXT NOT NULL,
    items   TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX humidors_user ON humidors (user_id, id);

-- cigar_id and venue_id are public IDs of the catalog's and the venues
-- subgraph's objects: those subgraphs own them.
CREATE TABLE smoke_sessions (
    id               TEXT PRIMARY KEY,
    user_id          TEXT NOT NULL,
    cigar_id         TEXT NULL,
    venue_id         TEXT NULL,
    started_at       TEXT NOT NULL,
    ended_at         TEXT NULL,
    duration_seconds INTEGER NULL,
    rating           DOUBLE PRECISION NULL,
    note             TEXT NULL,
    featured         BOOLEAN NOT NULL DEFAULT FALSE,
    visibility       TEXT NOT NULL DEFAULT 'public',
    created_at       TEXT NOT NULL
);
CREATE INDEX smoke_sessions_user ON smoke_sessions (user_id, id);

CREATE TABLE checkins (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL,
    venue_id      TEXT NOT NULL,
    checked_in_at TEXT NOT NULL
);
CREATE INDEX checkins_user ON checkins (user_id, id);

-- +goose Down
DROP TABLE checkins;
DROP TABLE smoke_sessions;
DROP TABLE humidors;
DROP TABLE collections;
