// Package demo seeds the demo users: invented people, one with a private profile.
package demo

import (
	"context"
	"time"

	"github.com/vitolahq/vitola/internal/timestamp"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/subgraphs/users"
)

// UserID is the ID a demo user gets from its email, so other subgraphs' seeds can
// refer to it.
func UserID(email string) string { return ids.Derive(ids.User, email) }

func str(s string) *string { return &s }

// Users are the demo accounts.
var Users = []users.User{
	{Email: "ana@vitola.example", DisplayName: "Ana Ruiz", FirstName: str("Ana"), LastName: str("Ruiz"), Bio: str("Maduro wrappers and long evenings."), Website: str("https://ana.vitola.example")},
	{Email: "ben@vitola.example", DisplayName: "Ben Okafor", FirstName: str("Ben"), LastName: str("Okafor")},
	{Email: "chloe@vitola.example", DisplayName: "Chloé Martin", FirstName: str("Chloé"), LastName: str("Martin"), Bio: str("Cuban classics, mostly coronas.")},
	{Email: "dev@vitola.example", DisplayName: "Dev Patel", FirstName: str("Dev"), LastName: str("Patel")},
	{Email: "eli@vitola.example", DisplayName: "Eli Cohen", FirstName: str("Eli"), LastName: str("Cohen")},
	{Email: "fatima@vitola.example", DisplayName: "Fatima Haddad", FirstName: str("Fatima"), LastName: str("Haddad")},
	{Email: "gus@vitola.example", DisplayName: "Gus Lindqvist", FirstName: str("Gus"), LastName: str("Lindqvist")},
	{Email: "hidden@vitola.example", DisplayName: "Private Smoker", FirstName: str("Hana"), LastName: str("Sato"), Private: true, Bio: str("Nobody reads this publicly.")},
}

// Password is every demo user's password, so that the OAuth sign-in can be
// tried on the demo (it exists only with --demo).
const Password = "vitola-demo-password"

// The IDs other subgraphs give their objects: derived from names, the shared
// contract of the demo seeds (the users subgraph imports no other subgraph).
func cigarID(brand, name string) *string { id := ids.Derive(ids.Cigar, brand+"\x00"+name); return &id }
func brandID(brand string) *string       { id := ids.Derive(ids.Brand, brand); return &id }
func venueID(name string) *string        { id := ids.Derive(ids.Venue, name); return &id }

// Store is what the demo needs of the users store.
type Store interface {
	users.Store
	users.DataStore
}

// Seed upserts the demo users and their collections, humidors, smoke sessions
// and check-ins.
func Seed(ctx context.Context, store Store) error {
	created := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	hash, err := users.HashPassword(Password)
	if err != nil {
		return err
	}
	for i, u := range Users {
		u.ID = UserID(u.Email)
		u.PasswordHash = hash
		u.CreatedAt = created.Add(time.Duration(i) * time.Hour)
		if err := store.UpsertUser(ctx, &u); err != nil {
			return err
		}
		if err := seedData(ctx, store, u.ID, i); err != nil {
			return err
		}
	}
	return nil
}

var (
	favourites = [][2]string{
		{"Padrón", "1964 Anniversary Series Exclusivo"}, {"Arturo Fuente", "Hemingway Short Story"},
		{"Montecristo", "Classic No. 2"}, {"Cohiba", "Behike BHK 52"}, {"Oliva", "Serie V Melanio Robusto"},
		{"My Father", "Le Bijou 1922 Toro"}, {"Romeo y Julieta", "Classic Churchill"},
	}
	places = []string{"The Ember Room", "Casa del Humo", "Leaf & Ash Lounge", "Salon Havane", "Corona Club", "Tabaco Norte"}
)

func ts(t time.Time) string { return timestamp.Format(t) }

