package catalog

import (
	"errors"
	"strings"
)

// ErrBadBarcode is returned for a code that is not a valid GTIN.
var ErrBadBarcode = errors.New("barcode must be 8, 12, 13 or 14 digits with a valid check digit")

// NormalizeGTIN returns the GTIN-14 form of an EAN-8, UPC-A, EAN-13 or GTIN-14
// code (spaces and dashes ignored), checking its check digit.
func NormalizeGTIN(code string) (string, error) {
	code = strings.NewReplacer(" ", "", "-", "").Replace(code)
	switch len(code) {
	case 8, 12, 13, 14:
	default:
		return "", ErrBadBarcode
	}
	for i := 0; i < len(code); i++ {
		if code[i] < '0' || code[i] > '9' {
			return "", ErrBadBarcode
		}
	}
	g := strings.Repeat("0", 14-len(code)) + code
	if CheckDigit(g[:13]) != g[13] {
		return "", ErrBadBarcode
	}
	return g, nil
}

// CheckDigit computes the GS1 check digit of the digits before it.
func CheckDigit(body string) byte {
	sum := 0
	for i := 0; i < len(body); i++ {
		d := int(body[len(body)-1-i] - '0')
		if i%2 == 0 {
			d *= 3
		}
		sum += d
	}
	return byte('0' + (10-sum%10)%10)
}
