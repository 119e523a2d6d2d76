// Package demo seeds the demo venues and events. The venues are invented; events
// feature real brands of the demo catalog by the IDs the catalog derives from
// brand names.
package demo

import (
	"context"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/subgraphs/venues"
)

// VenueID is the ID a demo venue gets from its name.
func VenueID(name string) string { return venues.VenueID(name) }

// brandID must match the catalog's demo.BrandID (the venues subgraph does not
// import the catalog: the ID derivation is the shared contract).
func brandID(name string) string { return ids.Derive(ids.Brand, name) }

func str(s string) *string { return &s }

// Venues are the demo venues.
var Venues = []venues.Venue{
	{Name: "The Ember Room", City: "Miami", Country: "United States", Website: str("https://ember.vitola.example")},
	{Name: "Casa del Humo", City: "Madrid", Country: "Spain"},
	{Name: "Leaf & Ash Lounge", City: "London", Country: "United Kingdom", Website: str("https://leafandash.vitola.example")},
	{Name: "Salon Havane", City: "Paris", Country: "France"},
	{Name: "Corona Club", City: "Toronto", Country: "Canada"},
	{Name: "Tabaco Norte", City: "Monterrey", Country: "Mexico"},
}

type event struct {
	venue, brand, name string
	day                int // days after the demo epoch
	hours              int
}

var events = []event{
	{"The Ember Room", "Padrón", "Padrón Anniversary Night", 3, 4},
	{"The Ember Room", "Arturo Fuente", "Fuente Friday", 10, 3},
	{"The Ember Room", "", "Open Humidor Evening", 17, 5},
	{"Casa del Humo", "Cohiba", "Cohiba Vertical Tasting", 5, 3},
	{"Casa del Humo", "Montecristo", "Montecristo No. 2 Masterclass", 12, 2},
	{"Leaf & Ash Lounge", "Davidoff", "Davidoff Pairing Dinner", 7, 4},
	{"Leaf & Ash Lounge", "Padrón", "Padrón and Port", 21, 3},
	{"Salon Havane", "Partagás", "Soirée Partagás", 9, 3},
	{"Salon Havane", "Hoyo de Monterrey", "Hoyo Garden Party", 30, 5},
	{"Corona Club", "Romeo y Julieta", "Romeo y Julieta Churchill Night", 14, 3},
	{"Tabaco Norte", "My Father", "My Father Blend Night", 6, 3},
	{"Tabaco Norte", "", "Beginners' Cigar Class", 20, 2},
}

// Epoch is the first day of the demo's events.
var Epoch = time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)

// Seed upserts the demo venues and events in one transaction, so replicas seeding
// together never see half a seed.
func Seed(ctx context.Context, store venues.Store) error {
	return store.Write(ctx, func(w venues.Writer) error { return seed(ctx, w) })
}

func seed(ctx context.Context, store venues.Writer) error {
	for _, v := range Venues {
		v.ID = VenueID(v.Name)
		if err := store.UpsertVenue(ctx, &v); err != nil {
			return err
		}
	}
	for _, e := range events {
		ev := &venues.Event{
			ID: ids.Derive(ids.Event, e.venue+"\x00"+e.name), VenueID: VenueID(e.venue), Name: e.name,
			StartsAt: Epoch.AddDate(0, 0, e.day),
		}
		ev.EndsAt = ev.StartsAt.Add(time.Duration(e.hours) * time.Hour)
		if e.brand != "" {
			ev.BrandID = str(brandID(e.brand))
		}
		if err := store.UpsertEvent(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}
