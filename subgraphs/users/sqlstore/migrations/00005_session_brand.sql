-- +goose Up
-- The brand of a session's cigar (a catalog brand ID, recorded when the session
-- is), so that a brand's feed is one query of the users subgraph's own table.
ALTER TABLE smoke_sessions ADD COLUMN brand_id TEXT NULL;
CREATE INDEX smoke_sessions_venue_feed ON smoke_sessions (venue_id, created_at, id);
CREATE INDEX smoke_sessions_brand_feed ON smoke_sessions (brand_id, created_at, id);

-- +goose Down
DROP INDEX smoke_sessions_brand_feed;
DROP INDEX smoke_sessions_venue_feed;
ALTER TABLE smoke_sessions DROP COLUMN brand_id;
