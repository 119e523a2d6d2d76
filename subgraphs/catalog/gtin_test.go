package catalog_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/catalog"
)

func TestBarcodeGTINs(t *testing.T) {
	tests := []struct {
		code string
		want []string
	}{
		{"036000291452", []string{"00036000291452"}},    // UPC-A
		{"4006381333931", []string{"04006381333931"}},   // EAN-13
		{"4006-3813 33931", []string{"04006381333931"}}, // separators ignored
		{"10036000291459", []string{"10036000291459"}},  // GTIN-14 (case level)
		{"96385074", []string{"00000096385074"}},        // EAN-8 (starts with 9: no UPC-E)
		{"04252614", []string{"00042100005264"}},        // UPC-E, last digit 2
		{"01234565", []string{"00012345000065"}},        // UPC-E, last digit 5
		{"01234531", []string{"00012300000451"}},        // UPC-E, last digit 3
		{"01234543", []string{"00012340000053"}},        // UPC-E, last digit 4
	}
	for _, tt := range tests {
		got, err := catalog.BarcodeGTINs(tt.code)
		if err != nil || !slices.Equal(got[:1], tt.want) {
			t.Errorf("BarcodeGTINs(%q) = %v, %v; want first %v", tt.code, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "abc", "036000291453", "4006381333932", "123", "12345678901234567", "0425261x"} {
		if _, err := catalog.BarcodeGTINs(bad); !errors.Is(err, catalog.ErrBadBarcode) {
			t.Errorf("BarcodeGTINs(%q) err = %v, want ErrBadBarcode", bad, err)
		}
	}
}

func TestEightDigitCodesCanReadBothWays(t *testing.T) {
	// Find an 8-digit code valid both as UPC-E and as EAN-8: both readings come back.
	for n := 0; n < 2000000; n++ {
		body := []byte{'0', byte('0' + n/100000%10), byte('0' + n/10000%10), byte('0' + n/1000%10), byte('0' + n/100%10), byte('0' + n/10%10), byte('0' + n%10)}
		code := string(body) + string(catalog.CheckDigit(string(body)))
		gs, err := catalog.BarcodeGTINs(code)
		if err == nil && len(gs) == 2 {
			upca, _ := catalog.ExpandUPCE(code)
			if gs[0] != "00"+upca || gs[1] != "000000"+code {
				t.Fatalf("%s: %v", code, gs)
			}
			return
		}
	}
	t.Fatal("no 8-digit code with two readings found")
}
