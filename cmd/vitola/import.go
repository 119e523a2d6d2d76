package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/logging"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	catalogimport "github.com/vitolahq/vitola/subgraphs/catalog/importer"
	catalogsql "github.com/vitolahq/vitola/subgraphs/catalog/sqlstore"
	sessionimport "github.com/vitolahq/vitola/subgraphs/users/importer"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
	"github.com/vitolahq/vitola/subgraphs/venues"
	venueimport "github.com/vitolahq/vitola/subgraphs/venues/importer"
	venuessql "github.com/vitolahq/vitola/subgraphs/venues/sqlstore"
)

// importer loads one kind of JSON Lines file: it checks every line, then opens
// the stores it needs and writes the whole file at once, returning what it
// imported ("3 venues (2 new)").
type importer func(ctx context.Context, in io.Reader, cfg sqldb.Config, progress func(done, total int)) (string, error)

// importers are the kinds `vitola import` loads, each documented in docs/operations/importing.md.
var importers = map[string]importer{
	"catalog":  importCatalog,
	"venues":   importVenues,
	"events":   importEvents,
	"sessions": importSessions,
}

// runImport loads data files into the stores: `vitola import KIND FILE` (FILE
// "-" reads standard input). Nothing is written unless every line is good.
func runImport(ctx context.Context, c command, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet(c.path)
	var store storeSettings
	store.register(fs, getenv)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	kind, name := pos[0], pos[1]
	run, ok := importers[kind]
	if !ok {
		return c.misuse(fs, "KIND %q: want catalog, venues, events or sessions", kind)
	}
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("import %s: %w", kind, err)
		}
		defer f.Close()
		in = f
	}
	start := time.Now()
	what, err := run(ctx, in, store.config(), progressPrinter(stderr, kind))
	if err != nil {
		return fmt.Errorf("import %s %s: %w (nothing was imported)", kind, name, err)
	}
	fmt.Fprintf(stdout, "imported %s from %s in %s\n", what, name, time.Since(start).Round(time.Millisecond))
	return nil
}

