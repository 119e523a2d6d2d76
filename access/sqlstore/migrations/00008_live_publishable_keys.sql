-- +goose Up
-- A CORS preflight reads the origins of live publishable keys: through this
-- index, not by reading every key.
CREATE INDEX developer_keys_live_publishable ON developer_keys (id) WHERE publishable AND revoked_at IS NULL;

-- +goose Down
DROP INDEX developer_keys_live_publishable;
