package users_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/users"
)

func TestPasswords(t *testing.T) {
	h, err := users.HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=65536,t=3,p=2$") || strings.Contains(h, "correct") {
		t.Fatalf("hash %q", h)
	}
	h2, _ := users.HashPassword("correct horse battery")
	if h == h2 {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	if !users.CheckPassword(h, "correct horse battery") {
		t.Fatal("the right password does not match")
	}
	for _, wrong := range []string{"correct horse batterx", "", "correct horse battery "} {
		if users.CheckPassword(h, wrong) {
			t.Fatalf("%q matches", wrong)
		}
	}
	for _, bad := range []string{"", "$argon2id$", "$2a$10$abc", h[:len(h)-5]} {
		if users.CheckPassword(bad, "correct horse battery") {
			t.Fatalf("malformed hash %q matched", bad)
		}
	}
	if _, err := users.HashPassword("short"); !errors.Is(err, users.ErrWeakPassword) {
		t.Fatalf("short password: %v", err)
	}
}

func TestNewUserPrepare(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)
	u, err := users.NewUser{Email: " Ana@Example.COM ", Password: "a long passphrase", DisplayName: " Ana "}.Prepare(now)
	if err != nil {
		t.Fatal(err)
	}
	if u.Email != "ana@example.com" || u.DisplayName != "Ana" || !strings.HasPrefix(u.ID, "usr_") || !u.CreatedAt.Equal(now.Truncate(time.Millisecond)) {
		t.Fatalf("user %+v", u)
	}
	for _, tt := range []struct {
		n    users.NewUser
		want error
	}{
		{users.NewUser{Email: "nope", Password: "a long passphrase", DisplayName: "x"}, users.ErrBadEmail},
		{users.NewUser{Email: "a@b", Password: "a long passphrase", DisplayName: "x"}, users.ErrBadEmail},
		{users.NewUser{Email: "a b@c.de", Password: "a long passphrase", DisplayName: "x"}, users.ErrBadEmail},
		{users.NewUser{Email: "a@c.de", Password: "a long passphrase", DisplayName: "  "}, users.ErrBadName},
		{users.NewUser{Email: "a@c.de", Password: "short", DisplayName: "x"}, users.ErrWeakPassword},
	} {
		if _, err := tt.n.Prepare(now); !errors.Is(err, tt.want) {
			t.Errorf("%+v: %v, want %v", tt.n, err, tt.want)
		}
	}
}
