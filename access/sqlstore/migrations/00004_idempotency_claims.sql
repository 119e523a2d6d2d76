-- +goose Up
-- The claim token of the request holding a key in flight: only that request
-- may finish or release it (a request that outlived its lease cannot overwrite
-- the response of the one that took the key over).
ALTER TABLE idempotency_records ADD COLUMN claim TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE idempotency_records DROP COLUMN claim;