func importCatalog(ctx context.Context, in io.Reader, cfg sqldb.Config, progress func(done, total int)) (string, error) {
	recs, err := catalogimport.Parse(in)
	if err != nil {
		return "", err
	}
	st, err := catalogsql.Open(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer st.Close()
	sum, err := catalogimport.Apply(ctx, st, recs, progress)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d cigars (%d new, %d new brands%s) and %d products", sum.Cigars, sum.NewCigars, sum.NewBrands, countryNote(sum), sum.Products), nil
}

// countryNote says which new brands came without brandCountry, and what their
// country became: "; country from their cigars' origin: Cohiba; country
// unknown (their cigars' origins differ; give brandCountry): Nueva Marca".
func countryNote(sum catalogimport.Summary) string {
	var note string
	if len(sum.CountryFromOrigin) > 0 {
		note += "; country from their cigars' origin: " + someNames(sum.CountryFromOrigin)
	}
	if len(sum.CountryUnknown) > 0 {
		note += "; country unknown (their cigars' origins differ; give brandCountry): " + someNames(sum.CountryUnknown)
	}
	return note
}

// someNames lists up to three names, then how many more: the summary stays one
// line.
func someNames(names []string) string {
	const shown = 3
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

func importVenues(ctx context.Context, in io.Reader, cfg sqldb.Config, progress func(done, total int)) (string, error) {
	recs, err := venueimport.ParseVenues(in)
	if err != nil {
		return "", err
	}
	st, err := venuessql.Open(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer st.Close()
	sum, err := venueimport.ApplyVenues(ctx, st, recs, progress)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d venues (%d new)", sum.Total, sum.New), nil
}

func importEvents(ctx context.Context, in io.Reader, cfg sqldb.Config, progress func(done, total int)) (string, error) {
	recs, err := venueimport.ParseEvents(in)
	if err != nil {
		return "", err
	}
	refs, err := openRefs(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer refs.Close()
	sum, err := venueimport.ApplyEvents(ctx, refs.venues, refs.BrandID, recs, progress)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d events (%d new)", sum.Total, sum.New), nil
}

func importSessions(ctx context.Context, in io.Reader, cfg sqldb.Config, progress func(done, total int)) (string, error) {
	recs, err := sessionimport.Parse(in)
	if err != nil {
		return "", err
	}
	refs, err := openRefs(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer refs.Close()
	st, err := userssql.Open(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer st.Close()
	sum, err := sessionimport.Apply(ctx, st, refs, recs, progress)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d sessions (%d public, %d private)", sum.Sessions, sum.Public, sum.Sessions-sum.Public), nil
}

// refs finds what imported events and sessions refer to in the catalog's and
// the venues subgraph's stores, through their store interfaces (never their
// tables): subgraphs own their data.
type refs struct {
	catalog *catalogsql.Store
	venues  *venuessql.Store
	// brandsByName maps folded brand names to IDs, loaded at the first lookup.
	brandsByName map[string]string
}

func openRefs(ctx context.Context, cfg sqldb.Config) (*refs, error) {
	c, err := catalogsql.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	v, err := venuessql.Open(ctx, cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &refs{catalog: c, venues: v}, nil
}

func (r *refs) Close() {
	r.catalog.Close()
	r.venues.Close()
}

// BrandID finds a catalog brand by its public ID or its name (any case).
func (r *refs) BrandID(ctx context.Context, id, name string) (string, error) {
	if id != "" {
		if _, err := r.catalog.Brand(ctx, id); err != nil {
			return "", notFound(err, "brand %s is not in the catalog", id)
		}
		return id, nil
	}
	if r.brandsByName == nil {
		all, err := r.catalog.AllBrands(ctx)
		if err != nil {
			return "", err
		}
		r.brandsByName = make(map[string]string, len(all))
		for _, b := range all {
			r.brandsByName[strings.ToLower(b.Name)] = b.ID
		}
	}
	if id, ok := r.brandsByName[strings.ToLower(strings.TrimSpace(name))]; ok {
		return id, nil
	}
	return "", fmt.Errorf("brand %q is not in the catalog: check its spelling or import it first (vitola import catalog)", name)
}

// CigarBrand finds a catalog cigar's brand.
func (r *refs) CigarBrand(ctx context.Context, cigarID string) (string, error) {
	c, err := r.catalog.Cigar(ctx, cigarID)
	if err != nil {
		return "", notFound(err, "cigar %s is not in the catalog", cigarID)
	}
	return c.BrandID, nil
}

// VenueID finds a venue by its public ID or its ref.
func (r *refs) VenueID(ctx context.Context, id, ref string) (string, error) {
	venueID := id
	if venueID == "" {
		venueID = venues.VenueID(ref)
	}
	if _, err := r.venues.Venue(ctx, venueID); err != nil {
		if errors.Is(err, venues.ErrNotFound) {
			return "", venueimport.MissingVenue(id, ref)
		}
		return "", err
	}
	return venueID, nil
}

// notFound words a failed lookup: a clear message when the record is missing,
// the store's error otherwise.
func notFound(err error, format string, args ...any) error {
	if errors.Is(err, catalog.ErrNotFound) || errors.Is(err, venues.ErrNotFound) {
		return fmt.Errorf(format, args...)
	}
	return err
}

// progressPrinter reports progress on stderr: one updating line on a terminal,
// plain lines otherwise.
func progressPrinter(w io.Writer, what string) func(done, total int) {
	tty := logging.IsTerminal(w)
	return func(done, total int) {
		if tty {
			fmt.Fprintf(w, "\r%d/%d %s", done, total, what)
			if done == total {
				fmt.Fprintln(w)
			}
			return
		}
		fmt.Fprintf(w, "%d/%d %s\n", done, total, what)
	}
}