// seedData gives demo user number n its own data; every user gets some private
// things, which no one else may ever read.
func seedData(ctx context.Context, st users.DataStore, userID string, n int) error {
	at := time.Date(2026, 10, 1, 18, 0, 0, 0, time.UTC).Add(time.Duration(n) * 24 * time.Hour)
	pick := func(k int) [2]string { return favourites[(n+k)%len(favourites)] }
	key := func(kind, name string) string { return ids.Derive(kind, userID+"\x00"+name) }
	for c, spec := range []struct {
		name, typ string
		private   bool
	}{{"Favourites", "favorites", false}, {"Wishlist", "wishlist", true}} {
		col := &users.Collection{ID: key(ids.Collection, spec.name), UserID: userID, Name: spec.name, Type: spec.typ, Private: spec.private, UpdatedAt: ts(at)}
		for k := range 3 {
			f := pick(c*3 + k)
			col.Items = append(col.Items, users.CollectionItem{CigarID: *cigarID(f[0], f[1]), AddedAt: ts(at.Add(time.Duration(k) * time.Hour))})
		}
		if err := st.SaveCollection(ctx, col); err != nil {
			return err
		}
	}
	h := &users.Humidor{ID: key(ids.Humidor, "Home humidor"), UserID: userID, Name: "Home humidor"}
	for k := range 3 {
		f := pick(k + 1)
		h.Items = append(h.Items, users.HumidorItem{CigarID: *cigarID(f[0], f[1]), Quantity: 2 + k*3, AddedAt: ts(at.Add(-time.Duration(k) * 72 * time.Hour))})
	}
	if err := st.SaveHumidor(ctx, h); err != nil {
		return err
	}
	for k := range 4 {
		f := pick(k)
		start := at.Add(time.Duration(k) * 50 * time.Hour)
		end := start.Add(75 * time.Minute)
		dur := int(end.Sub(start).Seconds())
		rating := 3.5 + float64((n+k)%4)*0.5
		note := "Demo session " + f[1]
		visibility := "public"
		if k == 3 {
			visibility = "private"
		}
		x := &users.SmokeSession{ID: key(ids.SmokeSession, ts(start)), UserID: userID, CigarID: cigarID(f[0], f[1]), BrandID: brandID(f[0]), VenueID: venueID(places[(n+k)%len(places)]),
			StartedAt: ts(start), EndedAt: str(ts(end)), DurationSeconds: &dur, Rating: &rating, Note: &note,
			Featured: k == 0, Visibility: visibility, CreatedAt: ts(end)}
		if err := st.SaveSmokeSession(ctx, x); err != nil {
			return err
		}
	}
	// Every user smokes Padrón at The Ember Room twice: the demo's busiest venue
	// and brand feeds, with featured and private sessions among them.
	for k := range 2 {
		start := at.Add(time.Duration(200+k*30) * time.Hour)
		end := start.Add(time.Hour)
		dur := int(end.Sub(start).Seconds())
		rating := 4.0 + float64(k)*0.5
		note := []string{"Slow, even burn.", "Cocoa and espresso to the nub."}[k]
		visibility := "public"
		if (n+k)%5 == 4 {
			visibility = "private"
		}
		x := &users.SmokeSession{ID: key(ids.SmokeSession, "ember "+ts(start)), UserID: userID,
			CigarID: cigarID("Padrón", []string{"1964 Anniversary Series Exclusivo", "1964 Anniversary Series Imperial"}[k]), BrandID: brandID("Padrón"),
			VenueID: venueID("The Ember Room"), StartedAt: ts(start), EndedAt: str(ts(end)), DurationSeconds: &dur, Rating: &rating, Note: &note,
			Featured: (n+k)%3 == 0, Visibility: visibility, CreatedAt: ts(end)}
		if err := st.SaveSmokeSession(ctx, x); err != nil {
			return err
		}
	}
	for k := range 3 {
		c := &users.CheckIn{ID: key(ids.CheckIn, ts(at.Add(time.Duration(k)*30*time.Hour))), UserID: userID,
			VenueID: *venueID(places[(n+2*k)%len(places)]), CheckedInAt: ts(at.Add(time.Duration(k) * 30 * time.Hour))}
		if err := st.SaveCheckIn(ctx, c); err != nil {
			return err
		}
	}
	return nil
}
