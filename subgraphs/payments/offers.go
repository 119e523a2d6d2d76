package payments

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/apierr"
)

// ResourceType is something offers sell units of. ai_credits is built in;
// operators register more (vitola payments resource-types add).
type ResourceType struct {
	Name        string
	Description string
	CreatedAt   time.Time
}

var resourceTypeName = regexp.MustCompile(`^[a-z][a-z0-9_]{1,62}$`)

// ValidResourceTypeName: lower case letters, digits and '_', 2 to 63, starting
// with a letter.
func ValidResourceTypeName(s string) bool { return resourceTypeName.MatchString(s) }

// Offer sells Quantity units of a resource type for a price in a currency's
// minor units (cents for USD, yen for JPY), through a merchant account.
type Offer struct {
	ID           string
	ClientID     string // "" for the platform's own offers, available to every client selling the type
	ResourceType string
	Name         string
	Quantity     int64
	Price        int64
	Currency     string
	MerchantID   string
	Active       bool
	CreatedAt    time.Time
}

// MaxPrice bounds a price in minor units (the largest amount gateways take).
const MaxPrice = 99_999_999

// NewOffer is what a client or an operator asks for.
type NewOffer struct {
	// ID is a stable ID a seed gives (creating it again changes nothing);
	// empty: a new one.
	ID           string
	ResourceType string
	Name         string
	Quantity     int64
	Price        int64
	Currency     string
	MerchantID   string
}

// currencyExponents lists ISO 4217 currencies and their minor-unit exponents;
// prices are always integers in minor units.
var currencyExponents = map[string]int{
	"USD": 2, "EUR": 2, "GBP": 2, "CHF": 2, "CAD": 2, "AUD": 2, "NZD": 2, "SEK": 2, "NOK": 2, "DKK": 2,
	"PLN": 2, "CZK": 2, "HUF": 2, "MXN": 2, "BRL": 2, "SGD": 2, "HKD": 2, "INR": 2, "ZAR": 2, "DOP": 2,
	"JPY": 0, "KRW": 0, "CLP": 0, "ISK": 0, "VND": 0,
	"BHD": 3, "KWD": 3, "JOD": 3, "OMR": 3, "TND": 3,
}

// CurrencyExponent returns a supported currency's minor-unit exponent.
func CurrencyExponent(code string) (int, bool) {
	e, ok := currencyExponents[code]
	return e, ok
}

// Validate checks a new offer and returns its normalized form.
func (n NewOffer) Validate() (NewOffer, error) {
	n.Name = strings.TrimSpace(n.Name)
	n.Currency = strings.ToUpper(strings.TrimSpace(n.Currency))
	switch {
	case !ValidResourceTypeName(n.ResourceType):
		return n, Invalid("resourceType %s: want a registered resource type such as ai_credits", apierr.Quote(n.ResourceType))
	case n.Name == "" || len(n.Name) > 100:
		return n, Invalid("name: give the offer a name of 1 to 100 characters")
	case n.Quantity < 1 || n.Quantity > MaxAmount:
		return n, Invalid("quantity: want a whole number of units from 1 to 1000000000")
	case n.Price < 1 || n.Price > MaxPrice:
		return n, Invalid("price: want an integer amount in the currency's minor units (cents for USD) from 1 to 99999999")
	case n.MerchantID == "":
		return n, Invalid("merchantAccountId: name the merchant account that is paid")
	}
	if _, ok := CurrencyExponent(n.Currency); !ok {
		return n, Invalid("currency %s: want an ISO 4217 code this server supports, such as USD or EUR", apierr.Quote(n.Currency))
	}
	return n, nil
}

// Offers keeps resource types and offers.
type Offers interface {
	AddResourceType(ctx context.Context, t ResourceType) error
	ResourceTypes(ctx context.Context) ([]ResourceType, error)
	ResourceType(ctx context.Context, name string) (*ResourceType, error)
	CreateOffer(ctx context.Context, o *Offer) error
	Offer(ctx context.Context, id string) (*Offer, error)
	// ActiveOffers lists the active offers of a type that a client may sell:
	// the platform's and its own, cheapest per unit first.
	ActiveOffers(ctx context.Context, clientID, resourceType string) ([]Offer, error)
}
