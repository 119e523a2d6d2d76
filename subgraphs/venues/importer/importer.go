// Package importer loads venues and events from JSON Lines files, one record per
// line:
//
//	{"ref": "ember-miami", "name": "The Ember Room", "city": "Miami", "country": "United States", "website": "https://ember.example"}
//	{"venue": "ember-miami", "name": "Padrón Night", "startsAt": "2027-01-08T19:00:00-05:00", "endsAt": "2027-01-08T23:00:00-05:00", "brand": "Padrón"}
//
// Every line is checked before anything is written, references (an event's venue
// and brand) are resolved next, and the whole file then lands in one
// transaction: a bad line leaves the store as it was. Records are upserted by
// their ref, so importing the same file again changes nothing.
package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/jsonlines"
	"github.com/vitolahq/vitola/subgraphs/venues"
)

// Venue is one line of a venues file.
type Venue struct {
	// Ref is the venue's stable key in your data (default: its name). Events and
	// sessions refer to the venue by it.
	Ref     string  `json:"ref,omitempty"`
	Name    string  `json:"name"`
	City    string  `json:"city"`
	Country string  `json:"country"`
	Website *string `json:"website,omitempty"`
	Line    int     `json:"-"`
}

// Event is one line of an events file.
type Event struct {
	// Ref is the event's stable key at its venue (default: its name and start).
	Ref string `json:"ref,omitempty"`
	// Venue is the venue's ref (its name unless it was imported with another);
	// VenueID its public ID. Give exactly one.
	Venue   string `json:"venue,omitempty"`
	VenueID string `json:"venueId,omitempty"`
	Name    string `json:"name"`
	// StartsAt and EndsAt are RFC 3339 date-times.
	StartsAt string `json:"startsAt"`
	EndsAt   string `json:"endsAt"`
	// Brand is the name of a catalog brand the event features; BrandID its public
	// ID. Both are optional; give at most one.
	Brand   string `json:"brand,omitempty"`
	BrandID string `json:"brandId,omitempty"`
	Line    int    `json:"-"`

	startsAt, endsAt time.Time
}

// Limits of the text fields, in characters.
const (
	maxName = 200
	maxRef  = 200
)

// ParseVenues reads and checks every line of a venues file; it stops at the
// first bad line.
func ParseVenues(r io.Reader) ([]Venue, error) {
	seen := map[string]int{}
	return jsonlines.Read(r, "a venue", func(v *Venue, n int) error {
		v.Line = n
		var err error
		for _, f := range []struct {
			name  string
			value *string
		}{{"name", &v.Name}, {"city", &v.City}, {"country", &v.Country}} {
			if *f.value, err = jsonlines.Text(f.name, *f.value, maxName); err != nil {
				return err
			}
		}
		if v.Ref == "" {
			v.Ref = v.Name
		}
		if v.Ref, err = jsonlines.Text("ref", v.Ref, maxRef); err != nil {
			return err
		}
		if err := jsonlines.WebURL("website", v.Website); err != nil {
			return err
		}
		if prev, dup := seen[v.Ref]; dup {
			return fmt.Errorf("venue ref %q is already on line %d", v.Ref, prev)
		}
		seen[v.Ref] = n
		return nil
	})
}

// ParseEvents reads and checks every line of an events file; it stops at the
// first bad line. References are checked by ApplyEvents.
func ParseEvents(r io.Reader) ([]Event, error) {
	seen := map[string]int{}
	return jsonlines.Read(r, "an event", func(e *Event, n int) error {
		e.Line = n
		var err error
		if e.Name, err = jsonlines.Text("name", e.Name, maxName); err != nil {
			return err
		}
		switch {
		case (e.Venue == "") == (e.VenueID == ""):
			return errors.New("give the event's venue: venue (its ref or name) or venueId, not both")
		case e.VenueID != "" && !ids.Valid(e.VenueID, ids.Venue):
			return fmt.Errorf("venueId %q is not a venue ID (ven_…)", e.VenueID)
		case e.Brand != "" && e.BrandID != "":
			return errors.New("give brand or brandId, not both")
		case e.BrandID != "" && !ids.Valid(e.BrandID, ids.Brand):
			return fmt.Errorf("brandId %q is not a brand ID (brd_…)", e.BrandID)
		}
		if e.startsAt, err = jsonlines.Time("startsAt", e.StartsAt); err != nil {
			return err
		}
		if e.endsAt, err = jsonlines.Time("endsAt", e.EndsAt); err != nil {
			return err
		}
		if !e.endsAt.After(e.startsAt) {
			return errors.New("endsAt must be after startsAt")
		}
		if e.Ref == "" {
			e.Ref = e.Name + " @ " + e.startsAt.Format(time.RFC3339)
		}
		if e.Ref, err = jsonlines.Text("ref", e.Ref, maxRef); err != nil {
			return err
		}
		key := e.Venue + "\x00" + e.VenueID + "\x00" + e.Ref
		if prev, dup := seen[key]; dup {
			return fmt.Errorf("event %q at this venue is already on line %d", e.Ref, prev)
		}
		seen[key] = n
		return nil
	})
}

