package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/payments/sqlstore"
)

// migrationsUpTo returns the migrations up to and including the numbered one.
func migrationsUpTo(t *testing.T, last string) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	entries, err := fs.ReadDir(sqlstore.Migrations, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() > last {
			break
		}
		b, _ := fs.ReadFile(sqlstore.Migrations, e.Name())
		out[e.Name()] = &fstest.MapFile{Data: b}
	}
	return out
}

// openMigratedTo opens the store with the migrations up to and including
// last, and an exec that writes to it (failing t) what a store of that age
// held.
func openMigratedTo(t *testing.T, cfg sqldb.Config, last string) (*sqldb.DB, func(q string, args ...any)) {
	t.Helper()
	db := sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, migrationsUpTo(t, last))
	return db, func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(context.Background(), db.Rebind(q), args...); err != nil {
			t.Fatal(err)
		}
	}
}

// A store made by the single-entry ledger (migrations 1 and 2) keeps every
// balance and open hold when migration 3 rebuilds it as double-entry.
func TestMigrationCarriesTheSingleEntryLedgerOver(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			old, exec := openMigratedTo(t, cfg, "00002_reservation_reference.sql")
			// key_a: 12 spendable, 3 held by an open hold, 5 settled earlier.
			exec(`INSERT INTO billing_accounts (id, key_id, balance, created_at) VALUES ('acc_a', 'key_a', 12, 1)`)
			exec(`INSERT INTO billing_accounts (id, key_id, balance, created_at) VALUES ('acc_b', 'key_b', 0, 2)`)
			exec(`INSERT INTO credit_reservations (id, account_id, amount, state, reference, created_at, expires_at) VALUES ('rsv_1', 'acc_a', 3, 'held', 'identify:k:h', 3, ?)`, time.Now().Add(time.Hour).UnixMilli())
			exec(`INSERT INTO credit_reservations (id, account_id, amount, cost, state, reference, created_at, expires_at) VALUES ('rsv_0', 'acc_a', 5, 5, 'settled', 'x', 2, 9)`)
			exec(`INSERT INTO ledger_entries (id, account_id, kind, amount, created_at) VALUES ('lde_1', 'acc_a', 'grant', 20, 1)`)
			old.Close()

			st := sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations), time.Now)
			a, err := st.Account(ctx, "key_a")
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Balances[payments.AICredits]; a.ID != "acc_a" || got.Available != 12 || got.Held != 3 {
				t.Fatalf("key_a after migration: %+v %+v", a, got)
			}
			if c, err := st.CheckLedger(ctx); err != nil || c != (sqlstore.LedgerCheck{}) {
				t.Fatalf("ledger after migration: %+v %v", c, err)
			}
			// The open hold still settles against the carried-over books.
			if a, err = st.Settle(ctx, "key_a", "rsv_1", 2); err != nil || a.Credits() != 13 {
				t.Fatalf("settle a carried-over hold: %+v %v", a, err)
			}
			if r, err := st.Reservation(ctx, "key_a", "rsv_0"); err != nil || r.State != payments.Settled {
				t.Fatalf("an old settled hold: %+v %v", r, err)
			}
			checkLedger(t, st, "key_a")
			checkLedger(t, st, "key_b")
		})
	}
}

