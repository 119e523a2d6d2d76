// Package users is the users subgraph's domain: user accounts and their public
// profiles. Connected-user data (collections, humidors, sessions, OAuth) joins it
// with the OAuth issue.
package users

import (
	"context"
	"errors"
	"time"
)

// User is an account. Email and the password hash are private.
type User struct {
	ID           string
	Email        string
	PasswordHash string
	DisplayName  string
	FirstName    *string
	LastName     *string
	ImageURL     *string
	CoverURL     *string
	Website      *string
	Bio          *string
	// Private profiles show only id and displayName publicly.
	Private   bool
	CreatedAt time.Time
}

func (User) IsEntity() {}

// ErrNotFound is returned for an unknown user.
var ErrNotFound = errors.New("user not found")

// Store is the users subgraph's storage.
type Store interface {
	User(ctx context.Context, id string) (*User, error)
	UpsertUser(ctx context.Context, u *User) error
	CountUsers(ctx context.Context) (int, error)
	Ping(ctx context.Context) error
}
