-- +goose Up
CREATE TABLE venues (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    city       TEXT NOT NULL,
    country    TEXT NOT NULL,
    website    TEXT NULL,
    created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE events (
    id        TEXT PRIMARY KEY,
    venue_id  TEXT NOT NULL REFERENCES venues (id),
    -- brand_id is a catalog brand's public ID; the catalog owns the brand.
    brand_id  TEXT NULL,
    name      TEXT NOT NULL,
    -- starts_key is starts_at as fixed-width RFC 3339 text: the keyset order.
    starts_key TEXT NOT NULL,
    starts_at TIMESTAMP NOT NULL,
    ends_at   TIMESTAMP NOT NULL
);
CREATE INDEX events_order ON events (starts_key, id);
CREATE INDEX events_venue ON events (venue_id, starts_key, id);
CREATE INDEX events_brand ON events (brand_id, starts_key, id);

-- +goose Down
DROP TABLE events;
DROP TABLE venues;