// Summary says what an import did.
type Summary struct{ Total, New int }

// ApplyVenues writes the venues in one transaction, reporting progress.
func ApplyVenues(ctx context.Context, store venues.Store, recs []Venue, progress func(done, total int)) (Summary, error) {
	var sum Summary
	err := store.Write(ctx, func(w venues.Writer) error {
		sum = Summary{}
		for i, r := range recs {
			v := &venues.Venue{ID: venues.VenueID(r.Ref), Name: r.Name, City: r.City, Country: r.Country, Website: r.Website}
			isNew, err := isNew(w.Venue(ctx, v.ID))
			if err != nil {
				return err
			}
			if err := w.UpsertVenue(ctx, v); err != nil {
				return &jsonlines.LineError{Line: r.Line, Err: err}
			}
			sum.count(isNew)
			jsonlines.Progress(progress, i+1, len(recs))
		}
		return nil
	})
	return sum, err
}

// BrandFinder finds a catalog brand's public ID by its ID or its name (the
// catalog owns brands). It returns an error that names what was not found.
type BrandFinder func(ctx context.Context, id, name string) (string, error)

// ApplyEvents resolves each event's venue (which must be in the store already)
// and brand, then writes the events in one transaction, reporting progress.
func ApplyEvents(ctx context.Context, store venues.Store, brands BrandFinder, recs []Event, progress func(done, total int)) (Summary, error) {
	var sum Summary
	err := store.Write(ctx, func(w venues.Writer) error {
		sum = Summary{}
		for i, r := range recs {
			venueID := r.VenueID
			if venueID == "" {
				venueID = venues.VenueID(r.Venue)
			}
			if _, err := w.Venue(ctx, venueID); err != nil {
				if errors.Is(err, venues.ErrNotFound) {
					return &jsonlines.LineError{Line: r.Line, Err: MissingVenue(r.VenueID, r.Venue)}
				}
				return err
			}
			e := &venues.Event{
				ID: ids.Derive(ids.Event, venueID+"\x00"+r.Ref), VenueID: venueID, Name: r.Name,
				StartsAt: r.startsAt, EndsAt: r.endsAt,
			}
			if r.Brand != "" || r.BrandID != "" {
				id, err := brands(ctx, r.BrandID, r.Brand)
				if err != nil {
					return &jsonlines.LineError{Line: r.Line, Err: err}
				}
				e.BrandID = &id
			}
			isNew, err := isNew(w.Event(ctx, e.ID))
			if err != nil {
				return err
			}
			if err := w.UpsertEvent(ctx, e); err != nil {
				return &jsonlines.LineError{Line: r.Line, Err: err}
			}
			sum.count(isNew)
			jsonlines.Progress(progress, i+1, len(recs))
		}
		return nil
	})
	return sum, err
}

// MissingVenue says that the venue a record names by its public ID or its ref is
// not in the store, and what to do about it.
func MissingVenue(id, ref string) error {
	if id == "" {
		id = ref
	}
	return fmt.Errorf("venue %s is not in the store: import it first (vitola import venues)", id)
}

// isNew turns a lookup's result into whether the record is new.
func isNew[T any](_ T, err error) (bool, error) {
	if errors.Is(err, venues.ErrNotFound) {
		return true, nil
	}
	return false, err
}

func (s *Summary) count(isNew bool) {
	s.Total++
	if isNew {
		s.New++
	}
}
