-- +goose Up
-- version grows with every write to the catalog: search indexes of every replica
-- poll it and rebuild when it moves.
CREATE TABLE catalog_version (
    id      INTEGER PRIMARY KEY,
    version BIGINT NOT NULL
);
INSERT INTO catalog_version (id, version) VALUES (1, 0);

-- +goose Down
DROP TABLE catalog_version;
