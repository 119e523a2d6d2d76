package sqlstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/access/sqlstore"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
)

func doc(id, body string) access.Document {
	return access.Document{ID: id, SHA256: access.DocumentHash(body), Body: body}
}

// Trusted documents and the per-key trusted-documents-only setting, on SQLite
// and PostgreSQL.
func TestTrustedDocuments(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db)
		a, b := doc("a", "query A { __typename }"), doc("b", "query B { __typename }")
		if n, err := st.AddDocuments(ctx, []access.Document{a, b}); n != 2 || err != nil {
			t.Fatalf("add: %d, %v", n, err)
		}
		// Adding the same manifest again adds nothing; a new document is added.
		c := doc("c", "query C { __typename }")
		if n, err := st.AddDocuments(ctx, []access.Document{a, b, c}); n != 1 || err != nil {
			t.Fatalf("add again: %d, %v", n, err)
		}
		// An ID with another text refuses the whole manifest.
		d := doc("d", "query D { __typename }")
		if n, err := st.AddDocuments(ctx, []access.Document{d, doc("a", "query Changed { __typename }")}); !errors.Is(err, access.ErrDocumentConflict) {
			t.Fatalf("a changed text: %d, %v", n, err)
		}
		if _, err := st.DocumentByID(ctx, "d"); !errors.Is(err, access.ErrDocumentNotFound) {
			t.Fatalf("a refused manifest added d: %v", err)
		}
		if got, err := st.DocumentByID(ctx, "b"); err != nil || got != b {
			t.Fatalf("by ID: %+v, %v", got, err)
		}
		if got, err := st.DocumentBySHA256(ctx, c.SHA256); err != nil || got != c {
			t.Fatalf("by hash: %+v, %v", got, err)
		}
		if _, err := st.DocumentBySHA256(ctx, access.DocumentHash("nope")); !errors.Is(err, access.ErrDocumentNotFound) {
			t.Fatalf("unknown hash: %v", err)
		}

		svc := access.NewService(st, nil)
		k, plain, err := svc.CreateKey(ctx, "app", nil)
		if err != nil {
			t.Fatal(err)
		}
		if k.TrustedDocumentsOnly {
			t.Fatal("a new key runs only trusted documents")
		}
		if got, err := svc.SetTrustedDocumentsOnly(ctx, plain, true); err != nil || !got.TrustedDocumentsOnly {
			t.Fatalf("set: %+v, %v", got, err)
		}
		if got, err := svc.FindKey(ctx, k.ID); err != nil || !got.TrustedDocumentsOnly {
			t.Fatalf("stored: %+v, %v", got, err)
		}
		if _, err := svc.SetTrustedDocumentsOnly(ctx, "key_nope", true); !errors.Is(err, access.ErrKeyNotFound) {
			t.Fatalf("unknown key: %v", err)
		}
	})
}
