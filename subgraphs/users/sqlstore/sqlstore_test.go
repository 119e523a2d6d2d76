package sqlstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/users"
	"github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

func TestCreateUser(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db)
		u, err := users.NewUser{Email: "Dana@Example.com", Password: "a long passphrase", DisplayName: "Dana"}.Prepare(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		got, err := st.UserByEmail(ctx, "DANA@example.COM")
		if err != nil || got.ID != u.ID || !users.CheckPassword(got.PasswordHash, "a long passphrase") {
			t.Fatalf("UserByEmail = %+v, %v", got, err)
		}
		if _, err := st.UserByEmail(ctx, "nobody@example.com"); !errors.Is(err, users.ErrNotFound) {
			t.Fatalf("unknown email: %v", err)
		}

		// Ten concurrent sign-ups with one email: exactly one account.
		var wg sync.WaitGroup
		var mu sync.Mutex
		created, taken := 0, 0
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, _ := users.NewUser{Email: "race@example.com", Password: "a long passphrase", DisplayName: "Race"}.Prepare(time.Now())
				err := st.CreateUser(ctx, n)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					created++
				case errors.Is(err, users.ErrEmailTaken):
					taken++
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if created != 1 || taken != 9 {
			t.Fatalf("created %d, taken %d", created, taken)
		}
	})
}
