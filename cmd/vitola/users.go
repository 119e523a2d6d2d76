package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vitolahq/vitola/subgraphs/users"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

// runUsers manages accounts: `vitola users create --email E --password P
// --display-name N [--first-name F] [--last-name L] [--private]` prints the new
// user's ID on its last line. --password - reads the password from standard
// input, which keeps it out of shell history and process listings.
func runUsers(ctx context.Context, c command, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlagSet(c.path)
	var store storeSettings
	store.register(fs, getenv)
	var n users.NewUser
	var first, last string
	fs.StringVar(&n.Email, "email", "", "the account's email (required, unique)")
	fs.StringVar(&n.Password, "password", "", "the password, or - to read it from standard input (required)")
	fs.StringVar(&n.DisplayName, "display-name", "", "the public display name (required)")
	fs.StringVar(&first, "first-name", "", "first name")
	fs.StringVar(&last, "last-name", "", "last name")
	fs.BoolVar(&n.Private, "private", false, "a private profile: public views show only the ID and display name")
	if _, err := c.parse(fs, args); err != nil {
		return err
	}
	if n.Email == "" || n.Password == "" || n.DisplayName == "" {
		return c.misuse(fs, "--email, --password and --display-name are required")
	}
	if n.Password == "-" {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("users create: read the password: %w", err)
		}
		n.Password = strings.TrimRight(line, "\r\n")
	}
	if first != "" {
		n.FirstName = &first
	}
	if last != "" {
		n.LastName = &last
	}
	u, err := n.Prepare(time.Now())
	if err != nil {
		return fmt.Errorf("users create: %w", err)
	}
	st, err := userssql.Open(ctx, store.config())
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CreateUser(ctx, u); err != nil {
		return fmt.Errorf("users create: %w", err)
	}
	fmt.Fprintf(stdout, "Created user %s <%s>:\n%s\n", u.DisplayName, u.Email, u.ID)
	return nil
}
