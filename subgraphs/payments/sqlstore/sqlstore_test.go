package sqlstore_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/payments/sqlstore"
)

func open(t *testing.T, db *sqldb.DB) *sqlstore.Store {
	return sqlstore.New(db, func() time.Time { return time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) })
}

// checkLedger asserts the invariants: every transaction balances, every
// account book's balance is the sum of its postings and never negative, and
// the key's spendable credits are the sum of its available book's postings.
func checkLedger(t *testing.T, st *sqlstore.Store, keyID string) int64 {
	t.Helper()
	ctx := context.Background()
	c, err := st.CheckLedger(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c != (sqlstore.LedgerCheck{}) {
		t.Fatalf("ledger: %+v", c)
	}
	a, err := st.Account(ctx, keyID)
	if err != nil {
		t.Fatal(err)
	}
	txs, err := st.Transactions(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sum := payments.SumBook(txs, a.ID, payments.AICredits, payments.BookAvailable); sum != a.Credits() || a.Credits() < 0 {
		t.Fatalf("balance %d, sum of its postings %d", a.Credits(), sum)
	}
	return a.Credits()
}

func TestCreditsLifecycle(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := open(t, db)
		in := time.Now().Add(time.Minute)
		if a, err := st.Account(ctx, "key_a"); err != nil || a.Credits() != 0 {
			t.Fatalf("a new key starts with no credits: %+v %v", a, err)
		}
		if _, _, err := st.Reserve(ctx, "key_a", 1, "identify", in); !errors.Is(err, payments.ErrInsufficientCredits) {
			t.Fatalf("reserve without credits: %v", err)
		}
		if _, err := st.Grant(ctx, "key_a", 10, "test"); err != nil {
			t.Fatal(err)
		}
		r, a, err := st.Reserve(ctx, "key_a", 4, "identify", in)
		if err != nil || a.Credits() != 6 {
			t.Fatalf("reserve: %+v %v", a, err)
		}
		if _, err := st.Settle(ctx, "key_b", r.ID, 1); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("another key settles my reservation: %v", err)
		}
		if _, err := st.Settle(ctx, "key_a", r.ID, 5); !errors.Is(err, payments.ErrBadAmount) {
			t.Fatalf("cost above the reservation: %v", err)
		}
		if a, err = st.Settle(ctx, "key_a", r.ID, 3); err != nil || a.Credits() != 7 {
			t.Fatalf("settle 3 of 4: %+v %v", a, err)
		}
		// A retried settlement (its first answer lost) charges nothing more.
		if a, err = st.Settle(ctx, "key_a", r.ID, 3); err != nil || a.Credits() != 7 {
			t.Fatalf("settle retried: %+v %v", a, err)
		}
		for _, again := range []func() error{
			func() error { _, err := st.Settle(ctx, "key_a", r.ID, 1); return err },
			func() error { _, err := st.Release(ctx, "key_a", r.ID); return err },
		} {
			if err := again(); !errors.Is(err, payments.ErrClosed) {
				t.Fatalf("closing twice: %v", err)
			}
		}
		r2, _, _ := st.Reserve(ctx, "key_a", 7, "identify", in)
		for range 2 { // the second release is a retry and gives nothing back twice
			if a, err = st.Release(ctx, "key_a", r2.ID); err != nil || a.Credits() != 7 {
				t.Fatalf("release: %+v %v", a, err)
			}
		}
		if _, err := st.Settle(ctx, "key_a", r2.ID, 0); !errors.Is(err, payments.ErrClosed) {
			t.Fatalf("settling a released reservation: %v", err)
		}
		// A reservation whose request died is released when it expires.
		r3, _, _ := st.Reserve(ctx, "key_a", 2, "identify", time.Now().Add(-time.Second))
		if n, err := st.ReleaseExpired(ctx, time.Now()); err != nil || n != 1 {
			t.Fatalf("release expired: %d %v", n, err)
		}
		if got, _ := st.Reservation(ctx, "key_a", r3.ID); got.State != payments.Released {
			t.Fatalf("expired reservation %+v", got)
		}
		if _, err := st.Reservation(ctx, "key_b", r3.ID); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("another key reads my reservation: %v", err)
		}
		for _, bad := range []int64{0, -1, payments.MaxAmount + 1} {
			if _, err := st.Grant(ctx, "key_a", bad, ""); !errors.Is(err, payments.ErrBadAmount) {
				t.Errorf("grant %d: %v", bad, err)
			}
		}
		if got := checkLedger(t, st, "key_a"); got != 7 {
			t.Fatalf("balance %d, want 7", got)
		}
	})
}

