package restshim_test

import (
	"testing"

	restshim "github.com/vitolahq/vitola/rest-shim"
)

// A created session's answer is cut apart as the subgraph writes it, and
// decoded when it comes in any other shape; both give the same parts.
func TestSplitCreated(t *testing.T) {
	session := `{"id":"pss_0123456789abcdef","state":"open","returnUrl":"https://shop.example/paid?a=\"b\"","purchase":{"id":"pur_x"}}`
	for _, tt := range []struct {
		name, value, token, session, id string
	}{
		{"as written", `{"token":"AbC-_09","session":{"document":` + session + `}}`, "AbC-_09", session, "pss_0123456789abcdef"},
		{"another order", `{"session":{"document":` + session + `},"token":"AbC-_09"}`, "AbC-_09", session, "pss_0123456789abcdef"},
		{"spaces", `{ "token": "AbC-_09", "session": { "document": ` + session + ` } }`, "AbC-_09", session, "pss_0123456789abcdef"},
		{"an escaped token", `{"token":"a\u0062c","session":{"document":` + session + `}}`, "abc", session, "pss_0123456789abcdef"},
		{"the ID not first", `{"token":"t","session":{"document":{"state":"open","id":"pss_1"}}}`, "t", `{"state":"open","id":"pss_1"}`, "pss_1"},
	} {
		token, sess, id, err := restshim.SplitCreated([]byte(tt.value))
		if err != nil || token != tt.token || string(sess) != tt.session || id != tt.id {
			t.Errorf("%s: %q %s %q %v", tt.name, token, sess, id, err)
		}
	}
	for _, bad := range []string{`{"token":"t","session":{"document":{"state":"open"}}}`, `{"token":"","session":{"document":{"id":"pss_1"}}}`,
		`{"token":"t","session":{"document":null}}`, `{"token":"t","session":null}`, `{"token":"t","session":{"id":"pss_1"}}`, `not json`} {
		if _, _, _, err := restshim.SplitCreated([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
