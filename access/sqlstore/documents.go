package sqlstore

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/sqldb"
)

var _ access.DocumentStore = (*Store)(nil)

type docRow struct {
	ID     string `db:"id"`
	SHA256 string `db:"sha256"`
	Body   string `db:"body"`
	Name   string `db:"name"`
}

func (r docRow) doc() access.Document {
	return access.Document{ID: r.ID, SHA256: r.SHA256, Body: r.Body, Name: r.Name}
}

func (s *Store) AddDocuments(ctx context.Context, docs []access.Document) (int, error) {
	added := 0
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		added = 0
		for _, d := range docs {
			var have docRow
			err := tx.GetContext(ctx, &have, tx.Rebind(`SELECT id, sha256, body, name FROM trusted_documents WHERE id = ?`), d.ID)
			switch {
			case err == nil && have.Body == d.Body:
				continue
			case err == nil:
				return fmt.Errorf("%q: %w", d.ID, access.ErrDocumentConflict)
			case !sqldb.IsNoRows(err):
				return err
			}
			if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO trusted_documents (id, sha256, body, name) VALUES (?, ?, ?, ?)`),
				d.ID, d.SHA256, d.Body, d.Name); err != nil {
				return err
			}
			added++
		}
		return nil
	})
	return added, err
}

func (s *Store) DocumentByID(ctx context.Context, id string) (access.Document, error) {
	return s.document(ctx, `SELECT id, sha256, body, name FROM trusted_documents WHERE id = ?`, id)
}

func (s *Store) DocumentBySHA256(ctx context.Context, hash string) (access.Document, error) {
	// Several IDs may share one text (two manifests naming it differently):
	// any of them is that text.
	return s.document(ctx, `SELECT id, sha256, body, name FROM trusted_documents WHERE sha256 = ? ORDER BY id LIMIT 1`, hash)
}

func (s *Store) document(ctx context.Context, query, arg string) (access.Document, error) {
	var r docRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(query), arg)
	if sqldb.IsNoRows(err) {
		return access.Document{}, access.ErrDocumentNotFound
	}
	if err != nil {
		return access.Document{}, err
	}
	return r.doc(), nil
}
