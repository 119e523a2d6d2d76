-- +goose Up
-- Idempotency records of paid requests, per developer key (scope). Times are
-- Unix milliseconds: they compare the same way in SQLite and PostgreSQL.
CREATE TABLE idempotency_records (
    scope        TEXT    NOT NULL,
    idem_key     TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    done         BOOLEAN NOT NULL DEFAULT FALSE,
    locked_until BIGINT  NOT NULL,
    expires_at   BIGINT  NOT NULL,
    status       INTEGER NOT NULL DEFAULT 0,
    headers      TEXT    NOT NULL DEFAULT '{}',
    body         TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (scope, idem_key)
);
CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at);

-- +goose Down
DROP TABLE idempotency_records;
