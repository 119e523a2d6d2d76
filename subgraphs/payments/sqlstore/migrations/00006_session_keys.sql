-- +goose Up
-- The Idempotency-Key of each payment session's create, written in the
-- create's own transaction: a retry finds the create that used its key and
-- answers as it did, with the hosted URL's token (kept only until the key
-- expires) and the session's document as it was then. Keys of the other
-- payments routes stay in the access store.
CREATE TABLE payment_session_keys (
    client_id    TEXT   NOT NULL,
    idem_key     TEXT   NOT NULL,
    request_hash TEXT   NOT NULL,
    session_id   TEXT   NOT NULL,
    token        TEXT   NOT NULL,
    document     TEXT   NOT NULL,
    expires_at   BIGINT NOT NULL,
    PRIMARY KEY (client_id, idem_key)
);
CREATE INDEX payment_session_keys_expiry ON payment_session_keys (expires_at);

-- +goose Down
DROP TABLE payment_session_keys;
