// Package sqlstore keeps the catalog in the catalog subgraph's own SQL store.
package sqlstore

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/catalog"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the catalog store's goose migrations.
var Migrations, _ = fs.Sub(migrationFiles, "migrations")

// StoreName is the catalog's SQLite file and PostgreSQL schema name.
const StoreName = "catalog"

// Store implements catalog.Store.
type Store struct{ db *sqldb.DB }

var _ catalog.Store = (*Store)(nil)

// Open opens and migrates the catalog store.
func Open(ctx context.Context, cfg sqldb.Config) (*Store, error) {
	db, err := sqldb.Open(ctx, cfg, StoreName, Migrations)
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// New wraps an open store.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

func (s *Store) Close() error                   { return s.db.Close() }
func (s *Store) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

type brandRow struct {
	ID      string  `db:"id"`
	Name    string  `db:"name"`
	Country *string `db:"country"`
	Aliases string  `db:"aliases"`
}

func (r brandRow) brand() (*catalog.Brand, error) {
	b := &catalog.Brand{ID: r.ID, Name: r.Name, Country: r.Country}
	if err := json.Unmarshal([]byte(r.Aliases), &b.Aliases); err != nil {
		return nil, fmt.Errorf("brand %s aliases: %w", r.ID, err)
	}
	return b, nil
}

const brandCols = `id, name, country, aliases`

func (s *Store) Brand(ctx context.Context, id string) (*catalog.Brand, error) {
	bs, err := s.brands(ctx, `SELECT `+brandCols+` FROM brands WHERE id = ?`, id)
	return first(bs, err)
}

func (s *Store) BrandsByIDs(ctx context.Context, ids []string) ([]*catalog.Brand, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q, args, err := sqlx.In(`SELECT `+brandCols+` FROM brands WHERE id IN (?)`, ids)
	if err != nil {
		return nil, err
	}
	return s.brands(ctx, q, args...)
}

func (s *Store) Brands(ctx context.Context, p catalog.Page) ([]*catalog.Brand, error) {
	cond, args, tail := p.Keyset("id")
	return s.brands(ctx, `SELECT `+brandCols+` FROM brands WHERE `+cond+tail, args...)
}

func (s *Store) brands(ctx context.Context, q string, args ...any) ([]*catalog.Brand, error) {
	var rows []brandRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("query brands: %w", err)
	}
	out := make([]*catalog.Brand, 0, len(rows))
	for _, r := range rows {
		b, err := r.brand()
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

type cigarRow struct {
	ID      string `db:"id"`
	Number  int    `db:"number"`
	BrandID string `db:"brand_id"`
	Name    string `db:"name"`
	Origin  string `db:"origin"`
	Wrapper string `db:"wrapper"`
	Binder  string `db:"binder"`
	Filler  string `db:"filler"`
	Aliases string `db:"aliases"`
}

const cigarCols = `id, number, brand_id, name, origin, wrapper, binder, filler, aliases`

func (r cigarRow) cigar() (*catalog.Cigar, error) {
	c := &catalog.Cigar{ID: r.ID, Number: r.Number, BrandID: r.BrandID, Name: r.Name, Origin: r.Origin}
	for _, f := range []struct {
		raw string
		dst *[]catalog.Component
	}{{r.Wrapper, &c.Wrapper}, {r.Binder, &c.Binder}, {r.Filler, &c.Filler}} {
		if err := json.Unmarshal([]byte(f.raw), f.dst); err != nil {
			return nil, fmt.Errorf("cigar %s components: %w", r.ID, err)
		}
		if *f.dst == nil {
			*f.dst = []catalog.Component{} // always present, empty when none
		}
	}
	if err := json.Unmarshal([]byte(r.Aliases), &c.Aliases); err != nil {
		return nil, fmt.Errorf("cigar %s aliases: %w", r.ID, err)
	}
	return c, nil
}

func (s *Store) Cigar(ctx context.Context, id string) (*catalog.Cigar, error) {
	cs, err := s.cigars(ctx, `SELECT `+cigarCols+` FROM cigars WHERE id = ?`, id)
	return first(cs, err)
}

func (s *Store) CigarsByIDs(ctx context.Context, ids []string) ([]*catalog.Cigar, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q, args, err := sqlx.In(`SELECT `+cigarCols+` FROM cigars WHERE id IN (?)`, ids)
	if err != nil {
		return nil, err
	}
	return s.cigars(ctx, q, args...)
}

func (s *Store) CigarsOfBrand(ctx context.Context, brandID string, p catalog.Page) ([]*catalog.Cigar, error) {
	cond, args, tail := p.Keyset("id")
	return s.cigars(ctx, `SELECT `+cigarCols+` FROM cigars WHERE brand_id = ? AND `+cond+tail, append([]any{brandID}, args...)...)
}

func (s *Store) cigars(ctx context.Context, q string, args ...any) ([]*catalog.Cigar, error) {
	var rows []cigarRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("query cigars: %w", err)
	}
	out := make([]*catalog.Cigar, 0, len(rows))
	for _, r := range rows {
		c, err := r.cigar()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

type productRow struct {
	ID        string `db:"id"`
	GTIN      string `db:"gtin"`
	Name      string `db:"name"`
	Kind      string `db:"kind"`
	Synthetic bool   `db:"synthetic"`
	Published bool   `db:"published"`
}

const productCols = `id, gtin, name, kind, synthetic, published`

// Products answer only when published: unpublished ones are invisible publicly.
func (s *Store) Product(ctx context.Context, id string) (*catalog.Product, error) {
	ps, err := s.products(ctx, `SELECT `+productCols+` FROM products WHERE id = ? AND published = ?`, id, true)
	return first(ps, err)
}

func (s *Store) ProductByGTIN(ctx context.Context, gtin string) (*catalog.Product, error) {
	ps, err := s.products(ctx, `SELECT `+productCols+` FROM products WHERE gtin = ? AND published = ?`, gtin, true)
	return first(ps, err)
}

func (s *Store) Products(ctx context.Context, p catalog.Page) ([]*catalog.Product, error) {
	cond, args, tail := p.Keyset("id")
	return s.products(ctx, `SELECT `+productCols+` FROM products WHERE published = ? AND `+cond+tail, append([]any{true}, args...)...)
}

func (s *Store) products(ctx context.Context, q string, args ...any) ([]*catalog.Product, error) {
	var rows []productRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("query products: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([]*catalog.Product, len(rows))
	byID := map[string]*catalog.Product{}
	pids := make([]string, len(rows))
	for i, r := range rows {
		out[i] = &catalog.Product{ID: r.ID, GTIN: r.GTIN, Name: r.Name, Kind: r.Kind, Synthetic: r.Synthetic, Published: r.Published, Contents: []catalog.ProductContent{}}
		byID[r.ID] = out[i]
		pids[i] = r.ID
	}
	cq, args2, err := sqlx.In(`SELECT product_id, cigar_id, quantity FROM product_contents WHERE product_id IN (?) ORDER BY product_id, cigar_id`, pids)
	if err != nil {
		return nil, err
	}
	var contents []struct {
		ProductID string `db:"product_id"`
		CigarID   string `db:"cigar_id"`
		Quantity  int    `db:"quantity"`
	}
	if err := s.db.SelectContext(ctx, &contents, s.db.Rebind(cq), args2...); err != nil {
		return nil, fmt.Errorf("query product contents: %w", err)
	}
	for _, c := range contents {
		p := byID[c.ProductID]
		p.Contents = append(p.Contents, catalog.ProductContent{CigarID: c.CigarID, Quantity: c.Quantity})
	}
	return out, nil
}

// Write runs fn in one transaction and moves the catalog's version once; the
// brands and cigars it writes are marked changed at the new version.
func (s *Store) Write(ctx context.Context, fn func(w catalog.Writer) error) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		// Every replica's search index polls the version and applies the rows
		// changed since the one it holds. Moving it first holds the version row's
		// lock until commit, so writers commit in version order: a reader that
		// sees version v sees every row changed at v or before, and no row
		// committed later is marked v or before.
		w := &writer{tx: tx, stmts: map[string]*sqlx.Stmt{}}
		if err := tx.GetContext(ctx, &w.version, `UPDATE catalog_version SET version = version + 1 WHERE id = 1 RETURNING version`); err != nil {
			return fmt.Errorf("move the catalog version: %w", err)
		}
		if err := s.db.Notify(ctx, tx, changesChannel); err != nil { // Watch
			return err
		}
		if s.db.Dialect == sqldb.SQLite {
			// The pages a write changes stay in memory until it commits: with
			// SQLite's default cache (2 MiB) an import of 1,000 cigars into a
			// large catalog spilled them to the WAL, many several times, before
			// writing them at commit. The cache is the connection's: it goes
			// back to the default when the write ends, committed or not.
			if _, err := tx.ExecContext(ctx, `PRAGMA cache_size = -`+writeCacheKiB); err != nil {
				return fmt.Errorf("write cache: %w", err)
			}
			defer tx.ExecContext(context.WithoutCancel(ctx), `PRAGMA cache_size = -2000`)
		}
		return fn(w)
	})
}

// writeCacheKiB is SQLite's page cache during a write: room for the pages an
// import of tens of thousands of cigars changes.
const writeCacheKiB = "65536"

// writer implements catalog.Writer inside a transaction that moved the
// catalog's version to version.
type writer struct {
	tx      *sqlx.Tx
	version int64
	// stmts are the statements prepared in this transaction, by query: an
	// import runs each once per cigar, and SQLite parsing them anew each time
	// took a third of its CPU.
	stmts map[string]*sqlx.Stmt
	// next is the number the next new cigar gets (0 until the first): writers
	// run one at a time (the version row's lock), so it is counted here rather
	// than read from the table for every new cigar.
	next int
}

// stmt is query prepared once in the write's transaction (closed with it).
func (w *writer) stmt(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	st, err := w.tx.PreparexContext(ctx, w.tx.Rebind(query))
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	w.stmts[query] = st
	return st, nil
}

// exec runs a prepared statement.
func (w *writer) exec(ctx context.Context, query string, args ...any) error {
	st, err := w.stmt(ctx, query)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

// get runs a prepared query of one row into dst.
func (w *writer) get(ctx context.Context, dst any, query string, args ...any) error {
	st, err := w.stmt(ctx, query)
	if err != nil {
		return err
	}
	return st.GetContext(ctx, dst, args...)
}

func (w *writer) BrandByName(ctx context.Context, name string) (*catalog.Brand, error) {
	var r brandRow
	err := w.get(ctx, &r, `SELECT `+brandCols+` FROM brands WHERE name = ?`, name)
	if sqldb.IsNoRows(err) {
		return nil, catalog.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return r.brand()
}

func (w *writer) UpsertBrand(ctx context.Context, b *catalog.Brand) error {
	aliases, _ := json.Marshal(nonNil(b.Aliases))
	err := w.exec(ctx, `INSERT INTO brands (id, name, country, aliases, changed_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, country = excluded.country, aliases = excluded.aliases,
		changed_at = excluded.changed_at`,
		b.ID, b.Name, b.Country, string(aliases), w.version)
	if err != nil {
		return fmt.Errorf("upsert brand %q: %w", b.Name, err)
	}
	return nil
}

// batchRows is how many rows one statement of UpsertCigars or
// UpsertProducts writes: 100 cigars are 1,000 parameters, well within
// SQLite's 32,766 and PostgreSQL's 65,535. One statement of many rows rather
// than one a row: an import of 1,000 cigars on PostgreSQL made 5,000 round
// trips.
const batchRows = 100

func (w *writer) UpsertCigar(ctx context.Context, c *catalog.Cigar) (bool, error) {
	created, err := w.UpsertCigars(ctx, []*catalog.Cigar{c})
	if err != nil {
		return false, err
	}
	return created[0], nil
}

func (w *writer) UpsertCigars(ctx context.Context, cs []*catalog.Cigar) ([]bool, error) {
	created := make([]bool, 0, len(cs))
	for batch := range slices.Chunk(cs, batchRows) {
		c, err := w.upsertCigars(ctx, batch)
		if err != nil {
			return nil, err
		}
		created = append(created, c...)
	}
	return created, nil
}

// upsertCigars upserts up to batchRows cigars: it reads which exist (their
// numbers and aliases), numbers the new ones and writes them all in one
// statement.
func (w *writer) upsertCigars(ctx context.Context, cs []*catalog.Cigar) ([]bool, error) {
	ids, err := distinctIDs(cs, func(c *catalog.Cigar) string { return c.ID }, "cigar")
	if err != nil {
		return nil, err
	}
	var rows []struct {
		ID      string `db:"id"`
		Number  int    `db:"number"`
		Aliases string `db:"aliases"`
	}
	if err := w.selectRows(ctx, &rows, `SELECT id, number, aliases FROM cigars WHERE id IN `+values(len(cs), 1), ids...); err != nil {
		return nil, fmt.Errorf("find cigars: %w", err)
	}
	stored := make(map[string]int, len(rows))
	for i, r := range rows {
		stored[r.ID] = i
	}
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	created := make([]bool, len(cs))
	args := make([]any, 0, 10*len(cs))
	for i, c := range cs {
		aliases := enc(nonNil(c.Aliases))
		if r, ok := stored[c.ID]; ok {
			c.Number = rows[r].Number
			if c.Aliases == nil { // nil keeps the stored aliases
				aliases = rows[r].Aliases
			}
		} else {
			if w.next == 0 {
				if err := w.tx.GetContext(ctx, &w.next, `SELECT COALESCE(MAX(number), 0) + 1 FROM cigars`); err != nil {
					return nil, fmt.Errorf("number new cigars: %w", err)
				}
			}
			c.Number, created[i] = w.next, true
			w.next++
		}
		args = append(args, c.ID, c.Number, c.BrandID, c.Name, c.Origin, enc(nonNil(c.Wrapper)), enc(nonNil(c.Binder)), enc(nonNil(c.Filler)), aliases, w.version)
	}
	err = w.exec(ctx, `INSERT INTO cigars (id, number, brand_id, name, origin, wrapper, binder, filler, aliases, changed_at)
		VALUES `+values(10, len(cs))+`
		ON CONFLICT (id) DO UPDATE SET brand_id = excluded.brand_id, name = excluded.name,
		origin = excluded.origin, wrapper = excluded.wrapper, binder = excluded.binder, filler = excluded.filler,
		aliases = excluded.aliases, changed_at = excluded.changed_at`, args...)
	if err != nil {
		return nil, fmt.Errorf("upsert cigars %q to %q: %w", cs[0].Name, cs[len(cs)-1].Name, err)
	}
	return created, nil
}

func (w *writer) UpsertProduct(ctx context.Context, p *catalog.Product) error {
	return w.UpsertProducts(ctx, []*catalog.Product{p})
}

func (w *writer) UpsertProducts(ctx context.Context, ps []*catalog.Product) error {
	for batch := range slices.Chunk(ps, batchRows) {
		if err := w.upsertProducts(ctx, batch); err != nil {
			return err
		}
	}
	return nil
}

// upsertProducts upserts up to batchRows products and replaces their
// contents, in three statements (more for products of many contents).
func (w *writer) upsertProducts(ctx context.Context, ps []*catalog.Product) error {
	ids, err := distinctIDs(ps, func(p *catalog.Product) string { return p.ID }, "product")
	if err != nil {
		return err
	}
	args := make([]any, 0, 6*len(ps))
	var contents []any
	for _, p := range ps {
		args = append(args, p.ID, p.GTIN, p.Name, p.Kind, p.Synthetic, p.Published)
		for _, c := range p.Contents {
			contents = append(contents, p.ID, c.CigarID, c.Quantity)
		}
	}
	what := fmt.Sprintf("products %q to %q", ps[0].Name, ps[len(ps)-1].Name)
	err = w.exec(ctx, `INSERT INTO products (id, gtin, name, kind, synthetic, published) VALUES `+values(6, len(ps))+`
		ON CONFLICT (id) DO UPDATE SET gtin = excluded.gtin, name = excluded.name, kind = excluded.kind,
		synthetic = excluded.synthetic, published = excluded.published`, args...)
	if err != nil {
		return fmt.Errorf("upsert %s: %w", what, err)
	}
	if err := w.exec(ctx, `DELETE FROM product_contents WHERE product_id IN `+values(len(ps), 1), ids...); err != nil {
		return fmt.Errorf("%s contents: %w", what, err)
	}
	for batch := range slices.Chunk(contents, 3*batchRows) {
		if err := w.exec(ctx, `INSERT INTO product_contents (product_id, cigar_id, quantity) VALUES `+values(3, len(batch)/3), batch...); err != nil {
			return fmt.Errorf("%s contents: %w", what, err)
		}
	}
	return nil
}

// distinctIDs returns the IDs of xs, or an error naming one given twice: a
// statement cannot upsert the same row twice.
func distinctIDs[T any](xs []T, id func(T) string, what string) ([]any, error) {
	ids := make([]any, len(xs))
	seen := make(map[string]bool, len(xs))
	for i, x := range xs {
		k := id(x)
		if seen[k] {
			return nil, fmt.Errorf("%s %s is given twice", what, k)
		}
		seen[k] = true
		ids[i] = k
	}
	return ids, nil
}

// values is the placeholders of rows rows of cols values: "(?, ?), (?, ?)";
// of one row, an IN list.
func values(cols, rows int) string {
	row := "(" + strings.Repeat("?, ", cols-1) + "?)"
	return strings.Repeat(row+", ", rows-1) + row
}

// selectRows runs a prepared query of rows into dst.
func (w *writer) selectRows(ctx context.Context, dst any, query string, args ...any) error {
	st, err := w.stmt(ctx, query)
	if err != nil {
		return err
	}
	return st.SelectContext(ctx, dst, args...)
}

// changesChannel is where writes tell PostgreSQL listeners (Watch) they
// committed.
const changesChannel = "catalog_changes"

// Watch calls changed once watching, then whenever the catalog may have
// changed, until ctx ends or the store fails: on PostgreSQL when a write
// commits (writes notify, Watch listens); on SQLite when the version moves,
// read as another process writes to the store's file (sqldb.Watch). The
// search index follows a write within milliseconds rather than at its poll.
func (s *Store) Watch(ctx context.Context, changed func()) error {
	return s.db.Watch(ctx, changesChannel, s.Version, changed)
}

// Version is the catalog's change counter. The row's ID is an argument so
// that the statement is prepared once per connection (sqldb keeps only
// statements with arguments): Watch reads it after every write to the store,
// and the search index at every poll.
func (s *Store) Version(ctx context.Context) (v int64, err error) {
	err = s.db.GetContext(ctx, &v, s.db.Rebind(`SELECT version FROM catalog_version WHERE id = ?`), 1)
	return
}

// AllBrands returns every brand, for the search index.
func (s *Store) AllBrands(ctx context.Context) ([]*catalog.Brand, error) {
	return s.brands(ctx, `SELECT `+brandCols+` FROM brands ORDER BY id`)
}

// AllCigars returns every cigar, for the search index.
func (s *Store) AllCigars(ctx context.Context) ([]*catalog.Cigar, error) {
	return s.cigars(ctx, `SELECT `+cigarCols+` FROM cigars ORDER BY id`)
}

// ChangesSince returns the brands and cigars written after version, for the
// search index to apply instead of rebuilding. The version is read first: the
// rows read after it hold every change up to it. The rows come in no order:
// ordered by ID, SQLite would scan the whole table in ID order rather than
// search the changed_at index.
func (s *Store) ChangesSince(ctx context.Context, version int64) (*catalog.Changes, error) {
	ch := &catalog.Changes{}
	var err error
	if ch.Version, err = s.Version(ctx); err != nil {
		return nil, err
	}
	if ch.Brands, err = s.brands(ctx, `SELECT `+brandCols+` FROM brands WHERE changed_at > ?`, version); err != nil {
		return nil, err
	}
	if ch.Cigars, err = s.cigars(ctx, `SELECT `+cigarCols+` FROM cigars WHERE changed_at > ?`, version); err != nil {
		return nil, err
	}
	return ch, nil
}

func (s *Store) Counts(ctx context.Context) (brands, cigars, products int, err error) {
	err = s.db.QueryRowxContext(ctx, `SELECT (SELECT COUNT(*) FROM brands), (SELECT COUNT(*) FROM cigars), (SELECT COUNT(*) FROM products)`).Scan(&brands, &cigars, &products)
	return
}

func first[T any](xs []*T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	if len(xs) == 0 {
		return nil, catalog.ErrNotFound
	}
	return xs[0], nil
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
