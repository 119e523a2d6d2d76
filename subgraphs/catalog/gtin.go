package catalog

import (
	"errors"
	"strings"
)

// ErrBadBarcode is returned for a code that is no valid GTIN in any form.
var ErrBadBarcode = errors.New("barcode must be a UPC-A (12 digits), EAN-13 (13), EAN-8 or UPC-E (8) or GTIN-14 (14) with a valid check digit")

// BarcodeGTINs returns the GTIN-14s a scanned code may stand for, most likely
// first. UPC-A, EAN-13 and GTIN-14 have one reading. An 8-digit code is an EAN-8,
// or a UPC-E (number system 0 or 1) expanded to its UPC-A: when both readings
// have a valid check digit, both are returned, UPC-E first (the form US packaging
// uses). Spaces and dashes are ignored.
func BarcodeGTINs(code string) ([]string, error) {
	code = strings.NewReplacer(" ", "", "-", "").Replace(code)
	if !digits(code) {
		return nil, ErrBadBarcode
	}
	var out []string
	switch len(code) {
	case 12, 13, 14:
		if g := pad14(code); validCheck(g) {
			out = append(out, g)
		}
	case 8:
		if upca, ok := ExpandUPCE(code); ok && validCheck(pad14(upca)) {
			out = append(out, pad14(upca))
		}
		if g := pad14(code); validCheck(g) {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		return nil, ErrBadBarcode
	}
	return out, nil
}

// NormalizeGTIN returns the most likely GTIN-14 of a code.
func NormalizeGTIN(code string) (string, error) {
	gs, err := BarcodeGTINs(code)
	if err != nil {
		return "", err
	}
	return gs[0], nil
}

// ExpandUPCE expands an 8-digit UPC-E (number system, six digits, check digit)
// to its 12-digit UPC-A, keeping the check digit.
func ExpandUPCE(code string) (string, bool) {
	if len(code) != 8 || (code[0] != '0' && code[0] != '1') {
		return "", false
	}
	ns, d, check := code[:1], code[1:7], code[7:]
	var body string
	switch d[5] {
	case '0', '1', '2':
		body = d[0:2] + d[5:6] + "0000" + d[2:5]
	case '3':
		body = d[0:3] + "00000" + d[3:5]
	case '4':
		body = d[0:4] + "00000" + d[4:5]
	default:
		body = d[0:5] + "0000" + d[5:6]
	}
	return ns + body + check, true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func pad14(code string) string { return strings.Repeat("0", 14-len(code)) + code }

func validCheck(g14 string) bool { return CheckDigit(g14[:13]) == g14[13] }

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
