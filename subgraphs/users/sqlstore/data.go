package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/jsonlines"
	"github.com/vitolahq/vitola/internal/pagination"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/users"
)

var _ users.DataStore = (*Store)(nil)

type collectionRow struct {
	ID        string `db:"id"`
	UserID    string `db:"user_id"`
	Name      string `db:"name"`
	Type      string `db:"type"`
	Private   bool   `db:"private"`
	UpdatedAt string `db:"updated_at"`
	Items     string `db:"items"`
}

func (r collectionRow) collection() (*users.Collection, error) {
	c := &users.Collection{ID: r.ID, UserID: r.UserID, Name: r.Name, Type: r.Type, Private: r.Private, UpdatedAt: r.UpdatedAt}
	if err := json.Unmarshal([]byte(r.Items), &c.Items); err != nil {
		return nil, fmt.Errorf("collection %s items: %w", r.ID, err)
	}
	return c, nil
}

// ofUser selects one user's rows of table within a page: the query and its
// arguments.
func ofUser(table, userID string, p pagination.Request) (string, []any) {
	cond, args, tail := p.Keyset("id")
	return `SELECT * FROM ` + table + ` WHERE user_id = ? AND ` + cond + tail, append([]any{userID}, args...)
}

// byID selects one row of table by ID; ErrNotFound when there is none.
func (s *Store) byID(ctx context.Context, dst any, table, id string) error {
	err := s.db.GetContext(ctx, dst, s.db.Rebind(`SELECT * FROM `+table+` WHERE id = ?`), id)
	if sqldb.IsNoRows(err) {
		return users.ErrNotFound
	}
	return err
}

func (s *Store) Collections(ctx context.Context, userID string, p pagination.Request) ([]*users.Collection, error) {
	var rows []collectionRow
	q, args := ofUser("collections", userID, p)
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, err
	}
	out := make([]*users.Collection, 0, len(rows))
	for _, r := range rows {
		c, err := r.collection()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (s *Store) Collection(ctx context.Context, id string) (*users.Collection, error) {
	var r collectionRow
	if err := s.byID(ctx, &r, "collections", id); err != nil {
		return nil, err
	}
	return r.collection()
}

type humidorRow struct {
	ID     string `db:"id"`
	UserID string `db:"user_id"`
	Name   string `db:"name"`
	Items  string `db:"items"`
}

func (r humidorRow) humidor() (*users.Humidor, error) {
	h := &users.Humidor{ID: r.ID, UserID: r.UserID, Name: r.Name}
	if err := json.Unmarshal([]byte(r.Items), &h.Items); err != nil {
		return nil, fmt.Errorf("humidor %s items: %w", r.ID, err)
	}
	return h, nil
}

func (s *Store) Humidors(ctx context.Context, userID string, p pagination.Request) ([]*users.Humidor, error) {
	var rows []humidorRow
	q, args := ofUser("humidors", userID, p)
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, err
	}
	out := make([]*users.Humidor, 0, len(rows))
	for _, r := range rows {
		h, err := r.humidor()
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

func (s *Store) Humidor(ctx context.Context, id string) (*users.Humidor, error) {
	var r humidorRow
	if err := s.byID(ctx, &r, "humidors", id); err != nil {
		return nil, err
	}
	return r.humidor()
}

type smokeSessionRow struct {
	ID              string   `db:"id"`
	UserID          string   `db:"user_id"`
	CigarID         *string  `db:"cigar_id"`
	BrandID         *string  `db:"brand_id"`
	VenueID         *string  `db:"venue_id"`
	StartedAt       string   `db:"started_at"`
	EndedAt         *string  `db:"ended_at"`
	DurationSeconds *int     `db:"duration_seconds"`
	Rating          *float64 `db:"rating"`
	Note            *string  `db:"note"`
	Featured        bool     `db:"featured"`
	Visibility      string   `db:"visibility"`
	CreatedAt       string   `db:"created_at"`
}

func (r smokeSessionRow) session() *users.SmokeSession {
	return &users.SmokeSession{ID: r.ID, UserID: r.UserID, CigarID: r.CigarID, BrandID: r.BrandID, VenueID: r.VenueID, StartedAt: r.StartedAt, EndedAt: r.EndedAt,
		DurationSeconds: r.DurationSeconds, Rating: r.Rating, Note: r.Note, Featured: r.Featured, Visibility: r.Visibility, CreatedAt: r.CreatedAt}
}

func (s *Store) SmokeSessions(ctx context.Context, userID string, p pagination.Request) ([]*users.SmokeSession, error) {
	var rows []smokeSessionRow
	q, args := ofUser("smoke_sessions", userID, p)
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, err
	}
	out := make([]*users.SmokeSession, len(rows))
	for i, r := range rows {
		out[i] = r.session()
	}
	return out, nil
}

func (s *Store) SmokeSession(ctx context.Context, id string) (*users.SmokeSession, error) {
	var r smokeSessionRow
	if err := s.byID(ctx, &r, "smoke_sessions", id); err != nil {
		return nil, err
	}
	return r.session(), nil
}

type checkInRow struct {
	ID          string `db:"id"`
	UserID      string `db:"user_id"`
	VenueID     string `db:"venue_id"`
	CheckedInAt string `db:"checked_in_at"`
}

func (r checkInRow) checkIn() *users.CheckIn {
	return &users.CheckIn{ID: r.ID, UserID: r.UserID, VenueID: r.VenueID, CheckedInAt: r.CheckedInAt}
}

func (s *Store) CheckIns(ctx context.Context, userID string, p pagination.Request) ([]*users.CheckIn, error) {
	var rows []checkInRow
	q, args := ofUser("checkins", userID, p)
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, err
	}
	out := make([]*users.CheckIn, len(rows))
	for i, r := range rows {
		out[i] = r.checkIn()
	}
	return out, nil
}

