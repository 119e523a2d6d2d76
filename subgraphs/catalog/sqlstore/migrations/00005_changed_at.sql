-- +goose Up
-- changed_at is the catalog version whose write last changed the row: search
-- indexes apply the rows changed after the version they hold instead of
-- rebuilding. Rows written before this migration count as changed at version 0,
-- which every index built since holds. Brands and cigars are never deleted, so
-- the rows are the whole change log.
ALTER TABLE brands ADD COLUMN changed_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE cigars ADD COLUMN changed_at BIGINT NOT NULL DEFAULT 0;
CREATE INDEX brands_changed_at ON brands (changed_at);
CREATE INDEX cigars_changed_at ON cigars (changed_at);

-- +goose Down
DROP INDEX cigars_changed_at;
DROP INDEX brands_changed_at;
ALTER TABLE cigars DROP COLUMN changed_at;
ALTER TABLE brands DROP COLUMN changed_at;
