package card_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/payments/card"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func TestCheck(t *testing.T) {
	tests := []struct {
		name, number string
		month, year  int
		cvc          string
		brand        string
		err          error
	}{
		{"visa", "4242 4242 4242 4242", 12, 2030, "123", card.Visa, nil},
		{"visa with dashes, 2-digit year", "4242-4242-4242-4242", 1, 31, "123", card.Visa, nil},
		{"mastercard 5-series", "5555555555554444", 6, 2028, "123", card.Mastercard, nil},
		{"mastercard 2-series", "2223003122003222", 6, 2028, "123", card.Mastercard, nil},
		{"amex needs 4 digits", "378282246310005", 6, 2028, "1234", card.Amex, nil},
		{"amex with 3", "378282246310005", 6, 2028, "123", "", card.ErrCVC},
		{"discover", "6011111111111117", 6, 2028, "123", card.Discover, nil},
		{"discover inside unionpay's range (8-digit BIN)", "6221260000000000", 6, 2028, "123", "", nil},
		{"unionpay", "6200000000000005", 6, 2028, "123", card.UnionPay, nil},
		{"jcb", "3566002020360505", 6, 2028, "123", card.JCB, nil},
		{"diners", "36227206271667", 6, 2028, "123", card.Diners, nil},
		{"bad luhn", "4242424242424241", 12, 2030, "123", "", card.ErrNumber},
		{"letters", "4242abcd42424242", 12, 2030, "123", "", card.ErrNumber},
		{"too short", "42424242", 12, 2030, "123", "", card.ErrNumber},
		{"too long", "42424242424242424242", 12, 2030, "123", "", card.ErrTooLong},
		{"unknown brand", "9999999999999995", 12, 2030, "123", "", card.ErrBrand},
		{"visa of a length visa does not issue", "42424242424242426", 12, 2030, "123", "", card.ErrNumber},
		{"expired last month", "4242424242424242", 10, 2026, "123", "", card.ErrExpiry},
		{"expires this month: still good", "4242424242424242", 11, 2026, "123", card.Visa, nil},
		{"month 13", "4242424242424242", 13, 2030, "123", "", card.ErrExpiry},
		{"cvc letters", "4242424242424242", 12, 2030, "12a", "", card.ErrCVC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := card.Check(tt.number, tt.month, tt.year, tt.cvc, now)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				if strings.Contains(err.Error(), card.Normalize(tt.number)) || strings.Contains(err.Error(), tt.cvc) {
					t.Fatalf("error repeats card data: %v", err)
				}
				return
			}
			if tt.brand != "" && got.Brand != tt.brand {
				t.Fatalf("brand %s, want %s", got.Brand, tt.brand)
			}
			if n := card.Normalize(tt.number); got.Last4 != n[len(n)-4:] {
				t.Fatalf("last4 %s", got.Last4)
			}
		})
	}
	if b, _ := card.Brand("6221260000000000"); b != card.Discover {
		t.Fatalf("622126… is Discover, got %s", b)
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"4242424242424242", "378282246310005", "", "0", "4", "62212600000000000000"} {
		f.Add(s, 12, 2030, "123")
	}
	f.Fuzz(func(t *testing.T, number string, month, year int, cvc string) {
		got, err := card.Check(number, month, year, cvc, now)
		if err != nil {
			return
		}
		if !card.Luhn(got.Number) || len(got.Number) < 12 || len(got.Number) > 19 || got.Brand == "" || len(got.Last4) != 4 {
			t.Fatalf("accepted a bad card: %+v", got)
		}
	})
}
