-- +goose Up
CREATE TABLE brands (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    country    TEXT NOT NULL,
    aliases    TEXT NOT NULL DEFAULT '[]',
    created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE cigars (
    id         TEXT PRIMARY KEY,
    number     INTEGER NOT NULL UNIQUE,
    brand_id   TEXT NOT NULL REFERENCES brands (id),
    name       TEXT NOT NULL,
    origin     TEXT NOT NULL,
    wrapper    TEXT NOT NULL DEFAULT '[]',
    binder     TEXT NOT NULL DEFAULT '[]',
    filler     TEXT NOT NULL DEFAULT '[]',
    created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (brand_id, name)
);
CREATE INDEX cigars_brand ON cigars (brand_id, id);

CREATE TABLE products (
    id         TEXT PRIMARY KEY,
    gtin       TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    synthetic  BOOLEAN NOT NULL DEFAULT FALSE,
    published  BOOLEAN NOT NULL DEFAULT TRUE,
    created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE product_contents (
    product_id TEXT NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    cigar_id   TEXT NOT NULL REFERENCES cigars (id),
    quantity   INTEGER NOT NULL,
    PRIMARY KEY (product_id, cigar_id)
);

-- +goose Down
DROP TABLE product_contents;
DROP TABLE products;
DROP TABLE cigars;
DROP TABLE brands;
