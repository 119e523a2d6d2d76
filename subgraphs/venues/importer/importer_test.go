package importer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/jsonlines"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/venues"
	"github.com/vitolahq/vitola/subgraphs/venues/importer"
	"github.com/vitolahq/vitola/subgraphs/venues/sqlstore"
)

func TestParseRefusesBadLines(t *testing.T) {
	event := func(extra string) string {
		return `{"venue": "v", "name": "Night", "startsAt": "2027-01-08T19:00:00Z", "endsAt": "2027-01-08T23:00:00Z"` + extra + `}`
	}
	for _, c := range []struct {
		kind, file, want string
	}{
		{"venues", `{"name": "A", "city": "B"}`, "line 1: country is required"},
		{"venues", `{"name": "A", "city": "B", "country": "C", "web": "x"}`, `line 1: not a venue object: json: unknown field "web"`},
		{"venues", `{"name": "A", "city": "B", "country": "C", "website": "javascript:alert(1)"}`, "line 1: website \"javascript:alert(1)\" is not an http or https URL"},
		{"venues", `{"name": "A", "city": "B", "country": "C"}` + "\n\n" + `{"name": " A ", "city": "D", "country": "E"}`, `line 3: venue ref "A" is already on line 1`},
		{"venues", `{"name": "` + strings.Repeat("é", 201) + `", "city": "B", "country": "C"}`, "line 1: name is longer than 200 characters"},
		{"events", `{"name": "Night", "startsAt": "2027-01-08T19:00:00Z", "endsAt": "2027-01-08T23:00:00Z"}`, "line 1: give the event's venue"},
		{"events", event(`, "venueId": "ven_x"`), "line 1: give the event's venue"},
		{"events", strings.Replace(event(""), `"venue": "v"`, `"venueId": "brd_0000000000000000"`, 1), "is not a venue ID"},
		{"events", event(`, "brand": "Padrón", "brandId": "brd_0000000000000000"`), "give brand or brandId, not both"},
		{"events", event(`, "brandId": "Padrón"`), `brandId "Padrón" is not a brand ID`},
		{"events", strings.Replace(event(""), "2027-01-08T23:00:00Z", "2027-01-08T19:00:00Z", 1), "endsAt must be after startsAt"},
		{"events", strings.Replace(event(""), "2027-01-08T19:00:00Z", "2027-01-08 19:00", 1), `startsAt "2027-01-08 19:00" is not an RFC 3339 date-time`},
		{"events", event("") + "\n" + event(""), `line 2: event "Night @ 2027-01-08T19:00:00Z" at this venue is already on line 1`},
	} {
		var err error
		if c.kind == "venues" {
			_, err = importer.ParseVenues(strings.NewReader(c.file))
		} else {
			_, err = importer.ParseEvents(strings.NewReader(c.file))
		}
		var le *jsonlines.LineError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &le) {
			t.Errorf("%s %s: %v, want %q", c.kind, c.file, err, c.want)
		}
	}
}

// fakeCatalogBrands stands in for the catalog subgraph's store, which owns
// brands (cmd/vitola's import test uses the real one).
func fakeCatalogBrands(ctx context.Context, id, name string) (string, error) {
	if id == ids.Derive(ids.Brand, "Padrón") || strings.EqualFold(name, "Padrón") {
		return ids.Derive(ids.Brand, "Padrón"), nil
	}
	return "", fmt.Errorf("brand %q is not in the catalog", name+id)
}

func TestImportVenuesAndEventsAllOrNothing(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db)
		vs, err := importer.ParseVenues(strings.NewReader(`{"ref": "ember", "name": "The Ember Room", "city": "Miami", "country": "United States", "website": "https://ember.example"}
{"name": "Casa", "city": "Madrid", "country": "Spain"}`))
		if err != nil {
			t.Fatal(err)
		}
		var reports []string
		progress := func(done, total int) { reports = append(reports, fmt.Sprintf("%d/%d", done, total)) }
		if sum, err := importer.ApplyVenues(ctx, st, vs, progress); err != nil || sum != (importer.Summary{Total: 2, New: 2}) {
			t.Fatalf("venues: %+v %v", sum, err)
		}
		if sum, _ := importer.ApplyVenues(ctx, st, vs, nil); sum != (importer.Summary{Total: 2, New: 0}) {
			t.Fatalf("venues again: %+v", sum)
		}
		v, err := st.Venue(ctx, venues.VenueID("ember"))
		if err != nil || v.Name != "The Ember Room" || *v.Website != "https://ember.example" {
			t.Fatalf("venue by ref: %+v %v", v, err)
		}
		if _, err := st.Venue(ctx, venues.VenueID("Casa")); err != nil {
			t.Fatalf("a venue without a ref is keyed by its name: %v", err)
		}

		events := `{"venue": "ember", "name": "Padrón Night", "startsAt": "2027-01-08T19:00:00-05:00", "endsAt": "2027-01-08T23:00:00-05:00", "brand": "padrón"}
{"venueId": "` + venues.VenueID("Casa") + `", "ref": "weekly", "name": "Open Humidor", "startsAt": "2027-01-09T18:00:00Z", "endsAt": "2027-01-09T21:00:00Z"}`
		es, err := importer.ParseEvents(strings.NewReader(events + "\n" + `{"venue": "nowhere", "name": "Lost", "startsAt": "2027-01-09T18:00:00Z", "endsAt": "2027-01-09T21:00:00Z"}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := importer.ApplyEvents(ctx, st, fakeCatalogBrands, es, nil); err == nil || err.Error() != "line 3: venue nowhere is not in the store: import it first (vitola import venues)" {
			t.Fatalf("unknown venue: %v", err)
		}
		if _, n, _ := st.Counts(ctx); n != 0 {
			t.Fatalf("%d events landed from a refused file", n)
		}
		es, _ = importer.ParseEvents(strings.NewReader(events + "\n" + `{"venue": "ember", "name": "X", "startsAt": "2027-01-09T18:00:00Z", "endsAt": "2027-01-09T21:00:00Z", "brand": "Nope"}`))
		if _, err := importer.ApplyEvents(ctx, st, fakeCatalogBrands, es, nil); err == nil || !strings.HasPrefix(err.Error(), `line 3: brand "Nope" is not in the catalog`) {
			t.Fatalf("unknown brand: %v", err)
		}
		es, _ = importer.ParseEvents(strings.NewReader(events))
		reports = nil
		if sum, err := importer.ApplyEvents(ctx, st, fakeCatalogBrands, es, progress); err != nil || sum != (importer.Summary{Total: 2, New: 2}) || strings.Join(reports, " ") != "2/2" {
			t.Fatalf("events: %+v %v %v", sum, err, reports)
		}
		if sum, _ := importer.ApplyEvents(ctx, st, fakeCatalogBrands, es, nil); sum.New != 0 {
			t.Fatalf("events again: %+v", sum)
		}
		got, err := st.Events(ctx, venues.EventFilter{VenueID: venues.VenueID("ember")}, venues.Page{Size: 10})
		if err != nil || len(got) != 1 || got[0].Name != "Padrón Night" || *got[0].BrandID != ids.Derive(ids.Brand, "Padrón") ||
			got[0].StartsAt.Format("2006-01-02T15:04Z07:00") != "2027-01-09T00:00Z" {
			t.Fatalf("imported event: %+v %v", got, err)
		}
	})
}
