-- +goose Up
-- Band evidence: reference fingerprints of catalog cigars (by public ID; the
-- catalog owns cigars). evidence_version moves with every write; recognition
-- indexes poll it.
CREATE TABLE evidence (
    id          TEXT   PRIMARY KEY,
    cigar_id    TEXT   NOT NULL,
    source      TEXT   NOT NULL,
    fingerprint TEXT   NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX evidence_cigar ON evidence (cigar_id);

CREATE TABLE evidence_version (
    id      INTEGER PRIMARY KEY,
    version BIGINT  NOT NULL
);
INSERT INTO evidence_version (id, version) VALUES (1, 0);

-- +goose Down
DROP TABLE evidence_version;
DROP TABLE evidence;
