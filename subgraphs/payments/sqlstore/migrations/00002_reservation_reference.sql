-- +goose Up
-- A retried paid request looks up its earlier attempt's hold by reference.
CREATE INDEX credit_reservations_reference ON credit_reservations (account_id, reference, created_at);

-- +goose Down
DROP INDEX credit_reservations_reference;
