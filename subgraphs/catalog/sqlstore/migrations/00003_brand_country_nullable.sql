-- +goose Up
-- A brand's country may be unknown: an import that does not give it, for a
-- brand whose cigars disagree on their origin, stores NULL rather than a guess.
-- SQLite cannot drop NOT NULL in place: the column is copied into a nullable one
-- (portable SQL, PostgreSQL and SQLite 3.35+ alike).
ALTER TABLE brands ADD COLUMN country_known TEXT NULL;
UPDATE brands SET country_known = country;
ALTER TABLE brands DROP COLUMN country;
ALTER TABLE brands RENAME COLUMN country_known TO country;

-- +goose Down
ALTER TABLE brands ADD COLUMN country_known TEXT NOT NULL DEFAULT '';
UPDATE brands SET country_known = COALESCE(country, '');
ALTER TABLE brands DROP COLUMN country;
ALTER TABLE brands RENAME COLUMN country_known TO country;
