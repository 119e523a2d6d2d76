package restshim_test

import (
	"sync"
	"testing"

	restshim "github.com/vitolahq/vitola/rest-shim"
)

// A created session's answer is cut apart as the subgraph writes it, and
// decoded when it comes in any other shape; both give the same parts.
func TestSplitCreated(t *testing.T) {
	session := `{"id":"pss_0123456789abcdef","state":"open","returnUrl":"https://shop.example/paid?a=\"b\"","purchase":{"id":"pur_x"}}`
	for _, tt := range []struct {
		name, value, token, session, id string
		replayed                        bool
	}{
		{"as written", `{"replayed":false,"token":"AbC-_09","session":{"document":` + session + `}}`, "AbC-_09", session, "pss_0123456789abcdef", false},
		{"replayed, as written", `{"replayed":true,"token":"AbC-_09","session":{"document":` + session + `}}`, "AbC-_09", session, "pss_0123456789abcdef", true},
		{"another order", `{"session":{"document":` + session + `},"token":"AbC-_09","replayed":true}`, "AbC-_09", session, "pss_0123456789abcdef", true},
		{"spaces", `{ "replayed": false, "token": "AbC-_09", "session": { "document": ` + session + ` } }`, "AbC-_09", session, "pss_0123456789abcdef", false},
		{"an escaped token", `{"replayed":false,"token":"a\u0062c","session":{"document":` + session + `}}`, "abc", session, "pss_0123456789abcdef", false},
		{"the ID not first", `{"replayed":false,"token":"t","session":{"document":{"state":"open","id":"pss_1"}}}`, "t", `{"state":"open","id":"pss_1"}`, "pss_1", false},
	} {
		replayed, token, sess, id, err := restshim.SplitCreated([]byte(tt.value))
		if err != nil || replayed != tt.replayed || token != tt.token || string(sess) != tt.session || id != tt.id {
			t.Errorf("%s: %v %q %s %q %v", tt.name, replayed, token, sess, id, err)
		}
	}
	for _, bad := range []string{`{"token":"t","session":{"document":{"state":"open"}}}`, `{"token":"","session":{"document":{"id":"pss_1"}}}`,
		`{"token":"t","session":{"document":null}}`, `{"token":"t","session":null}`, `{"token":"t","session":{"id":"pss_1"}}`, `not json`} {
		if _, _, _, _, err := restshim.SplitCreated([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// A body naming a card field at any depth, in any case or escaped, holds
// card data; card words as values, or inside other names, do not.
func TestHoldsCardData(t *testing.T) {
	for body, want := range map[string]bool{
		`{"billingAccountId": "acc_1", "offerId": "off_1", "returnUrl": "https://shop.example/paid"}`: false,
		`{"note": "paid by card", "returnUrl": "https://shop.example/pan/cvc"}`:                       false,
		`{"cardholder": "x", "numbers": [1]}`:                                                         false,
		`{"number": "4242424242424242"}`:                                                              true,
		`{"Card": {"exp": 1}}`:                                                                        true,
		`{"a": [{"b": {"CVC": "123"}}]}`:                                                              true,
		`{"security_code": "123"}`:                                                                    true,
		`{"\u0070an": "4242424242424242"}`:                                                            true,
		`{"x": "\u0070an"}`:                                                                           false,
	} {
		if got := restshim.HoldsCardData([]byte(body)); got != want {
			t.Errorf("%s: %v, want %v", body, got, want)
		}
	}
}

// A client's credentials are remembered under one digest however often and
// however concurrently it is taken; another ID or secret gives another.
func TestClientDigest(t *testing.T) {
	digest := restshim.ClientDigests()
	want := digest("pcl_1", "vps_secret")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if digest("pcl_1", "vps_secret") != want {
					t.Error("the same credentials gave another digest")
				}
				if digest("pcl_1", "vps_secreT") == want || digest("pcl_2", "vps_secret") == want || digest("pcl_1vps", "_secret") == want {
					t.Error("other credentials gave the same digest")
				}
			}
		})
	}
	wg.Wait()
}
