-- +goose Up
-- Signed fulfillment callbacks: each client's signing secret (sealed, like
-- gateway credentials; the previous one is kept during a rotation), the
-- transactional outbox of events, every delivery attempt, and the lease that
-- lets one process of a SQLite store send.
ALTER TABLE service_clients ADD COLUMN signing_ciphertext TEXT NULL;
ALTER TABLE service_clients ADD COLUMN signing_key TEXT NULL;
ALTER TABLE service_clients ADD COLUMN signing_kek TEXT NULL;
ALTER TABLE service_clients ADD COLUMN previous_signing_ciphertext TEXT NULL;
ALTER TABLE service_clients ADD COLUMN previous_signing_key TEXT NULL;
ALTER TABLE service_clients ADD COLUMN previous_signing_kek TEXT NULL;
ALTER TABLE service_clients ADD COLUMN previous_signing_expires_at BIGINT NULL;
ALTER TABLE service_clients ADD COLUMN callbacks_disabled_at BIGINT NULL;

CREATE TABLE callback_events (
    id              TEXT    PRIMARY KEY,
    client_id       TEXT    NOT NULL,
    type            TEXT    NOT NULL,
    subject_id      TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    state           TEXT    NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT  NOT NULL,
    lease_until     BIGINT  NULL,
    last_error      TEXT    NULL,
    created_at      BIGINT  NOT NULL,
    delivered_at    BIGINT  NULL
);
CREATE INDEX callback_events_due ON callback_events (state, next_attempt_at);
CREATE INDEX callback_events_client ON callback_events (client_id, created_at);

CREATE TABLE callback_attempts (
    id          TEXT    PRIMARY KEY,
    event_id    TEXT    NOT NULL REFERENCES callback_events (id),
    attempt     INTEGER NOT NULL,
    started_at  BIGINT  NOT NULL,
    duration_ms BIGINT  NOT NULL,
    status      INTEGER NULL,
    error       TEXT    NULL
);
CREATE INDEX callback_attempts_event ON callback_attempts (event_id, attempt);

CREATE TABLE worker_leases (
    name   TEXT   PRIMARY KEY,
    holder TEXT   NOT NULL,
    until  BIGINT NOT NULL
);

-- +goose Down
DROP TABLE worker_leases;
DROP TABLE callback_attempts;
DROP TABLE callback_events;
