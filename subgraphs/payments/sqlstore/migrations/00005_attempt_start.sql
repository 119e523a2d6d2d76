-- +goose Up
-- When a purchase's current charge attempt began: the reconciler repeats an
-- attempt whose outcome is unknown only while gateways still remember its
-- idempotency key (Stripe keeps them 24 hours).
ALTER TABLE purchases ADD COLUMN attempt_started_at BIGINT NULL;

-- +goose Down
ALTER TABLE purchases DROP COLUMN attempt_started_at;
