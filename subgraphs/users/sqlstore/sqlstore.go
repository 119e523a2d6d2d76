// Package sqlstore keeps users in the users subgraph's own SQL store.
package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/users"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the users store's goose migrations.
var Migrations, _ = fs.Sub(migrationFiles, "migrations")

// StoreName is the users store's SQLite file and PostgreSQL schema name.
const StoreName = "users"

// Store implements users.Store.
type Store struct{ db *sqldb.DB }

var _ users.Store = (*Store)(nil)

// Open opens and migrates the users store.
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

type row struct {
	ID           string    `db:"id"`
	Email        string    `db:"email"`
	PasswordHash string    `db:"password_hash"`
	DisplayName  string    `db:"display_name"`
	FirstName    *string   `db:"first_name"`
	LastName     *string   `db:"last_name"`
	ImageURL     *string   `db:"image_url"`
	CoverURL     *string   `db:"cover_url"`
	Website      *string   `db:"website"`
	Bio          *string   `db:"bio"`
	Private      bool      `db:"private"`
	CreatedAt    time.Time `db:"created_at"`
}

func (s *Store) User(ctx context.Context, id string) (*users.User, error) {
	return s.user(ctx, `SELECT * FROM users WHERE id = ?`, id)
}

// UserByEmail finds an account by its (lower-cased) email.
func (s *Store) UserByEmail(ctx context.Context, email string) (*users.User, error) {
	return s.user(ctx, `SELECT * FROM users WHERE email = ?`, strings.ToLower(email))
}

func (s *Store) user(ctx context.Context, q string, arg any) (*users.User, error) {
	var r row
	err := s.db.GetContext(ctx, &r, s.db.Rebind(q), arg)
	if sqldb.IsNoRows(err) {
		return nil, users.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("query user: %w", err)
	}
	u := r.toUser()
	return &u, nil
}

func (r row) toUser() users.User {
	return users.User{ID: r.ID, Email: r.Email, PasswordHash: r.PasswordHash, DisplayName: r.DisplayName,
		FirstName: r.FirstName, LastName: r.LastName, ImageURL: r.ImageURL, CoverURL: r.CoverURL,
		Website: r.Website, Bio: r.Bio, Private: r.Private, CreatedAt: r.CreatedAt.UTC()}
}

// CreateUser inserts a new account; the email's unique index decides races.
func (s *Store) CreateUser(ctx context.Context, u *users.User) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO users (id, email, password_hash, display_name, first_name, last_name, image_url, cover_url, website, bio, private, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		u.ID, u.Email, u.PasswordHash, u.DisplayName, u.FirstName, u.LastName, u.ImageURL, u.CoverURL, u.Website, u.Bio, u.Private, u.CreatedAt.UTC())
	if err != nil {
		if _, lookErr := s.UserByEmail(ctx, u.Email); lookErr == nil {
			return users.ErrEmailTaken // the unique index refused it
		}
		return fmt.Errorf("create user: %w", err)
	}
	return nil
}

func (s *Store) UpsertUser(ctx context.Context, u *users.User) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO users (id, email, password_hash, display_name, first_name, last_name, image_url, cover_url, website, bio, private, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET email = excluded.email, password_hash = excluded.password_hash, display_name = excluded.display_name,
		first_name = excluded.first_name, last_name = excluded.last_name, image_url = excluded.image_url, cover_url = excluded.cover_url,
		website = excluded.website, bio = excluded.bio, private = excluded.private`),
		u.ID, u.Email, u.PasswordHash, u.DisplayName, u.FirstName, u.LastName, u.ImageURL, u.CoverURL, u.Website, u.Bio, u.Private, u.CreatedAt.UTC())
	if err != nil {
		return fmt.Errorf("upsert user %s: %w", u.ID, err)
	}
	return nil
}

func (s *Store) CountUsers(ctx context.Context) (n int, err error) {
	err = s.db.GetContext(ctx, &n, `SELECT COUNT(*) FROM users`)
	return
}
