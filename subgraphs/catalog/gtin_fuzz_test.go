package catalog_test

import (
	"strings"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// FuzzBarcode: barcode parsing never panics; every GTIN it returns is 14
// digits with a valid check digit and parses back to itself alone, so
// normalizing is idempotent; it accepts only digits (spaces and dashes
// aside) in the lengths of a UPC-A, EAN-13, GTIN-14, EAN-8 or UPC-E.
func FuzzBarcode(f *testing.F) {
	for _, s := range []string{"036000291452", "4006381333931", "4006-3813 33931", "10036000291459", "96385074", "04252614",
		"01234565", "01234531", "01234543", "", "abc", "036000291453", "0425261x", "12345678901234567", "０３６０００２９１４５２", "--", " 0 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		_, _ = catalog.ExpandUPCE(code)
		_ = catalog.CheckDigit(code)
		gs, err := catalog.BarcodeGTINs(code)
		if err != nil {
			if gs != nil {
				t.Fatalf("%q: error %v with GTINs %v", code, err, gs)
			}
			return
		}
		plain := strings.NewReplacer(" ", "", "-", "").Replace(code)
		if n := len(plain); n != 8 && n != 12 && n != 13 && n != 14 || strings.Trim(plain, "0123456789") != "" {
			t.Fatalf("accepted %q, which is no barcode", code)
		}
		if len(gs) == 0 || len(gs) > 2 {
			t.Fatalf("%q: %d GTINs", code, len(gs))
		}
		for _, g := range gs {
			if len(g) != 14 || strings.Trim(g, "0123456789") != "" || catalog.CheckDigit(g[:13]) != g[13] {
				t.Fatalf("%q gave %q, not a valid GTIN-14", code, g)
			}
			if again, err := catalog.BarcodeGTINs(g); err != nil || len(again) != 1 || again[0] != g {
				t.Fatalf("%q gave %q, which parses to %v, %v", code, g, again, err)
			}
		}
		n, err := catalog.NormalizeGTIN(code)
		if err != nil || n != gs[0] {
			t.Fatalf("NormalizeGTIN(%q) = %q, %v; BarcodeGTINs says %q first", code, n, err, gs[0])
		}
		if nn, err := catalog.NormalizeGTIN(n); err != nil || nn != n {
			t.Fatalf("normalizing %q twice: %q, %v", n, nn, err)
		}
	})
}
