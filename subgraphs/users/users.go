// Package users is the users subgraph's domain: user accounts and their public
// profiles. Connected-user data (collections, humidors, sessions, OAuth) joins it
// with the OAuth issue.
package users

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
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
	UserByEmail(ctx context.Context, email string) (*User, error)
	// CreateUser stores a new account (ErrEmailTaken when the email is in use).
	CreateUser(ctx context.Context, u *User) error
	UpsertUser(ctx context.Context, u *User) error
	CountUsers(ctx context.Context) (int, error)
	Ping(ctx context.Context) error
}

// Errors of account creation.
var (
	ErrEmailTaken  = errors.New("a user with that email already exists")
	ErrBadEmail    = errors.New("email must look like name@example.com (at most 254 characters)")
	ErrBadName     = errors.New("display name must be 1 to 100 characters")
	ErrBadNamePart = errors.New("first and last names must be at most 100 characters")
)

// NewUser is what creating an account takes.
type NewUser struct {
	Email, Password, DisplayName string
	FirstName, LastName          *string
	Private                      bool
}

// Prepare validates a new account and returns the user to store, its password
// hashed and its email lower-cased (emails are unique whatever their case).
func (n NewUser) Prepare(now time.Time) (*User, error) {
	email := strings.ToLower(strings.TrimSpace(n.Email))
	at := strings.LastIndexByte(email, '@')
	if at < 1 || at == len(email)-1 || len(email) > 254 || strings.ContainsAny(email, " \t\r\n") || !strings.Contains(email[at:], ".") {
		return nil, ErrBadEmail
	}
	name := strings.TrimSpace(n.DisplayName)
	if name == "" || len([]rune(name)) > 100 {
		return nil, ErrBadName
	}
	for _, p := range []*string{n.FirstName, n.LastName} {
		if p != nil && len([]rune(*p)) > 100 {
			return nil, ErrBadNamePart
		}
	}
	hash, err := HashPassword(n.Password)
	if err != nil {
		return nil, err
	}
	return &User{
		ID: ids.New(ids.User), Email: email, PasswordHash: hash, DisplayName: name,
		FirstName: n.FirstName, LastName: n.LastName, Private: n.Private, CreatedAt: now.UTC().Truncate(time.Millisecond),
	}, nil
}
