package platform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

// BenchmarkPaymentPair is TestPaymentSessionLoad's create + status pair
// without the network: the payments handler called in process, one pair
// at a time, for profiling the path (go test -bench PaymentPair
// -cpuprofile). Each op is one pair.
func BenchmarkPaymentPair(b *testing.B) {
	for backend, cfg := range sqldbtest.Backends(b) {
		b.Run(backend, func(b *testing.B) {
			f := openPayments(b, cfg)
			shop := f.client(b, payments.NewClient{})
			account := data(b, f.call(b, shop, "POST", "/billing-accounts/resolve", `{"accountReference": "bench"}`))["id"].(string)
			offers, err := f.p.PaymentsService.Store.ActiveOffers(context.Background(), "", payments.AICredits)
			if err != nil || len(offers) == 0 {
				b.Fatal("no demo offer", err)
			}
			body := `{"billingAccountId": "` + account + `", "offerId": "` + offers[0].ID + `", "returnUrl": "https://shop.example/paid"}`
			serve := func(method, path, body, key string) []byte {
				var req *http.Request
				if body != "" {
					req = httptest.NewRequest(method, "/api/v1"+path, strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
				} else {
					req = httptest.NewRequest(method, "/api/v1"+path, nil)
				}
				req.Header.Set("Authorization", "Bearer "+shop.secret)
				req.Header.Set("X-Service-Client-Id", shop.id)
				if key != "" {
					req.Header.Set("Idempotency-Key", key)
				}
				rec := httptest.NewRecorder()
				f.p.Payments.ServeHTTP(rec, req)
				if rec.Code >= 300 {
					b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
				}
				return rec.Body.Bytes()
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for i := range b.N {
				var out struct{ Data struct{ ID string } }
				json.Unmarshal(serve("POST", "/payment-sessions", body, fmt.Sprint("bench-", i)), &out)
				serve("GET", "/payment-sessions/"+out.Data.ID+"/status", "", "")
			}
			// The process's CPU (PostgreSQL's is not in it): on a busy machine
			// ns/op counts the waits too.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
