package platform_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/payments/gateway/stripe/stripemock"
)

// The payments service offers the stripe gateway, on the Stripe API URL it
// is given (stripe-mock here): a merchant account on it takes a secret key,
// and a card saved through it is vaulted at that URL.
func TestPaymentsStripeGateway(t *testing.T) {
	ctx := context.Background()
	svc, st, err := platform.OpenPayments(ctx, sqldb.Config{DataDir: t.TempDir()},
		platform.PaymentsOptions{PublicURL: "http://127.0.0.1:8081", StripeAPIURL: stripemock.Start(t)}, internalKey)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := platform.OpenPayments(ctx, sqldb.Config{DataDir: t.TempDir()}, platform.PaymentsOptions{StripeAPIURL: "http://stripe.example:12111"}, internalKey); err == nil {
		t.Error("a Stripe API URL in clear off loopback was accepted")
	}

	m, err := svc.CreateMerchant(ctx, "", payments.NewMerchant{Name: "Shop", Gateway: "stripe"})
	if err != nil {
		t.Fatalf("create a merchant account on stripe: %v", err)
	}
	if _, err := svc.SetMerchantCredentials(ctx, "", m.ID, []byte(`{"secretKey": "pk_test_publishable"}`)); err == nil ||
		!strings.Contains(err.Error(), "secretKey") || strings.Contains(err.Error(), "pk_test_publishable") {
		t.Errorf("a publishable key: %v, want an error naming secretKey without its value", err)
	}
	if m, err = svc.SetMerchantCredentials(ctx, "", m.ID, []byte(`{"secretKey": "sk_test_platform"}`)); err != nil || !m.Ready() {
		t.Fatalf("credentials: %+v, %v", m, err)
	}

	c, _, _, err := svc.CreateClient(ctx, payments.NewClient{Name: "backend"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := svc.ResolveAccount(ctx, c, payments.AccountRequest{Reference: "user-1"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := svc.AddPaymentMethod(ctx, a.ID, m.ID, payments.Card{Number: "4000 0566 5566 5556", ExpMonth: 3, ExpYear: time.Now().Year() + 2, CVC: "314"}, true)
	if err != nil {
		t.Fatalf("save a card through stripe-mock: %v", err)
	}
	// stripe-mock's fixture card is a Visa ending 4242.
	if pm.Brand != "visa" || pm.Last4 != "4242" {
		t.Errorf("saved card %s %s, want stripe-mock's visa 4242", pm.Brand, pm.Last4)
	}
	ref, err := svc.Keys.Open(pm.Vault, pm.ID)
	if err != nil || !regexp.MustCompile(`^cus_\w+/pm_\w+$`).Match(ref) {
		t.Errorf("vault reference %q, %v: want cus_…/pm_…", ref, err)
	}
}
