// Package demo seeds the payments demo: a platform merchant account on the
// sandbox gateway and AI-credit offers, so a hosted checkout works out of the
// box with the sandbox's test cards.
package demo

import (
	"context"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/payments/gateway/sandbox"
)

// Offers are the demo's AI-credit offers: quantity and price in US cents.
var Offers = []payments.NewOffer{
	{ID: ids.Derive(ids.Offer, "demo 100"), ResourceType: payments.AICredits, Name: "100 AI credits", Quantity: 100, Price: 500, Currency: "USD"},
	{ID: ids.Derive(ids.Offer, "demo 500"), ResourceType: payments.AICredits, Name: "500 AI credits", Quantity: 500, Price: 2000, Currency: "USD"},
}

// Seed creates the demo merchant account and offers. Their IDs are fixed, so
// replicas seeding at once create them once.
func Seed(ctx context.Context, svc *payments.Service) error {
	m, err := svc.CreateMerchant(ctx, "", payments.NewMerchant{ID: ids.Derive(ids.MerchantAccount, "demo"), Name: "Vitola demo (sandbox)", Gateway: sandbox.Name})
	if err != nil {
		return err
	}
	if _, err := svc.SetMerchantCredentials(ctx, "", m.ID, []byte(`{"apiKey":"sandbox-demo"}`)); err != nil {
		return err
	}
	for _, o := range Offers {
		o.MerchantID = m.ID
		if _, err := svc.CreateOffer(ctx, nil, o); err != nil {
			return err
		}
	}
	return nil
}
