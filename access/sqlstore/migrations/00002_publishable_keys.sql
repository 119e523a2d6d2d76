-- +goose Up
-- Publishable keys are for websites: they read only public routes and only from
-- their origins (space-separated, normalised scheme://host[:port]).
ALTER TABLE developer_keys ADD COLUMN publishable BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE developer_keys ADD COLUMN origins TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE developer_keys DROP COLUMN origins;
ALTER TABLE developer_keys DROP COLUMN publishable;
