-- +goose Up
-- A cigar's own aliases ("PSD4" for Partagás Serie D No. 4), a JSON array of
-- strings like brands.aliases: resolve reads them as names of the whole cigar.
ALTER TABLE cigars ADD COLUMN aliases TEXT NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE cigars DROP COLUMN aliases;
