package importer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/jsonlines"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/users"
	"github.com/vitolahq/vitola/subgraphs/users/importer"
	"github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

func TestParseRefusesBadLines(t *testing.T) {
	session := func(extra string) string {
		return `{"userEmail": "ana@example.com", "startedAt": "2026-11-20T20:00:00Z"` + extra + `}`
	}
	for _, c := range []struct{ file, want string }{
		{`{"startedAt": "2026-11-20T20:00:00Z"}`, "give the session's user: userEmail or userId"},
		{session(`, "userId": "usr_0000000000000000"`), "give the session's user: userEmail or userId, not both"},
		{`{"userId": "ana", "startedAt": "2026-11-20T20:00:00Z"}`, `userId "ana" is not a user ID`},
		{session(`, "cigarId": "brd_0000000000000000"`), "is not a cigar ID"},
		{session(`, "venue": "x", "venueId": "ven_0000000000000000"`), "give venue or venueId, not both"},
		{session(`, "rating": 7`), "rating 7 must be from 0 to 5"},
		{session(`, "rating": -0.5`), "rating -0.5 must be from 0 to 5"},
		{session(`, "note": "` + strings.Repeat("a", 2001) + `"`), "note is longer than 2000 characters"},
		{session(`, "visibility": "friends"`), `visibility "friends": want public or private`},
		{session(`, "endedAt": "2026-11-20T19:00:00Z"`), "endedAt must not be before startedAt"},
		{session(`, "durationSeconds": -1`), "durationSeconds must not be negative"},
		{session(`, "createdAt": "now"`), `createdAt "now" is not an RFC 3339 date-time`},
		{`{"userEmail": "ana@example.com"}`, "startedAt is required"},
		{session(`, "Featured": true, "featured": true, "stars": 5`), `unknown field "stars"`},
		{session("") + "\n" + session(`, "note": "again"`), `line 2: this user's session "2026-11-20T20:00:00.000Z" is already on line 1`},
	} {
		_, err := importer.Parse(strings.NewReader(c.file))
		var le *jsonlines.LineError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &le) {
			t.Errorf("%.80s: %v, want %q", c.file, err, c.want)
		}
	}
}

// fakeRefs stands in for the catalog's and the venues subgraph's stores, which
// own cigars and venues (cmd/vitola's import test uses the real ones).
type fakeRefs struct{}

var (
	cigarID = ids.Derive(ids.Cigar, "Padrón\x001964 Anniversary Series Exclusivo")
	brandID = ids.Derive(ids.Brand, "Padrón")
	venueID = ids.Derive(ids.Venue, "The Ember Room")
)

func (fakeRefs) CigarBrand(_ context.Context, id string) (string, error) {
	if id == cigarID {
		return brandID, nil
	}
	return "", fmt.Errorf("cigar %s is not in the catalog", id)
}

func (fakeRefs) VenueID(_ context.Context, id, ref string) (string, error) {
	if id == venueID || ref == "The Ember Room" {
		return venueID, nil
	}
	return "", fmt.Errorf("venue %s is not in the store", id+ref)
}

func TestImportSessionsAllOrNothing(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db)
		var ana, bo *users.User
		for _, u := range []struct {
			to      **users.User
			email   string
			private bool
		}{{&ana, "ana@example.com", false}, {&bo, "bo@example.com", true}} {
			p, err := users.NewUser{Email: u.email, Password: "a long passphrase", DisplayName: u.email[:3], Private: u.private}.Prepare(time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := st.CreateUser(ctx, p); err != nil {
				t.Fatal(err)
			}
			*u.to = p
		}
		file := `{"userEmail": "ANA@example.com", "cigarId": "` + cigarID + `", "venue": "The Ember Room", "startedAt": "2026-11-20T20:00:00+01:00", "endedAt": "2026-11-20T20:45:30+01:00", "rating": 4.5, "featured": true, "visibility": "public"}
{"userId": "` + ana.ID + `", "ref": "second", "venueId": "` + venueID + `", "startedAt": "2026-11-21T20:00:00Z", "createdAt": "2026-11-22T08:00:00Z", "visibility": "public"}
{"userEmail": "ana@example.com", "venue": "The Ember Room", "startedAt": "2026-11-22T20:00:00Z", "note": "private by default"}
{"userEmail": "bo@example.com", "venue": "The Ember Room", "startedAt": "2026-11-22T20:00:00Z", "visibility": "public", "note": "private profile"}`
		feed := func() []*users.FeedSession {
			got, _, err := st.BusinessSessions(ctx, users.FeedQuery{VenueID: venueID, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}

		for _, bad := range []struct{ line, want string }{
			{`{"userEmail": "cy@example.com", "startedAt": "2026-11-23T20:00:00Z"}`, "line 5: user cy@example.com has no account: create it first (vitola users create)"},
			{`{"userEmail": "ana@example.com", "cigarId": "cig_0000000000000000", "startedAt": "2026-11-23T20:00:00Z"}`, "line 5: cigar cig_0000000000000000 is not in the catalog"},
			{`{"userEmail": "ana@example.com", "venue": "Nowhere", "startedAt": "2026-11-23T20:00:00Z"}`, "line 5: venue Nowhere is not in the store"},
			{`{"userId": "` + ana.ID + `", "startedAt": "2026-11-20T19:00:00Z"}`, "line 5: the same session as line 1 (same user and ref)"},
		} {
			recs, err := importer.Parse(strings.NewReader(file + "\n" + bad.line))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := importer.Apply(ctx, st, fakeRefs{}, recs, nil); err == nil || err.Error() != bad.want {
				t.Errorf("%s: %v, want %q", bad.line, err, bad.want)
			}
			if got := feed(); len(got) != 0 {
				t.Fatalf("%d sessions landed from a refused file", len(got))
			}
		}

		recs, err := importer.Parse(strings.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second import changes nothing
			sum, err := importer.Apply(ctx, st, fakeRefs{}, recs, nil)
			if err != nil || sum != (importer.Summary{Sessions: 4, Public: 3}) {
				t.Fatalf("import: %+v %v", sum, err)
			}
		}
		got := feed()
		if len(got) != 2 {
			t.Fatalf("feed has %d sessions, want ana's 2 public ones (not the private one, not the private profile's)", len(got))
		}
		second, first := got[0], got[1]
		if second.ID != ids.Derive(ids.SmokeSession, ana.ID+"\x00second") || second.CreatedAt != "2026-11-22T08:00:00.000Z" || second.CigarID != nil {
			t.Errorf("newest session: %+v", second.SmokeSession)
		}
		if first.StartedAt != "2026-11-20T19:00:00.000Z" || first.CreatedAt != first.StartedAt || *first.EndedAt != "2026-11-20T19:45:30.000Z" ||
			*first.DurationSeconds != 2730 || *first.Rating != 4.5 || !first.Featured || *first.BrandID != brandID || *first.CigarID != cigarID ||
			first.ID != ids.Derive(ids.SmokeSession, ana.ID+"\x00"+first.StartedAt) {
			t.Errorf("oldest session: %+v", first.SmokeSession)
		}
	})
}
