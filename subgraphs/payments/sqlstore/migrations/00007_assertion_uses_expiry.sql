-- +goose Up
-- Each request with an assertion forgets its client's expired assertion IDs:
-- searched by client and expiry, not walked through every live ID of the
-- client.
CREATE INDEX assertion_uses_expiry ON assertion_uses (client_id, expires_at);

-- +goose Down
DROP INDEX assertion_uses_expiry;
