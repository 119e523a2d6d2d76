-- +goose Up
-- A key's own quotas, over the platform's defaults (NULL: the default).
ALTER TABLE developer_keys ADD COLUMN rps_limit INTEGER;
ALTER TABLE developer_keys ADD COLUMN cost_per_minute_limit INTEGER;

-- +goose Down
ALTER TABLE developer_keys DROP COLUMN cost_per_minute_limit;
ALTER TABLE developer_keys DROP COLUMN rps_limit;
