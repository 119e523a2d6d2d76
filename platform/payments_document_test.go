package platform_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/payments"
	paymentsgraph "github.com/vitolahq/vitola/subgraphs/payments/graph"
)

// A payment session's rendered document (what the payments API's create
// and status send) says what selecting every field of PaymentSession says,
// null fields, a redeemed session's times and URLs JSON escapes included.
func TestPaymentSessionDocument(t *testing.T) {
	const fields = `id state billingAccountId offerId returnUrl cancelUrl parentOrigin expiresAt createdAt redeemedAt closedAt
		purchase { id kind state resourceType quantity price { amount currency } failureCode failureMessage createdAt updatedAt }`
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			f := openPayments(t, cfg)
			shop := f.client(t, payments.NewClient{ReturnURLs: []string{"https://shop.example/paid"}, Origins: []string{"https://shop.example"}})
			account := data(t, f.call(t, shop, "POST", "/billing-accounts/resolve", `{"accountReference": "doc"}`))["id"].(string)
			offers, err := f.p.PaymentsService.Store.ActiveOffers(context.Background(), "", payments.AICredits)
			if err != nil || len(offers) == 0 {
				t.Fatal("no demo offer", err)
			}
			graph := paymentsgraph.NewHandler(f.p.PaymentsService)
			// selected asks the payments subgraph, as the shim would, for every
			// field of the session and for its document.
			selected := func(t *testing.T, id string) (fieldByField, document map[string]any) {
				t.Helper()
				body, _ := json.Marshal(map[string]any{"query": `query($id: ID!) { paymentSession(id: $id) { ` + fields + ` document } }`, "variables": map[string]any{"id": id}})
				req := httptest.NewRequest("POST", "/graphql", strings.NewReader(string(body)))
				req.Header.Set("Content-Type", "application/json")
				req = req.WithContext(trust.WithIdentity(req.Context(), trust.Identity{Caller: "shim", ClientID: shop.id}))
				rec := httptest.NewRecorder()
				graph.ServeHTTP(rec, req)
				var out struct {
					Data   struct{ PaymentSession map[string]any }
					Errors []any
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Errors) > 0 || out.Data.PaymentSession == nil {
					t.Fatalf("%d %s", rec.Code, rec.Body)
				}
				document, _ = out.Data.PaymentSession["document"].(map[string]any)
				delete(out.Data.PaymentSession, "document")
				return out.Data.PaymentSession, document
			}
			for _, tt := range []struct{ name, extra string }{
				{"plain", ``},
				{"every optional field, escapes", `, "returnUrl": "https://shop.example/paid?a=1&b=\"2\"", "cancelUrl": "https://shop.example/paid?c=<3>", "parentOrigin": "https://shop.example"`},
			} {
				t.Run(tt.name, func(t *testing.T) {
					body := `{"billingAccountId": "` + account + `", "offerId": "` + offers[0].ID + `", "returnUrl": "https://shop.example/paid"` + tt.extra + `}`
					created := f.call(t, shop, "POST", "/payment-sessions", strings.Replace(body, `"returnUrl": "https://shop.example/paid", "returnUrl"`, `"returnUrl"`, 1), "Idempotency-Key", "doc-"+tt.name[:5])
					s := data(t, created)
					if created.Status != 201 {
						t.Fatalf("create: %d %s", created.Status, created.Body)
					}
					url, _ := s["url"].(string)
					delete(s, "url")
					id, _ := s["id"].(string)
					fieldByField, document := selected(t, id)
					if !reflect.DeepEqual(document, fieldByField) || !reflect.DeepEqual(s, fieldByField) {
						t.Fatalf("created:\n document %v\n fields   %v\n REST     %v", document, fieldByField, s)
					}
					// Redeemed, the session has a redeemedAt and another state.
					token := url[strings.Index(url, "#token=")+len("#token="):]
					if r := f.call(t, client{}, "POST", "/payment-sessions/redeem", `{"token": "`+token+`"}`, "Origin", paymentsURL, "X-Vitola-Checkout", "1"); r.Status != 200 {
						t.Fatalf("redeem: %d %s", r.Status, r.Body)
					}
					status := f.call(t, shop, "GET", "/payment-sessions/"+id+"/status", "")
					fieldByField, document = selected(t, id)
					if fieldByField["redeemedAt"] == nil || !reflect.DeepEqual(document, fieldByField) || !reflect.DeepEqual(data(t, status), fieldByField) {
						t.Fatalf("redeemed:\n document %v\n fields   %v\n REST     %s", document, fieldByField, status.Body)
					}
				})
			}
		})
	}
}