// The ledger's invariants hold after thousands of random operations run
// concurrently: grants, holds, settlements, releases, purchases of client
// accounts and refunds. Every transaction balances, every account book is the
// sum of its postings and never negative, and the credits in the accounts are
// what came in minus what was consumed.
func TestLedgerPropertyUnderConcurrentRandomOperations(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db, time.Now)
		merchant, offer := seedOffer(t, st, 7)
		keys := []string{"key_p1", "key_p2", "key_p3"}
		var clientAccounts []string
		for i := range 3 {
			a, err := st.ClientAccount(ctx, "pcl_property", fmt.Sprintf("customer-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			clientAccounts = append(clientAccounts, a.ID)
		}
		var credited, consumed, refunded atomic.Int64 // AI credits of the key accounts, and purchased units
		var purchased atomic.Int64
		const workers, opsEach = 8, 300
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				var held []struct{ key, id string }
				var bought []string
				for range opsEach {
					key := keys[rng.IntN(len(keys))]
					switch op := rng.IntN(10); {
					case op < 2:
						n := rng.Int64N(20) + 1
						if _, err := st.Grant(ctx, key, n, "property"); err != nil {
							t.Error(err)
							return
						}
						credited.Add(n)
					case op < 5:
						r, _, err := st.Reserve(ctx, key, rng.Int64N(6)+1, "property", time.Now().Add(time.Hour))
						if errors.Is(err, payments.ErrInsufficientCredits) {
							continue
						}
						if err != nil {
							t.Error(err)
							return
						}
						held = append(held, struct{ key, id string }{key, r.ID})
					case op < 8 && len(held) > 0:
						i := rng.IntN(len(held))
						h := held[i]
						held = append(held[:i], held[i+1:]...)
						if op < 7 {
							r, err := st.Reservation(ctx, h.key, h.id)
							if err != nil {
								t.Error(err)
								return
							}
							cost := rng.Int64N(r.Amount + 1)
							if _, err := st.Settle(ctx, h.key, h.id, cost); err != nil {
								t.Error(err)
								return
							}
							consumed.Add(cost)
						} else if _, err := st.Release(ctx, h.key, h.id); err != nil {
							t.Error(err)
							return
						}
					case op == 8:
						id := completePurchase(t, st, clientAccounts[rng.IntN(len(clientAccounts))], merchant, offer)
						bought = append(bought, id)
						purchased.Add(7)
					case op == 9 && len(bought) > 0:
						id := bought[len(bought)-1]
						bought = bought[:len(bought)-1]
						switch err := st.RefundPurchase(ctx, id, "property"); {
						case err == nil:
							refunded.Add(7)
						case errors.Is(err, payments.ErrInsufficientCredits):
						default:
							t.Error(err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		c, err := st.CheckLedger(ctx)
		if err != nil || c != (sqlstore.LedgerCheck{}) {
			t.Fatalf("ledger after %d operations: %+v %v", workers*opsEach, c, err)
		}
		var keyCredits, clientUnits int64
		for _, k := range keys {
			a, err := st.Account(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			b := a.Balances[payments.AICredits]
			keyCredits += b.Available + b.Held
		}
		for _, id := range clientAccounts {
			a, err := st.AccountByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			clientUnits += a.Balances["property_units"].Available
		}
		if want := credited.Load() - consumed.Load(); keyCredits != want {
			t.Fatalf("key accounts hold %d credits, want granted %d - consumed %d", keyCredits, credited.Load(), consumed.Load())
		}
		if want := purchased.Load() - refunded.Load(); clientUnits != want {
			t.Fatalf("client accounts hold %d units, want purchased %d - refunded %d", clientUnits, purchased.Load(), refunded.Load())
		}
		for _, k := range keys {
			checkLedger(t, st, k)
		}
	})
}

// seedOffer makes a ready merchant account and an offer of quantity units of
// the resource type property_units.
func seedOffer(t *testing.T, st *sqlstore.Store, quantity int64) (merchantID, offerID string) {
	t.Helper()
	ctx := context.Background()
	if err := st.AddResourceType(ctx, payments.ResourceType{Name: "property_units", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	m := &payments.MerchantAccount{ID: ids.New(ids.MerchantAccount), Name: "m", Gateway: "sandbox", Status: payments.MerchantUnconfigured, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := st.CreateMerchant(ctx, m); err != nil {
		t.Fatal(err)
	}
	o := &payments.Offer{ID: ids.New(ids.Offer), ResourceType: "property_units", Name: "o", Quantity: quantity, Price: 100, Currency: "USD", MerchantID: m.ID, Active: true, CreatedAt: time.Now()}
	if err := st.CreateOffer(ctx, o); err != nil {
		t.Fatal(err)
	}
	return m.ID, o.ID
}

// completePurchase records a captured checkout of the offer for an account,
// through the same steps a confirm takes.
func completePurchase(t *testing.T, st *sqlstore.Store, accountID, merchantID, offerID string) string {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	o, err := st.Offer(ctx, offerID)
	if err != nil {
		t.Fatal(err)
	}
	s := &payments.Session{ID: ids.New(ids.PaymentSession), ClientID: "pcl_property", AccountID: accountID, OfferID: offerID, TokenHash: ids.New("tok"),
		ReturnURL: "https://x.example", CancelURL: "https://x.example", State: payments.SessionActive, ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	p := &payments.Purchase{ID: ids.New(ids.Purchase), Kind: payments.PurchaseCheckout, ClientID: "pcl_property", AccountID: accountID, OfferID: offerID,
		SessionID: s.ID, ResourceType: o.ResourceType, Quantity: o.Quantity, Amount: o.Price, Currency: o.Currency, MerchantID: merchantID,
		State: payments.PurchaseOpen, CreatedAt: now, UpdatedAt: now}
	s.PurchaseID = p.ID
	if _, err := st.CreateSession(ctx, s, p, nil); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimCheckout(ctx, p.ID, "pmt_x", now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.CompletePurchase(ctx, p.ID, claimed.AttemptKey, "ch_"+p.ID); err != nil || !ok {
		t.Fatalf("complete purchase: %v %v", ok, err)
	}
	return p.ID
}

// A rule's reload is queued once however many debits take the balance below
// its threshold at the same time.
func TestReloadIsQueuedOnceUnderConcurrentDebits(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db, time.Now)
		merchant := &payments.MerchantAccount{ID: ids.New(ids.MerchantAccount), Name: "m", Gateway: "sandbox", Status: payments.MerchantUnconfigured, CreatedAt: time.Now(), UpdatedAt: time.Now()}
		if err := st.CreateMerchant(ctx, merchant); err != nil {
			t.Fatal(err)
		}
		offer := &payments.Offer{ID: ids.New(ids.Offer), ResourceType: payments.AICredits, Name: "100", Quantity: 100, Price: 500, Currency: "USD", MerchantID: merchant.ID, Active: true, CreatedAt: time.Now()}
		if err := st.CreateOffer(ctx, offer); err != nil {
			t.Fatal(err)
		}
		a, err := st.Grant(ctx, "key_r", 60, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SetAutoReload(ctx, &payments.AutoReload{AccountID: a.ID, ClientID: "pcl_r", Enabled: true, Threshold: 50, OfferID: offer.ID, PaymentMethodID: "pmt_r", UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if _, _, err := st.Reserve(ctx, "key_r", 1, "debit", time.Now().Add(time.Hour)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		claimed, err := st.ClaimPurchases(ctx, time.Now(), time.Now().Add(time.Minute), 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(claimed) != 1 || claimed[0].Kind != payments.PurchaseReload || claimed[0].AccountID != a.ID || claimed[0].Quantity != 100 {
			t.Fatalf("50 debits below the threshold queued %d reloads: %+v", len(claimed), claimed)
		}
		checkLedger(t, st, "key_r")
	})
}

// Replicas claiming work at once never take the same purchase, and a claim
// that lapsed is taken again under the same gateway key.
func TestClaimsNeverOverlap(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		now := time.Now()
		st := sqlstore.New(db, func() time.Time { return now })
		merchant, offer := seedOffer(t, st, 5)
		const n = 40
		for i := range n {
			a, err := st.ClientAccount(ctx, "pcl_c", fmt.Sprintf("c%d", i))
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SetAutoReload(ctx, &payments.AutoReload{AccountID: a.ID, ClientID: "pcl_c", Enabled: true, Threshold: 1, OfferID: offer, PaymentMethodID: "pmt", UpdatedAt: now}); err != nil {
				t.Fatal(err)
			}
			if err := st.QueueReload(ctx, a.ID, "property_units"); err != nil {
				t.Fatal(err)
			}
		}
		_ = merchant
		var mu sync.Mutex
		seen := map[string]string{}
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				for {
					ps, err := st.ClaimPurchases(ctx, now, now.Add(time.Minute), 3)
					if err != nil {
						t.Error(err)
						return
					}
					if len(ps) == 0 {
						return
					}
					mu.Lock()
					for _, p := range ps {
						if _, dup := seen[p.ID]; dup {
							t.Errorf("%s claimed twice", p.ID)
						}
						seen[p.ID] = p.AttemptKey
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != n {
			t.Fatalf("%d of %d reloads claimed", len(seen), n)
		}
		// After the lease lapses, a claim repeats the same attempt.
		now = now.Add(2 * time.Minute)
		again, err := st.ClaimPurchases(ctx, now, now.Add(time.Minute), n)
		if err != nil || len(again) != n {
			t.Fatalf("lapsed claims taken again: %d %v", len(again), err)
		}
		for _, p := range again {
			if p.AttemptKey != seen[p.ID] || p.Attempts != 1 {
				t.Fatalf("a lapsed claim got a new attempt: %+v, first key %s", p, seen[p.ID])
			}
		}
	})
}

// A charge whose outcome is still unknown after the reconcile window is not
// asked about again (the gateway may have forgotten its key, and the same key
// could then charge twice): it stays pending for an operator.
func TestPendingChargesAreLeftAfterTheReconcileWindow(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		now := time.Now()
		st := sqlstore.New(db, func() time.Time { return now })
		_, offer := seedOffer(t, st, 5)
		a, err := st.ClientAccount(ctx, "pcl_w", "c")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SetAutoReload(ctx, &payments.AutoReload{AccountID: a.ID, ClientID: "pcl_w", Enabled: true, Threshold: 1, OfferID: offer, PaymentMethodID: "pmt", UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := st.QueueReload(ctx, a.ID, "property_units"); err != nil {
			t.Fatal(err)
		}
		ps, err := st.ClaimPurchases(ctx, now, now.Add(time.Minute), 10)
		if err != nil || len(ps) != 1 {
			t.Fatalf("claim: %v %v", ps, err)
		}
		if err := st.MarkPending(ctx, ps[0].ID, ps[0].AttemptKey, now.Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
		if again, _ := st.ClaimPurchases(ctx, now, now.Add(time.Minute), 10); len(again) != 1 || again[0].AttemptKey != ps[0].AttemptKey {
			t.Fatalf("within the window the attempt is asked about again: %+v", again)
		}
		if err := st.MarkPending(ctx, ps[0].ID, ps[0].AttemptKey, now.Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		now = now.Add(payments.ReconcileWindow)
		if late, _ := st.ClaimPurchases(ctx, now, now.Add(time.Minute), 10); len(late) != 0 {
			t.Fatalf("after the window: %+v", late)
		}
		if p, _ := st.Purchase(ctx, ps[0].ID); p.State != payments.PurchasePending {
			t.Fatalf("left as %s", p.State)
		}
	})
}

// The reads that join rows return what the reads of each row return:
// SessionWithPurchase, and SessionParts (the account without balances, the
// offer and its merchant account, each nil when missing).
func TestCombinedReads(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db, time.Now)
		merchantID, offerID := seedOffer(t, st, 10)
		a, err := st.ClientAccount(ctx, "pcl_property", "customer")
		if err != nil {
			t.Fatal(err)
		}
		purchaseID := completePurchase(t, st, a.ID, merchantID, offerID)
		p, err := st.Purchase(ctx, purchaseID)
		if err != nil {
			t.Fatal(err)
		}
		s, err := st.Session(ctx, p.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		gotS, gotP, err := st.SessionWithPurchase(ctx, s.ID)
		if err != nil || !reflect.DeepEqual(gotS, s) || !reflect.DeepEqual(gotP, p) {
			t.Fatalf("SessionWithPurchase = %+v, %+v, %v; want %+v, %+v", gotS, gotP, err, s, p)
		}
		if _, _, err := st.SessionWithPurchase(ctx, "pss_0000000000000000"); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("an unknown session: %v", err)
		}
		o, err := st.Offer(ctx, offerID)
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.Merchant(ctx, merchantID)
		if err != nil {
			t.Fatal(err)
		}
		owner, err := st.AccountByID(ctx, a.ID)
		if err != nil || len(owner.Balances) == 0 {
			t.Fatalf("AccountByID = %+v, %v", owner, err)
		}
		owner.Balances = map[string]payments.Balance{} // SessionParts reads none
		const noAccount, noOffer = "acc_0000000000000000", "off_0000000000000000"
		for _, tt := range []struct {
			account, offer string
			wantA          *payments.Account
			wantO          *payments.Offer
			wantM          *payments.MerchantAccount
		}{
			{a.ID, offerID, owner, o, m},
			{noAccount, offerID, nil, o, m},
			{a.ID, noOffer, owner, nil, nil},
			{noAccount, noOffer, nil, nil, nil},
		} {
			gotA, gotO, gotM, err := st.SessionParts(ctx, tt.account, tt.offer)
			if err != nil || !reflect.DeepEqual(gotA, tt.wantA) || !reflect.DeepEqual(gotO, tt.wantO) || !reflect.DeepEqual(gotM, tt.wantM) {
				t.Fatalf("SessionParts(%s, %s) = %+v, %+v, %+v, %v; want %+v, %+v, %+v", tt.account, tt.offer, gotA, gotO, gotM, err, tt.wantA, tt.wantO, tt.wantM)
			}
		}
	})
}

// A session and its purchase are written together or not at all (on
// PostgreSQL one statement writes both).
func TestCreateSessionIsAtomic(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st, a, merchantID, offerID, now := sessionStore(t, db)
		newPair := func(token string) (*payments.Session, *payments.Purchase) {
			return newSession(a, merchantID, offerID, token, now)
		}
		s1, p1 := newPair("token-one")
		if _, err := st.CreateSession(ctx, s1, p1, nil); err != nil {
			t.Fatal(err)
		}
		if gotS, gotP, err := st.SessionWithPurchase(ctx, s1.ID); err != nil || !reflect.DeepEqual(gotS, s1) || !reflect.DeepEqual(gotP, p1) {
			t.Fatalf("read back %+v %+v %v", gotS, gotP, err)
		}
		// The session fails (its token hash is taken): no purchase either.
		s2, p2 := newPair("token-one")
		if _, err := st.CreateSession(ctx, s2, p2, nil); err == nil {
			t.Fatal("a second session with the same token hash was written")
		}
		if _, err := st.Purchase(ctx, p2.ID); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("the failed session's purchase: %v", err)
		}
		// The purchase fails (its ID is taken): no session either.
		s3, _ := newPair("token-three")
		s3.PurchaseID = p1.ID
		p3 := *p1
		p3.SessionID = s3.ID
		if _, err := st.CreateSession(ctx, s3, &p3, nil); err == nil {
			t.Fatal("a purchase with a taken ID was written")
		}
		if _, err := st.Session(ctx, s3.ID); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("the failed purchase's session: %v", err)
		}
	})
}

// newSession is a new open session of the client pcl_property for the
// account and offer, with its purchase, created at now.
func newSession(a *payments.Account, merchantID, offerID, tokenHash string, now time.Time) (*payments.Session, *payments.Purchase) {
	s := &payments.Session{ID: ids.New(ids.PaymentSession), ClientID: "pcl_property", AccountID: a.ID, OfferID: offerID, TokenHash: tokenHash,
		ReturnURL: "https://x.example", CancelURL: "https://x.example", State: payments.SessionOpen, ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	p := &payments.Purchase{ID: ids.New(ids.Purchase), Kind: payments.PurchaseCheckout, ClientID: "pcl_property", AccountID: a.ID, OfferID: offerID,
		SessionID: s.ID, ResourceType: "property_units", Quantity: 10, Amount: 100, Currency: "USD", MerchantID: merchantID,
		State: payments.PurchaseOpen, CreatedAt: now, UpdatedAt: now}
	s.PurchaseID = p.ID
	return s, p
}

// sessionStore is a store with an offer of 10 property_units and the account
// of the client pcl_property's customer, for sessions created at now.
func sessionStore(t *testing.T, db *sqldb.DB) (st *sqlstore.Store, a *payments.Account, merchantID, offerID string, now time.Time) {
	t.Helper()
	st = sqlstore.New(db, time.Now)
	merchantID, offerID = seedOffer(t, st, 10)
	a, err := st.ClientAccount(context.Background(), "pcl_property", "customer")
	if err != nil {
		t.Fatal(err)
	}
	return st, a, merchantID, offerID, time.Now().UTC().Truncate(time.Millisecond)
}

// Migration 8 parks the events already waiting for a client whose callbacks
// are off, and only those: a delivered event, or one of a client whose
// callbacks are on, stays as it was, and the sender claims the latter.
func TestMigrationParksWaitingEvents(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			old, exec := openMigratedTo(t, cfg, "00007_assertion_uses_expiry.sql")
			exec(`INSERT INTO service_clients (id, name, callback_url, secret_hash, created_at, callbacks_disabled_at) VALUES ('sc_off', 'off', 'https://off.example/h', 'x', 1, 5)`)
			exec(`INSERT INTO service_clients (id, name, callback_url, secret_hash, created_at) VALUES ('sc_on', 'on', 'https://on.example/h', 'x', 1)`)
			for _, e := range []struct{ id, client, state string }{
				{"fev_off_waiting", "sc_off", payments.EventPending}, {"fev_off_sent", "sc_off", payments.EventDelivered},
				{"fev_on_waiting", "sc_on", payments.EventPending},
			} {
				exec(`INSERT INTO callback_events (id, client_id, type, subject_id, body, state, next_attempt_at, created_at) VALUES (?, ?, 't', 's', '{}', ?, 2, 2)`, e.id, e.client, e.state)
			}
			old.Close()
			db := sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations)
			var parked []string
			if err := db.SelectContext(ctx, &parked, `SELECT id FROM callback_events WHERE parked = 1 ORDER BY id`); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(parked, []string{"fev_off_waiting"}) {
				t.Fatalf("parked after migration 8: %v", parked)
			}
			now := time.Now()
			es, err := sqlstore.New(db, func() time.Time { return now }).ClaimEvents(ctx, "sender", now, now.Add(time.Minute), 10)
			if err != nil || len(es) != 1 || es[0].ID != "fev_on_waiting" {
				t.Fatalf("claimed after migration 8: %+v, %v", es, err)
			}
		})
	}
}
