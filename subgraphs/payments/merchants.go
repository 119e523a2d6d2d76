package payments

import (
	"context"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/envelope"
)

// MerchantAccount is who gets paid: an account at a gateway. Its credentials
// are sealed at rest (envelope encryption under the configured KEKs) and never
// leave the payments subgraph: the API shows only whether they are configured.
type MerchantAccount struct {
	ID       string
	ClientID string // "" for the platform's own
	Name     string
	Gateway  string
	Status   string
	// Credentials are sealed; nil when none are configured.
	Credentials          *envelope.Sealed
	CredentialsUpdatedAt *time.Time
	CreatedAt, UpdatedAt time.Time
}

// Merchant account statuses.
const (
	// MerchantUnconfigured: created, no credentials yet.
	MerchantUnconfigured = "unconfigured"
	// MerchantReady: credentials configured; offers and sessions may use it.
	MerchantReady = "configured"
	// MerchantRevoked: credentials revoked; configure new ones to use it again.
	MerchantRevoked = "revoked"
)

// Ready reports whether payments can go through the account now.
func (m *MerchantAccount) Ready() bool { return m.Status == MerchantReady && m.Credentials != nil }

// NewMerchant is what a client or an operator asks for.
type NewMerchant struct {
	// ID is a stable ID a seed gives (creating it again changes nothing);
	// empty: a new one.
	ID      string
	Name    string
	Gateway string
}

// Validate checks a new merchant account against the gateways there are.
func (n NewMerchant) Validate(gateways []string) (NewMerchant, error) {
	n.Name = strings.TrimSpace(n.Name)
	if n.Name == "" || len(n.Name) > 100 {
		return n, Invalid("name: give the merchant account a name of 1 to 100 characters")
	}
	for _, g := range gateways {
		if g == n.Gateway {
			return n, nil
		}
	}
	return n, Invalid("gateway %s: want one of %s", apierr.Quote(n.Gateway), strings.Join(gateways, ", "))
}

// Merchants keeps merchant accounts.
type Merchants interface {
	CreateMerchant(ctx context.Context, m *MerchantAccount) error
	Merchant(ctx context.Context, id string) (*MerchantAccount, error)
	// Merchants lists a client's merchant accounts ("" : the platform's).
	Merchants(ctx context.Context, clientID string) ([]MerchantAccount, error)
	// SetCredentials stores sealed credentials (nil revokes them) and the
	// status that goes with them.
	SetCredentials(ctx context.Context, id string, sealed *envelope.Sealed, status string, at time.Time) error
	// SealedRecords lists every sealed record for a KEK rotation; Rewrapped
	// stores one record's new wrapping (the ciphertext is unchanged).
	SealedRecords(ctx context.Context) ([]SealedRecord, error)
	Rewrapped(ctx context.Context, r SealedRecord) error
}

// SealedRecord is one sealed secret of the store, for KEK rotation.
type SealedRecord struct {
	// Table, Column and ID name the record; AAD is its additional data.
	Table, Column string
	ID            string
	AAD           string
	Sealed        envelope.Sealed
}
