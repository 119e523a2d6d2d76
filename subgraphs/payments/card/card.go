// Package card checks raw card data before it goes to a gateway's vault: the
// number's length and Luhn digit, the brand from its issuer identification
// number (IIN, 6 or 8 digits), the expiry and the CVC's length. It keeps
// nothing and never formats a number or a CVC into an error.
package card

import (
	"errors"
	"strings"
	"time"
)

// Brands.
const (
	Visa       = "visa"
	Mastercard = "mastercard"
	Amex       = "amex"
	Discover   = "discover"
	JCB        = "jcb"
	Diners     = "diners"
	UnionPay   = "unionpay"
	Maestro    = "maestro"
)

// iinRange maps numbers whose first digits fall in [lo, hi] (compared on the
// same number of digits) to a brand, with the lengths it issues.
type iinRange struct {
	lo, hi  string
	brand   string
	lengths []int
}

// ranges are checked in order: narrower ranges come before the wide ones
// they sit in (Discover's 622126–622925 inside UnionPay's 62).
var ranges = []iinRange{
	{"34", "34", Amex, []int{15}},
	{"37", "37", Amex, []int{15}},
	{"300", "305", Diners, []int{14, 16, 17, 18, 19}},
	{"36", "36", Diners, []int{14, 16, 17, 18, 19}},
	{"38", "39", Diners, []int{16, 17, 18, 19}},
	{"3528", "3589", JCB, []int{16, 17, 18, 19}},
	{"4", "4", Visa, []int{13, 16, 19}},
	{"51", "55", Mastercard, []int{16}},
	{"2221", "2720", Mastercard, []int{16}},
	{"6011", "6011", Discover, []int{16, 17, 18, 19}},
	{"622126", "622925", Discover, []int{16, 17, 18, 19}},
	{"644", "649", Discover, []int{16, 17, 18, 19}},
	{"65", "65", Discover, []int{16, 17, 18, 19}},
	{"62", "62", UnionPay, []int{16, 17, 18, 19}},
	{"81", "81", UnionPay, []int{16, 17, 18, 19}},
	{"50", "50", Maestro, []int{12, 13, 14, 15, 16, 17, 18, 19}},
	{"56", "58", Maestro, []int{12, 13, 14, 15, 16, 17, 18, 19}},
	{"6", "6", Maestro, []int{12, 13, 14, 15, 16, 17, 18, 19}},
}

// Errors: each names the field, never its value.
var (
	ErrNumber  = errors.New("number: not a valid card number (check the digits)")
	ErrBrand   = errors.New("number: this card brand is not accepted")
	ErrExpiry  = errors.New("expiry: the card has expired or the month is not 1 to 12")
	ErrCVC     = errors.New("cvc: wrong length for this card (3 digits, 4 for American Express)")
	ErrTooLong = errors.New("number: too long")
)

// Normalize removes the spaces and dashes people type in a number.
func Normalize(number string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return r
	}, number)
}

// Brand returns the brand of a number's IIN and whether its length is one the
// brand issues; "" when no range matches.
func Brand(number string) (string, bool) {
	for _, r := range ranges {
		if len(number) < len(r.lo) {
			continue
		}
		p := number[:len(r.lo)]
		if p >= r.lo && p <= r.hi {
			for _, l := range r.lengths {
				if l == len(number) {
					return r.brand, true
				}
			}
			return r.brand, false
		}
	}
	return "", false
}

// Luhn reports whether the number's check digit is right.
func Luhn(number string) bool {
	sum, double := 0, false
	for i := len(number) - 1; i >= 0; i-- {
		d := int(number[i] - '0')
		if double {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// Checked is a card that passed Check.
type Checked struct {
	Number   string
	Brand    string
	Last4    string
	ExpMonth int
	ExpYear  int
}

// Check validates a card: digits only after Normalize, 12 to 19 of them, a
// known brand issuing that length, the Luhn digit, an expiry not past at now
// (the card works through the last day of its month), and a CVC of the
// brand's length.
func Check(number string, expMonth, expYear int, cvc string, now time.Time) (Checked, error) {
	n := Normalize(number)
	if len(n) > 19 {
		return Checked{}, ErrTooLong
	}
	if len(n) < 12 || strings.ContainsFunc(n, func(r rune) bool { return r < '0' || r > '9' }) || !Luhn(n) {
		return Checked{}, ErrNumber
	}
	brand, lengthOK := Brand(n)
	if brand == "" {
		return Checked{}, ErrBrand
	}
	if !lengthOK {
		return Checked{}, ErrNumber
	}
	if expYear < 100 {
		expYear += 2000
	}
	if expMonth < 1 || expMonth > 12 || expYear > now.Year()+50 {
		return Checked{}, ErrExpiry
	}
	if firstOfNext := time.Date(expYear, time.Month(expMonth)+1, 1, 0, 0, 0, 0, time.UTC); !now.Before(firstOfNext) {
		return Checked{}, ErrExpiry
	}
	want := 3
	if brand == Amex {
		want = 4
	}
	if len(cvc) != want || strings.ContainsFunc(cvc, func(r rune) bool { return r < '0' || r > '9' }) {
		return Checked{}, ErrCVC
	}
	return Checked{Number: n, Brand: brand, Last4: n[len(n)-4:], ExpMonth: expMonth, ExpYear: expYear}, nil
}
