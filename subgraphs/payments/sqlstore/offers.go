package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/envelope"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

func (s *Store) AddResourceType(ctx context.Context, t payments.ResourceType) error {
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO resource_types (name, description, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`),
		t.Name, t.Description, t.CreatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("add resource type: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("%w: resource type %s exists", payments.ErrConflict, t.Name)
	}
	return nil
}

type resourceTypeRow struct {
	Name        string `db:"name"`
	Description string `db:"description"`
	CreatedAt   int64  `db:"created_at"`
}

func (s *Store) ResourceTypes(ctx context.Context) ([]payments.ResourceType, error) {
	var rows []resourceTypeRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT name, description, created_at FROM resource_types ORDER BY name`); err != nil {
		return nil, fmt.Errorf("list resource types: %w", err)
	}
	out := make([]payments.ResourceType, len(rows))
	for i, r := range rows {
		out[i] = payments.ResourceType{Name: r.Name, Description: r.Description, CreatedAt: fromMillis(r.CreatedAt)}
	}
	return out, nil
}

func (s *Store) ResourceType(ctx context.Context, name string) (*payments.ResourceType, error) {
	var r resourceTypeRow
	if err := getOne(ctx, s.db, &r, "resource type", `SELECT name, description, created_at FROM resource_types WHERE name = ?`, name); err != nil {
		return nil, err
	}
	return &payments.ResourceType{Name: r.Name, Description: r.Description, CreatedAt: fromMillis(r.CreatedAt)}, nil
}

type offerRow struct {
	ID           string `db:"id"`
	ClientID     string `db:"client_id"`
	ResourceType string `db:"resource_type"`
	Name         string `db:"name"`
	Quantity     int64  `db:"quantity"`
	Price        int64  `db:"price"`
	Currency     string `db:"currency"`
	MerchantID   string `db:"merchant_account_id"`
	Active       int    `db:"active"`
	CreatedAt    int64  `db:"created_at"`
}

const offerColumns = `id, client_id, resource_type, name, quantity, price, currency, merchant_account_id, active, created_at`

func (r offerRow) offer() payments.Offer {
	return payments.Offer{ID: r.ID, ClientID: r.ClientID, ResourceType: r.ResourceType, Name: r.Name, Quantity: r.Quantity, Price: r.Price,
		Currency: r.Currency, MerchantID: r.MerchantID, Active: r.Active == 1, CreatedAt: fromMillis(r.CreatedAt)}
}

func (s *Store) CreateOffer(ctx context.Context, o *payments.Offer) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO offers (`+offerColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		o.ID, o.ClientID, o.ResourceType, o.Name, o.Quantity, o.Price, o.Currency, o.MerchantID, flag(o.Active), o.CreatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("create offer: %w", err)
	}
	return nil
}

func (s *Store) Offer(ctx context.Context, id string) (*payments.Offer, error) {
	var r offerRow
	if err := getOne(ctx, s.db, &r, "offer", `SELECT `+offerColumns+` FROM offers WHERE id = ?`, id); err != nil {
		return nil, err
	}
	o := r.offer()
	return &o, nil
}

func (s *Store) ActiveOffers(ctx context.Context, clientID, resourceType string) ([]payments.Offer, error) {
	var rows []offerRow
	// Cheapest per unit first (a double is exact enough to order prices and
	// quantities this small), then the larger pack.
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT `+offerColumns+` FROM offers
		WHERE resource_type = ? AND active = 1 AND (client_id = '' OR client_id = ?)
		ORDER BY CAST(price AS DOUBLE PRECISION) / quantity, quantity DESC, id`), resourceType, clientID); err != nil {
		return nil, fmt.Errorf("list offers: %w", err)
	}
	out := make([]payments.Offer, len(rows))
	for i, r := range rows {
		out[i] = r.offer()
	}
	return out, nil
}

type merchantRow struct {
	ID                   string  `db:"id"`
	ClientID             string  `db:"client_id"`
	Name                 string  `db:"name"`
	Gateway              string  `db:"gateway"`
	Status               string  `db:"status"`
	Ciphertext           *string `db:"credentials_ciphertext"`
	WrappedKey           *string `db:"credentials_key"`
	KEK                  *string `db:"credentials_kek"`
	CredentialsUpdatedAt *int64  `db:"credentials_updated_at"`
	CreatedAt            int64   `db:"created_at"`
	UpdatedAt            int64   `db:"updated_at"`
}

const merchantColumns = `id, client_id, name, gateway, status, credentials_ciphertext, credentials_key, credentials_kek, credentials_updated_at, created_at, updated_at`

func (r merchantRow) merchant() payments.MerchantAccount {
	m := payments.MerchantAccount{ID: r.ID, ClientID: r.ClientID, Name: r.Name, Gateway: r.Gateway, Status: r.Status,
		CredentialsUpdatedAt: optMillis(r.CredentialsUpdatedAt), CreatedAt: fromMillis(r.CreatedAt), UpdatedAt: fromMillis(r.UpdatedAt)}
	if r.Ciphertext != nil && r.WrappedKey != nil && r.KEK != nil {
		m.Credentials = &envelope.Sealed{Ciphertext: *r.Ciphertext, WrappedKey: *r.WrappedKey, KEKID: *r.KEK}
	}
	return m
}