func (s *Store) CheckIn(ctx context.Context, id string) (*users.CheckIn, error) {
	var r checkInRow
	if err := s.byID(ctx, &r, "checkins", id); err != nil {
		return nil, err
	}
	return r.checkIn(), nil
}

func (s *Store) SaveCollection(ctx context.Context, c *users.Collection) error {
	items, _ := json.Marshal(c.Items)
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO collections (id, user_id, name, type, private, updated_at, items) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, type = excluded.type, private = excluded.private, updated_at = excluded.updated_at, items = excluded.items`),
		c.ID, c.UserID, c.Name, c.Type, c.Private, c.UpdatedAt, string(items))
	return err
}

func (s *Store) SaveHumidor(ctx context.Context, h *users.Humidor) error {
	items, _ := json.Marshal(h.Items)
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO humidors (id, user_id, name, items) VALUES (?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, items = excluded.items`), h.ID, h.UserID, h.Name, string(items))
	return err
}

func (s *Store) SaveSmokeSession(ctx context.Context, x *users.SmokeSession) error {
	return saveSmokeSession(ctx, s.db, x)
}

// SaveSmokeSessions saves sessions in one transaction: all or none.
func (s *Store) SaveSmokeSessions(ctx context.Context, xs []*users.SmokeSession, progress func(done, total int)) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		for i, x := range xs {
			if err := saveSmokeSession(ctx, tx, x); err != nil {
				return err
			}
			jsonlines.Progress(progress, i+1, len(xs))
		}
		return nil
	})
}

func saveSmokeSession(ctx context.Context, db sqlx.ExtContext, x *users.SmokeSession) error {
	_, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO smoke_sessions (id, user_id, cigar_id, brand_id, venue_id, started_at, ended_at, duration_seconds, rating, note, featured, visibility, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET cigar_id = excluded.cigar_id, brand_id = excluded.brand_id, venue_id = excluded.venue_id, started_at = excluded.started_at, ended_at = excluded.ended_at,
		duration_seconds = excluded.duration_seconds, rating = excluded.rating, note = excluded.note, featured = excluded.featured, visibility = excluded.visibility,
		created_at = excluded.created_at`),
		x.ID, x.UserID, x.CigarID, x.BrandID, x.VenueID, x.StartedAt, x.EndedAt, x.DurationSeconds, x.Rating, x.Note, x.Featured, x.Visibility, x.CreatedAt)
	return err
}

func (s *Store) SaveCheckIn(ctx context.Context, c *users.CheckIn) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO checkins (id, user_id, venue_id, checked_in_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET venue_id = excluded.venue_id, checked_in_at = excluded.checked_in_at`), c.ID, c.UserID, c.VenueID, c.CheckedInAt)
	return err
}

// BusinessSessions is a feed: public sessions of public profiles only, newest
// first (then by ID), with the total that matches.
func (s *Store) BusinessSessions(ctx context.Context, q users.FeedQuery) ([]*users.FeedSession, int, error) {
	where := ` FROM smoke_sessions s JOIN users u ON u.id = s.user_id WHERE s.visibility = 'public' AND u.private = ?`
	args := []any{false}
	if q.VenueID != "" {
		where += ` AND s.venue_id = ?`
		args = append(args, q.VenueID)
	}
	if q.BrandID != "" {
		where += ` AND s.brand_id = ?`
		args = append(args, q.BrandID)
	}
	if q.From != "" {
		where += ` AND s.created_at >= ?`
		args = append(args, q.From)
	}
	if q.To != "" {
		where += ` AND s.created_at <= ?`
		args = append(args, q.To)
	}
	if q.FeaturedOnly {
		where += ` AND s.featured = ?`
		args = append(args, true)
	}
	var count int
	if err := s.db.GetContext(ctx, &count, s.db.Rebind(`SELECT COUNT(*)`+where), args...); err != nil {
		return nil, 0, fmt.Errorf("count feed: %w", err)
	}
	var rows []struct {
		ID              string   `db:"id"`
		UserID          string   `db:"user_id"`
		CigarID         *string  `db:"cigar_id"`
		BrandID         *string  `db:"brand_id"`
		VenueID         *string  `db:"venue_id"`
		StartedAt       string   `db:"started_at"`
		EndedAt         *string  `db:"ended_at"`
		DurationSeconds *int     `db:"duration_seconds"`
		Rating          *float64 `db:"rating"`
		Note            *string  `db:"note"`
		Featured        bool     `db:"featured"`
		CreatedAt       string   `db:"created_at"`
		DisplayName     string   `db:"display_name"`
		ImageURL        *string  `db:"image_url"`
	}
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT s.id, s.user_id, s.cigar_id, s.brand_id, s.venue_id, s.started_at, s.ended_at, s.duration_seconds,
		s.rating, s.note, s.featured, s.created_at, u.display_name, u.image_url`+where+` ORDER BY s.created_at DESC, s.id DESC LIMIT ? OFFSET ?`),
		append(args, q.Limit, q.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("read feed: %w", err)
	}
	out := make([]*users.FeedSession, len(rows))
	for i, r := range rows {
		out[i] = &users.FeedSession{SmokeSession: users.SmokeSession{ID: r.ID, UserID: r.UserID, CigarID: r.CigarID, BrandID: r.BrandID, VenueID: r.VenueID,
			StartedAt: r.StartedAt, EndedAt: r.EndedAt, DurationSeconds: r.DurationSeconds, Rating: r.Rating, Note: r.Note, Featured: r.Featured,
			Visibility: "public", CreatedAt: r.CreatedAt}, UserDisplayName: r.DisplayName, UserImageURL: r.ImageURL}
	}
	return out, count, nil
}
