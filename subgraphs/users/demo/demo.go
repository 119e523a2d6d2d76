// Package demo seeds the demo users: invented people, one with a private profile.
package demo

import (
	"context"
	"time"

	"github.com/vitolahq/vitola/ids"
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

// Seed upserts the demo users.
func Seed(ctx context.Context, store users.Store) error {
	created := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	for i, u := range Users {
		u.ID = UserID(u.Email)
		u.CreatedAt = created.Add(time.Duration(i) * time.Hour)
		if err := store.UpsertUser(ctx, &u); err != nil {
			return err
		}
	}
	return nil
}
