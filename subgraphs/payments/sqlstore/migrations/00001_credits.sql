-- +goose Up
-- Credits: one billing account per developer key. balance is the sum of the
-- account's ledger entries, kept in the same transaction as each entry. Times are
-- Unix milliseconds.
CREATE TABLE billing_accounts (
    id         TEXT   PRIMARY KEY,
    key_id     TEXT   NOT NULL UNIQUE,
    balance    BIGINT NOT NULL DEFAULT 0 CHECK (balance >= 0),
    created_at BIGINT NOT NULL
);

CREATE TABLE credit_reservations (
    id         TEXT   PRIMARY KEY,
    account_id TEXT   NOT NULL REFERENCES billing_accounts (id),
    amount     BIGINT NOT NULL,
    cost       BIGINT NULL,
    state      TEXT   NOT NULL,
    reference  TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX credit_reservations_held ON credit_reservations (state, expires_at);

CREATE TABLE ledger_entries (
    id             TEXT   PRIMARY KEY,
    account_id     TEXT   NOT NULL REFERENCES billing_accounts (id),
    kind           TEXT   NOT NULL,
    amount         BIGINT NOT NULL,
    reservation_id TEXT   NULL,
    note           TEXT   NOT NULL DEFAULT '',
    created_at     BIGINT NOT NULL
);
CREATE INDEX ledger_entries_account ON ledger_entries (account_id, created_at, id);

-- +goose Down
DROP TABLE ledger_entries;
DROP TABLE credit_reservations;
DROP TABLE billing_accounts;