func (s *Store) CreateMerchant(ctx context.Context, m *payments.MerchantAccount) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO merchant_accounts (id, client_id, name, gateway, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`),
		m.ID, m.ClientID, m.Name, m.Gateway, m.Status, m.CreatedAt.UnixMilli(), m.UpdatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("create merchant account: %w", err)
	}
	return nil
}

func (s *Store) Merchant(ctx context.Context, id string) (*payments.MerchantAccount, error) {
	var r merchantRow
	if err := getOne(ctx, s.db, &r, "merchant account", `SELECT `+merchantColumns+` FROM merchant_accounts WHERE id = ?`, id); err != nil {
		return nil, err
	}
	m := r.merchant()
	return &m, nil
}

func (s *Store) Merchants(ctx context.Context, clientID string) ([]payments.MerchantAccount, error) {
	var rows []merchantRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT `+merchantColumns+` FROM merchant_accounts WHERE client_id = ? ORDER BY created_at, id`), clientID); err != nil {
		return nil, fmt.Errorf("list merchant accounts: %w", err)
	}
	out := make([]payments.MerchantAccount, len(rows))
	for i, r := range rows {
		out[i] = r.merchant()
	}
	return out, nil
}

func (s *Store) SetCredentials(ctx context.Context, id string, sealed *envelope.Sealed, status string, at time.Time) error {
	var ct, key, kek *string
	if sealed != nil {
		ct, key, kek = &sealed.Ciphertext, &sealed.WrappedKey, &sealed.KEKID
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE merchant_accounts SET credentials_ciphertext = ?, credentials_key = ?, credentials_kek = ?,
		credentials_updated_at = ?, status = ?, updated_at = ? WHERE id = ?`), ct, key, kek, at.UnixMilli(), status, at.UnixMilli(), id)
	if err != nil {
		return fmt.Errorf("store merchant credentials: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return payments.ErrNotFound
	}
	return nil
}

// sealedTables are the tables holding sealed records: each row's ID is its
// additional data.
var sealedTables = []struct{ table, ciphertext, key, kek, aadSuffix string }{
	{"merchant_accounts", "credentials_ciphertext", "credentials_key", "credentials_kek", ""},
	{"payment_methods", "vault_ciphertext", "vault_key", "vault_kek", ""},
	{"service_clients", "signing_ciphertext", "signing_key", "signing_kek", "/signing"},
	{"service_clients", "previous_signing_ciphertext", "previous_signing_key", "previous_signing_kek", "/signing"},
}

func (s *Store) SealedRecords(ctx context.Context) ([]payments.SealedRecord, error) {
	var out []payments.SealedRecord
	for _, t := range sealedTables {
		var rows []struct {
			ID         string `db:"id"`
			Ciphertext string `db:"ciphertext"`
			Key        string `db:"wrapped"`
			KEK        string `db:"kek"`
		}
		query := fmt.Sprintf(`SELECT id, %s AS ciphertext, %s AS wrapped, %s AS kek FROM %s WHERE %s IS NOT NULL AND %s <> '' ORDER BY id`, t.ciphertext, t.key, t.kek, t.table, t.ciphertext, t.ciphertext)
		if err := s.db.SelectContext(ctx, &rows, query); err != nil {
			return nil, fmt.Errorf("list sealed records of %s: %w", t.table, err)
		}
		for _, r := range rows {
			out = append(out, payments.SealedRecord{Table: t.table, Column: t.ciphertext, ID: r.ID, AAD: r.ID + t.aadSuffix,
				Sealed: envelope.Sealed{Ciphertext: r.Ciphertext, WrappedKey: r.Key, KEKID: r.KEK}})
		}
	}
	return out, nil
}

func (s *Store) Rewrapped(ctx context.Context, r payments.SealedRecord) error {
	for _, t := range sealedTables {
		if t.table != r.Table || t.ciphertext != r.Column {
			continue
		}
		// Only the wrapping changes, and only if the ciphertext is still the
		// one rewrapped (credentials replaced meanwhile keep their new value).
		query := fmt.Sprintf(`UPDATE %s SET %s = ?, %s = ? WHERE id = ? AND %s = ?`, t.table, t.key, t.kek, t.ciphertext)
		_, err := s.db.ExecContext(ctx, s.db.Rebind(query), r.Sealed.WrappedKey, r.Sealed.KEKID, r.ID, r.Sealed.Ciphertext)
		return err
	}
	return fmt.Errorf("rewrap: no sealed table %s", strings.ToValidUTF8(r.Table, ""))
}

// CountMerchants counts merchant accounts (the demo seeds into a store
// without any).
func (s *Store) CountMerchants(ctx context.Context) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, `SELECT COUNT(*) FROM merchant_accounts`)
	return n, err
}
