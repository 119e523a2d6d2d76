-- +goose Up
-- The payments API: service clients, client billing accounts, a double-entry
-- ledger, resource types, offers, merchant accounts, payment sessions,
-- purchases, payment methods and auto-reload rules.
--
-- Billing accounts are rebuilt (SQLite cannot drop key_id's NOT NULL): an
-- account belongs to a developer key (its AI credits) or to a service client's
-- reference. The single-entry ledger's balances are carried over as one
-- opening transaction per account; its entries are not kept. Times are Unix
-- milliseconds; lists are JSON arrays in TEXT; booleans are 0 or 1.
CREATE TABLE accounts_v3 (
    id         TEXT   PRIMARY KEY,
    key_id     TEXT   NULL UNIQUE,
    client_id  TEXT   NULL,
    reference  TEXT   NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (client_id, reference)
);
INSERT INTO accounts_v3 (id, key_id, created_at) SELECT id, key_id, created_at FROM billing_accounts;

CREATE TABLE reservations_v3 (
    id         TEXT   PRIMARY KEY,
    account_id TEXT   NOT NULL REFERENCES accounts_v3 (id),
    amount     BIGINT NOT NULL,
    cost       BIGINT NULL,
    state      TEXT   NOT NULL,
    reference  TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
INSERT INTO reservations_v3 (id, account_id, amount, cost, state, reference, created_at, expires_at)
    SELECT id, account_id, amount, cost, state, reference, created_at, expires_at FROM credit_reservations;

-- A book holds one kind of credits of one owner (an account, or 'platform').
-- An account book's balance is the sum of its postings, kept in the same
-- transaction; the platform's books keep no balance (every paid request posts
-- to them: a kept balance would be one hot row), theirs is summed on reading.
CREATE TABLE ledger_books (
    id            TEXT   PRIMARY KEY,
    owner         TEXT   NOT NULL,
    resource_type TEXT   NOT NULL,
    kind          TEXT   NOT NULL,
    balance       BIGINT NOT NULL DEFAULT 0,
    UNIQUE (owner, resource_type, kind),
    CHECK (owner = 'platform' OR balance >= 0)
);
CREATE TABLE ledger_transactions (
    id         TEXT   PRIMARY KEY,
    kind       TEXT   NOT NULL,
    account_id TEXT   NULL,
    reference  TEXT   NOT NULL DEFAULT '',
    note       TEXT   NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL
);
CREATE INDEX ledger_transactions_account ON ledger_transactions (account_id, created_at, id);
CREATE TABLE ledger_postings (
    id             TEXT   PRIMARY KEY,
    transaction_id TEXT   NOT NULL REFERENCES ledger_transactions (id),
    book_id        TEXT   NOT NULL REFERENCES ledger_books (id),
    amount         BIGINT NOT NULL
);
CREATE INDEX ledger_postings_transaction ON ledger_postings (transaction_id);
CREATE INDEX ledger_postings_book ON ledger_postings (book_id);

-- Opening balances: available = the old balance, held = open holds.
INSERT INTO ledger_books (id, owner, resource_type, kind, balance)
    SELECT id || '/ai_credits/available', id, 'ai_credits', 'available', balance FROM billing_accounts;
INSERT INTO ledger_books (id, owner, resource_type, kind, balance)
    SELECT a.id || '/ai_credits/held', a.id, 'ai_credits', 'held',
           COALESCE((SELECT SUM(r.amount) FROM credit_reservations r WHERE r.account_id = a.id AND r.state = 'held'), 0)
    FROM billing_accounts a;
INSERT INTO ledger_books (id, owner, resource_type, kind, balance)
    VALUES ('platform/ai_credits/migrated', 'platform', 'ai_credits', 'migrated', 0);
INSERT INTO ledger_transactions (id, kind, account_id, reference, note, created_at)
    SELECT 'ltx_opening_' || id, 'opening', id, '', 'balance carried over from the single-entry ledger', created_at FROM billing_accounts;
INSERT INTO ledger_postings (id, transaction_id, book_id, amount)
    SELECT 'lpo_opening_a_' || b.owner, 'ltx_opening_' || b.owner, b.id, b.balance FROM ledger_books b WHERE b.kind = 'available';
INSERT INTO ledger_postings (id, transaction_id, book_id, amount)
    SELECT 'lpo_opening_h_' || b.owner, 'ltx_opening_' || b.owner, b.id, b.balance FROM ledger_books b WHERE b.kind = 'held';
INSERT INTO ledger_postings (id, transaction_id, book_id, amount)
    SELECT 'lpo_opening_m_' || b.owner, 'ltx_opening_' || b.owner, 'platform/ai_credits/migrated', -b.balance
    FROM ledger_books b WHERE b.kind = 'available';
INSERT INTO ledger_postings (id, transaction_id, book_id, amount)
    SELECT 'lpo_opening_n_' || b.owner, 'ltx_opening_' || b.owner, 'platform/ai_credits/migrated', -b.balance
    FROM ledger_books b WHERE b.kind = 'held';

DROP TABLE ledger_entries;
DROP TABLE credit_reservations;
DROP TABLE billing_accounts;
ALTER TABLE accounts_v3 RENAME TO billing_accounts;
ALTER TABLE reservations_v3 RENAME TO credit_reservations;
CREATE INDEX credit_reservations_held ON credit_reservations (state, expires_at);
CREATE INDEX credit_reservations_reference ON credit_reservations (account_id, reference, created_at);

CREATE TABLE service_clients (
    id                         TEXT    PRIMARY KEY,
    name                       TEXT    NOT NULL,
    key_id                     TEXT    NULL,
    callback_url               TEXT    NOT NULL DEFAULT '',
    return_urls                TEXT    NOT NULL DEFAULT '[]',
    origins                    TEXT    NOT NULL DEFAULT '[]',
    resource_types             TEXT    NOT NULL DEFAULT '[]',
    scopes                     TEXT    NOT NULL DEFAULT '[]',
    denied_actions             TEXT    NOT NULL DEFAULT '[]',
    require_assertion          INTEGER NOT NULL DEFAULT 0,
    assertion_keys             TEXT    NOT NULL DEFAULT '[]',
    secret_hash                TEXT    NOT NULL,
    previous_secret_hash       TEXT    NULL,
    previous_secret_expires_at BIGINT  NULL,
    created_at                 BIGINT  NOT NULL,
    revoked_at                 BIGINT  NULL
);

-- An assertion's jti is spent once per client; rows outlive the assertion.
CREATE TABLE assertion_uses (
    client_id  TEXT   NOT NULL,
    jti        TEXT   NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (client_id, jti)
);

CREATE TABLE resource_types (
    name        TEXT   PRIMARY KEY,
    description TEXT   NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL
);
INSERT INTO resource_types (name, description, created_at)
    VALUES ('ai_credits', 'Credits that identify and fingerprint spend', 0);

CREATE TABLE merchant_accounts (
    id                     TEXT   PRIMARY KEY,
    client_id              TEXT   NOT NULL DEFAULT '',
    name                   TEXT   NOT NULL,
    gateway                TEXT   NOT NULL,
    status                 TEXT   NOT NULL,
    credentials_ciphertext TEXT   NULL,
    credentials_key        TEXT   NULL,
    credentials_kek        TEXT   NULL,
    credentials_updated_at BIGINT NULL,
    created_at             BIGINT NOT NULL,
    updated_at             BIGINT NOT NULL
);
CREATE INDEX merchant_accounts_client ON merchant_accounts (client_id, created_at);

CREATE TABLE offers (
    id                  TEXT    PRIMARY KEY,
    client_id           TEXT    NOT NULL DEFAULT '',
    resource_type       TEXT    NOT NULL REFERENCES resource_types (name),
    name                TEXT    NOT NULL,
    quantity            BIGINT  NOT NULL,
    price               BIGINT  NOT NULL,
    currency            TEXT    NOT NULL,
    merchant_account_id TEXT    NOT NULL REFERENCES merchant_accounts (id),
    active              INTEGER NOT NULL DEFAULT 1,
    created_at          BIGINT  NOT NULL
);
CREATE INDEX offers_type ON offers (resource_type, active);

CREATE TABLE purchases (
    id                  TEXT    PRIMARY KEY,
    kind                TEXT    NOT NULL,
    client_id           TEXT    NOT NULL DEFAULT '',
    account_id          TEXT    NOT NULL REFERENCES billing_accounts (id),
    offer_id            TEXT    NOT NULL REFERENCES offers (id),
    session_id          TEXT    NULL,
    resource_type       TEXT    NOT NULL,
    quantity            BIGINT  NOT NULL,
    amount              BIGINT  NOT NULL,
    currency            TEXT    NOT NULL,
    merchant_account_id TEXT    NOT NULL,
    payment_method_id   TEXT    NULL,
    state               TEXT    NOT NULL,
    charge_id           TEXT    NULL,
    attempt_key         TEXT    NULL,
    attempts            INTEGER NOT NULL DEFAULT 0,
    failure_code        TEXT    NULL,
    failure_message     TEXT    NULL,
    lease_until         BIGINT  NULL,
    created_at          BIGINT  NOT NULL,
    updated_at          BIGINT  NOT NULL
);
CREATE INDEX purchases_work ON purchases (state, kind, lease_until);
-- At most one reload of an account is under way at a time.
CREATE UNIQUE INDEX purchases_one_open_reload ON purchases (account_id)
    WHERE kind = 'reload' AND state IN ('queued', 'processing', 'pending');

CREATE TABLE payment_sessions (
    id            TEXT   PRIMARY KEY,
    client_id     TEXT   NOT NULL,
    account_id    TEXT   NOT NULL REFERENCES billing_accounts (id),
    offer_id      TEXT   NOT NULL REFERENCES offers (id),
    purchase_id   TEXT   NOT NULL REFERENCES purchases (id),
    token_hash    TEXT   NOT NULL UNIQUE,
    return_url    TEXT   NOT NULL,
    cancel_url    TEXT   NOT NULL,
    parent_origin TEXT   NOT NULL DEFAULT '',
    state         TEXT   NOT NULL,
    expires_at    BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    redeemed_at   BIGINT NULL,
    closed_at     BIGINT NULL
);
CREATE INDEX payment_sessions_expiry ON payment_sessions (state, expires_at);

CREATE TABLE payment_methods (
    id                  TEXT    PRIMARY KEY,
    account_id          TEXT    NOT NULL REFERENCES billing_accounts (id),
    merchant_account_id TEXT    NOT NULL REFERENCES merchant_accounts (id),
    vault_ciphertext    TEXT    NOT NULL,
    vault_key           TEXT    NOT NULL,
    vault_kek           TEXT    NOT NULL,
    brand               TEXT    NOT NULL,
    last4               TEXT    NOT NULL,
    exp_month           INTEGER NOT NULL,
    exp_year            INTEGER NOT NULL,
    is_default          INTEGER NOT NULL DEFAULT 0,
    created_at          BIGINT  NOT NULL,
    deleted_at          BIGINT  NULL
);
CREATE INDEX payment_methods_account ON payment_methods (account_id, created_at);

CREATE TABLE auto_reload_rules (
    account_id        TEXT    PRIMARY KEY REFERENCES billing_accounts (id),
    client_id         TEXT    NOT NULL,
    enabled           INTEGER NOT NULL,
    threshold         BIGINT  NOT NULL DEFAULT 0,
    offer_id          TEXT    NOT NULL DEFAULT '',
    payment_method_id TEXT    NOT NULL DEFAULT '',
    failures          INTEGER NOT NULL DEFAULT 0,
    disabled_reason   TEXT    NOT NULL DEFAULT '',
    retry_after       BIGINT  NOT NULL DEFAULT 0,
    updated_at        BIGINT  NOT NULL
);

-- The sandbox gateway's card network: what it vaulted and charged, so every
-- replica answers alike and a retried charge finds the first.
CREATE TABLE sandbox_cards (
    reference  TEXT    PRIMARY KEY,
    last4      TEXT    NOT NULL,
    behaviour  TEXT    NOT NULL,
    created_at BIGINT  NOT NULL
);
CREATE TABLE sandbox_charges (
    idempotency_key TEXT   PRIMARY KEY,
    charge_id       TEXT   NOT NULL,
    reference       TEXT   NOT NULL,
    amount          BIGINT NOT NULL,
    currency        TEXT   NOT NULL,
    created_at      BIGINT NOT NULL
);

-- +goose Down
-- Billing accounts and holds keep their new shape, and the single-entry
-- ledger is not brought back: its entries were summed into opening balances.
DROP TABLE sandbox_charges;
DROP TABLE sandbox_cards;
DROP TABLE auto_reload_rules;
DROP TABLE payment_methods;
DROP TABLE payment_sessions;
DROP TABLE purchases;
DROP TABLE offers;
DROP TABLE merchant_accounts;
DROP TABLE resource_types;
DROP TABLE assertion_uses;
DROP TABLE service_clients;
DROP TABLE ledger_postings;
DROP TABLE ledger_transactions;
DROP TABLE ledger_books;