// A retried request finds its earlier attempt's hold by reference: the latest
// one, of its own key only, and not one older than the window asked for.
func TestLatestReservation(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		st := sqlstore.New(db, func() time.Time { return now })
		for _, k := range []string{"key_a", "key_b"} {
			if _, err := st.Grant(ctx, k, 100, "test"); err != nil {
				t.Fatal(err)
			}
		}
		const ref = "identify:req-1:abcd"
		if _, err := st.LatestReservation(ctx, "key_a", ref, now.Add(-time.Hour)); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("no hold yet: %v", err)
		}
		reserve := func(key string, amount int64, ref string) *payments.Reservation {
			t.Helper()
			r, _, err := st.Reserve(ctx, key, amount, ref, now.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		old := reserve("key_a", 5, ref)
		if _, err := st.Settle(ctx, "key_a", old.ID, 5); err != nil {
			t.Fatal(err)
		}
		reserve("key_a", 1, "identify:req-0:abcd")
		start := now
		now = now.Add(10 * time.Minute)
		held := reserve("key_a", 3, ref)
		reserve("key_a", 1, "identify:req-2:abcd")
		reserve("key_b", 1, ref)
		got, err := st.LatestReservation(ctx, "key_a", ref, now.Add(-time.Hour))
		if err != nil || got.ID != held.ID || got.State != payments.Held || got.Amount != 3 {
			t.Fatalf("latest: %+v %v, want the held %s", got, err, held.ID)
		}
		if _, err := st.Settle(ctx, "key_a", held.ID, 2); err != nil {
			t.Fatal(err)
		}
		if got, _ := st.LatestReservation(ctx, "key_a", ref, now.Add(-time.Hour)); got.State != payments.Settled || got.Cost == nil || *got.Cost != 2 {
			t.Fatalf("after settling: %+v", got)
		}
		// The window excludes older holds; another key's holds are never seen.
		if got, _ := st.LatestReservation(ctx, "key_a", "identify:req-0:abcd", start); got == nil || got.Amount != 1 {
			t.Fatalf("a window from the hold's creation: %+v", got)
		}
		if _, err := st.LatestReservation(ctx, "key_a", "identify:req-0:abcd", start.Add(time.Minute)); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("a window after the only hold: %v", err)
		}
		if _, err := st.LatestReservation(ctx, "key_a", ref, now.Add(time.Second)); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("a window after every hold: %v", err)
		}
		if got, _ := st.LatestReservation(ctx, "key_b", ref, now.Add(-time.Hour)); got == nil || got.Amount != 1 {
			t.Fatalf("key_b sees its own hold only: %+v", got)
		}
		if _, err := st.LatestReservation(ctx, "key_c", ref, now.Add(-time.Hour)); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("a key without holds: %v", err)
		}
	})
}

// Concurrent reservations never spend a credit twice, and after a random mix of
// grants, reservations, settlements and releases the balance is still the sum of
// the ledger.
func TestCreditsUnderConcurrencyAndRandomOperations(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := open(t, db)
		if _, err := st.Grant(ctx, "key_a", 10, ""); err != nil {
			t.Fatal(err)
		}
		var won, broke atomic.Int32
		var wg sync.WaitGroup
		for range 30 {
			wg.Go(func() {
				_, _, err := st.Reserve(ctx, "key_a", 1, "race", time.Now().Add(time.Minute))
				switch {
				case err == nil:
					won.Add(1)
				case errors.Is(err, payments.ErrInsufficientCredits):
					broke.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if won.Load() != 10 || broke.Load() != 20 || checkLedger(t, st, "key_a") != 0 {
			t.Fatalf("30 reservations of 1 over 10 credits: %d won, %d refused", won.Load(), broke.Load())
		}

		rng := rand.New(rand.NewPCG(1, 2))
		var held []string
		for range 300 {
			switch op := rng.IntN(4); {
			case op == 0:
				st.Grant(ctx, "key_b", rng.Int64N(5)+1, "")
			case op == 1:
				if r, _, err := st.Reserve(ctx, "key_b", rng.Int64N(4)+1, "mix", time.Now().Add(time.Minute)); err == nil {
					held = append(held, r.ID)
				}
			case len(held) > 0:
				i := rng.IntN(len(held))
				id := held[i]
				if op == 2 {
					st.Settle(ctx, "key_b", id, rng.Int64N(2))
				} else {
					st.Release(ctx, "key_b", id)
				}
				held = append(held[:i], held[i+1:]...)
			}
		}
		checkLedger(t, st, "key_b")
	})
}

// TestHotStatementsSearch: the statements run for every session closed,
// every request with an assertion, and every second by the worker find their
// rows through an index, whatever the number of rows around them (SQLite's
// plans, which the module's pinned SQLite keeps stable). Each used to walk
// a growing set: every open purchase, every live assertion ID of the client,
// every processing or pending purchase.
func TestHotStatementsSearch(t *testing.T) {
	db := sqldbtest.MustOpen(t, sqldb.Config{DataDir: t.TempDir()}, sqlstore.StoreName, sqlstore.Migrations)
	for _, c := range []struct {
		name, statement string
		want            []string
	}{
		{"a closed session's purchase", sqlstore.CancelSessionPurchase, []string{
			"SEARCH purchases USING INDEX sqlite_autoindex_purchases_1 (id=?)",
			"SEARCH payment_sessions USING INDEX sqlite_autoindex_payment_sessions_1 (id=?)"}},
		{"a client's expired assertion IDs", sqlstore.ForgetSpentAssertions, []string{
			"SEARCH assertion_uses USING INDEX assertion_uses_expiry (client_id=? AND expires_at<?)"}},
		{"the worker's due purchases", sqlstore.ClaimPurchases, []string{
			"SEARCH purchases USING INDEX purchases_work (state=? AND kind=?)",
			"SEARCH purchases USING INDEX purchases_work (state=? AND kind=? AND lease_until<?)"}},
		{"the sender's due events", sqlstore.ClaimEvents, []string{
			"SEARCH e USING INDEX callback_events_due (state=? AND parked=? AND next_attempt_at<?)"}},
		{"a client's pending events parked or unparked", sqlstore.ParkEvents, []string{
			"SEARCH callback_events USING INDEX callback_events_client_pending (client_id=?)"}},
		{"a client's events listed", sqlstore.ClientEvents, []string{
			"SEARCH callback_events USING INDEX callback_events_client (client_id=?)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := make([]any, strings.Count(c.statement, "?"))
			for i := range args {
				args[i] = "x"
			}
			rows, err := db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+c.statement, args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			for _, w := range c.want {
				if !slices.Contains(plan, w) {
					t.Errorf("the plan %q has no %q", plan, w)
				}
			}
			for _, step := range plan {
				if strings.HasPrefix(step, "SCAN") {
					t.Errorf("the plan %q scans", plan)
				}
			}
		})
	}
}
