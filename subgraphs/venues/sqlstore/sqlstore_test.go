package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/venues"
	"github.com/vitolahq/vitola/subgraphs/venues/sqlstore"
)

// Paging events by position visits each event once, in order, even when several
// start in the same second or at a whole second.
func TestEventsPageThroughEveryEvent(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db)
		if err := st.UpsertVenue(ctx, &venues.Venue{ID: "ven_1", Name: "Lounge", City: "Miami", Country: "US"}); err != nil {
			t.Fatal(err)
		}
		base := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
		starts := []time.Time{base, base, base, base.Add(time.Millisecond), base.Add(time.Second), base.Add(time.Second)}
		var want []string
		for i, at := range starts {
			e := &venues.Event{ID: fmt.Sprintf("evt_%d", i), VenueID: "ven_1", Name: "Tasting", StartsAt: at, EndsAt: at.Add(time.Hour)}
			if err := st.UpsertEvent(ctx, e); err != nil {
				t.Fatal(err)
			}
			want = append(want, e.ID)
		}
		var got []string
		page := venues.Page{Size: 2}
		for range len(starts) {
			es, err := st.Events(ctx, venues.EventFilter{VenueID: "ven_1"}, page)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) > page.Size {
				es = es[:page.Size]
			}
			if len(es) == 0 {
				break
			}
			for _, e := range es {
				got = append(got, e.ID)
			}
			page.After = venues.EventPosition(es[len(es)-1])
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("paged %v, want %v", got, want)
		}
	})
}
