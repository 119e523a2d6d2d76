package search_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
)

var (
	demoOnce   sync.Once
	demoBrands []*catalog.Brand
	demoCigars []*catalog.Cigar
)

// demoIndex indexes the demo catalog (1,057 cigars).
func demoIndex(t testing.TB) *search.Index {
	t.Helper()
	demoOnce.Do(func() {
		f, err := demo.LoadFacts()
		if err != nil {
			panic(err)
		}
		demoBrands, demoCigars = f.Catalog()
	})
	return search.Build(demoBrands, demoCigars)
}

func names(hits []search.Hit, n int) []string {
	var out []string
	for i, h := range hits {
		if i == n {
			break
		}
		out = append(out, h.Brand.Name+" "+h.Cigar.Name)
	}
	return out
}

func TestSearchTopResult(t *testing.T) {
	ix := demoIndex(t)
	tests := []struct {
		query, want string
	}{
		{"padron 1964 exclusivo", "Padrón 1964 Anniversary Series Exclusivo"}, // accents optional
		{"PADRÓN 1964 EXCLUSIVO", "Padrón 1964 Anniversary Series Exclusivo"}, // case
		{"padorn 1964 exclusivo", "Padrón 1964 Anniversary Series Exclusivo"}, // swap of neighbours = one typo
		{"montecristo no 2", "Montecristo Classic No. 2"},                     // generic word left out
		{"monte cristo no 2", "Montecristo Classic No. 2"},                    // split word joined
		{"ryj churchill", "Romeo y Julieta Classic Churchill"},                // alias
		{"h upmann magnum 46", "H. Upmann Classic Magnum 46"},                 // alias with a space
		{"hemingway short sto", "Arturo Fuente Hemingway Short Story"},        // prefix of the last word
		{"partagas serie d 4", "Partagás Serie D No. 4"},                      // accent + generic "no"
		{"liga privada no 9 robusto", "Drew Estate Liga Privada No. 9 Robusto"},
		{"cohiba siglo 6", "Cohiba Línea 1492 Siglo VI"},                           // Arabic for the catalog's Roman
		{"montecristo no ii", "Montecristo Classic No. 2"},                         // Roman for the catalog's Arabic
		{"oliva serie 5 torpedo", "Oliva Serie V Torpedo"},                         // a Roman V in a line name
		{"opus x perfecxion 10", "Arturo Fuente Fuente Fuente OpusX Perfecxion X"}, // "opus x" still joins
		{"psd4", "Partagás Serie D No. 4"},                                         // a cigar alias
	}
	for _, tt := range tests {
		hits := ix.Search(tt.query, "")
		if got := names(hits, 1); len(got) == 0 || got[0] != tt.want {
			t.Errorf("Search(%q) top = %v, want %q", tt.query, names(hits, 3), tt.want)
		}
	}
}

// TestResolveReadsTheWayPeopleWrite: numerals, listing words and sizes
// resolve to the same cigar as its plain name, and a size or a count alone
// never stands for a name.
func TestResolveReadsTheWayPeopleWrite(t *testing.T) {
	ix := demoIndex(t)
	tests := []struct {
		query, want string // want "" = not resolved
	}{
		{"Montecristo No. 2", "Montecristo Classic No. 2"},
		{"Montecristo No 2", "Montecristo Classic No. 2"},
		{"Montecristo No2", "Montecristo Classic No. 2"},
		{"Montecristo #2", "Montecristo Classic No. 2"},
		{"Montecristo # II", "Montecristo Classic No. 2"},
		{"Montecristo No. II", "Montecristo Classic No. 2"},
		{"Montecristo Number 2", "Montecristo Classic No. 2"},
		{"Montecristo Nº 2", "Montecristo Classic No. 2"},
		{"a box of 10 Montecristo No. 2 cigars", "Montecristo Classic No. 2"},
		{"Montecristo No. 2 52x6.1", "Montecristo Classic No. 2"},
		{"Montecristo No. 2 6 1/8\" x 52", "Montecristo Classic No. 2"},
		{"H Upmann Magnum 50 ring", "H. Upmann Classic Magnum 50"},                 // the ring is in the name
		{"H Upmann Magnum 6.3 x 50", "H. Upmann Classic Magnum 50"},                // likewise
		{"H Upmann Magnum 52 ring", ""},                                            // no Magnum 52
		{"E.P. Carrillo INCH Natural No. 60", "E.P. Carrillo INCH Natural No. 60"}, // 60 INCH is a name, not a length
		{"Montecristo No. 6", ""},                                                  // a number after "No." is never optional
		{"50x5", ""},
		{"box of 25", ""},
	}
	for _, tt := range tests {
		hits, resolved := ix.Resolve(tt.query, "", 5)
		got := ""
		if resolved {
			got = names(hits, 1)[0]
		}
		if got != tt.want {
			t.Errorf("Resolve(%q) = %q (candidates %v), want %q", tt.query, got, names(hits, 2), tt.want)
		}
	}
}

func TestTypoBudget(t *testing.T) {
	ix := demoIndex(t)
	tests := []struct {
		query string
		finds bool
	}{
		{"padron", true},
		{"padrn", true},             // 5 letters: one typo
		{"pdrn", false},             // 4 letters: none allowed, and no word starts with it
		{"davidof", true},           // missing letter
		{"dvidoff", true},           // missing letter
		{"dvdoff", false},           // two typos in 6 letters
		{"montecrsto", true},        // 10 letters
		{"montcrsto", true},         // two typos from 9 letters
		{"mntcrsto", false},         // three typos
		{"1965 anniversary", false}, // numbers match exactly
	}
	for _, tt := range tests {
		if got := len(ix.Search(tt.query, "")) > 0; got != tt.finds {
			t.Errorf("Search(%q) found = %v, want %v", tt.query, got, tt.finds)
		}
	}
}

func TestSearchMatchesEveryWord(t *testing.T) {
	ix := demoIndex(t)
	for _, h := range ix.Search("padron maduro", "") {
		if h.Brand.Name != "Padrón" {
			t.Fatalf("%s %s matched 'padron maduro'", h.Brand.Name, h.Cigar.Name)
		}
	}
	if hits := ix.Search("padron cohiba", ""); len(hits) != 0 {
		t.Fatalf("two brands' words matched: %v", names(hits, 3))
	}
}

func TestBrandFilter(t *testing.T) {
	ix := demoIndex(t)
	b, ok := ix.Brand("ryj")
	if !ok || b.Name != "Romeo y Julieta" {
		t.Fatalf("Brand(ryj) = %v, %v", b, ok)
	}
	hits := ix.Search("churchill", b.ID)
	if len(hits) == 0 {
		t.Fatal("no RyJ churchills")
	}
	for _, h := range hits {
		if h.Brand.ID != b.ID {
			t.Fatalf("brand filter let %s through", h.Brand.Name)
		}
	}
}

func TestRankingIsDeterministic(t *testing.T) {
	shuffled := slices.Clone(demoCigars)
	demoIndex(t)
	slices.Reverse(shuffled)
	a := search.Build(demoBrands, demoCigars).Search("robusto", "")
	b := search.Build(demoBrands, shuffled).Search("robusto", "")
	if len(a) != len(b) || len(a) < 20 {
		t.Fatalf("%d vs %d hits", len(a), len(b))
	}
	for i := range a {
		if a[i].Cigar.ID != b[i].Cigar.ID || a[i].Score != b[i].Score {
			t.Fatalf("order differs at %d", i)
		}
		if i > 0 && a[i].Score == a[i-1].Score && a[i].Cigar.ID < a[i-1].Cigar.ID {
			t.Fatal("ties not broken by ID")
		}
	}
}

// TestPagingSurvivesInsertions pages through a query while cigars are added
// between pages: no cigar of the original list is repeated or skipped.
func TestPagingSurvivesInsertions(t *testing.T) {
	ix := demoIndex(t)
	cursors := search.NewCursors([]byte("secret"))
	const q = "robusto"
	qk := search.QueryKey(q, "")
	want := map[string]bool{}
	for _, h := range ix.Search(q, "") {
		want[h.Cigar.ID] = true
	}
	cigars := slices.Clone(demoCigars)
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		hits := ix.Search(q, "")
		if cursor != "" {
			pos, err := cursors.Decode(qk, cursor)
			if err != nil {
				t.Fatal(err)
			}
			hits = search.After(hits, pos)
		}
		if len(hits) == 0 {
			break
		}
		if len(hits) > 7 {
			hits = hits[:7]
		}
		for _, h := range hits {
			if seen[h.Cigar.ID] {
				t.Fatalf("page %d repeats %s", page, h.Cigar.Name)
			}
			seen[h.Cigar.ID] = true
		}
		last := hits[len(hits)-1]
		cursor = cursors.Encode(qk, search.Position{Score: last.Score, ID: last.Cigar.ID})
		// Add robustos that rank everywhere in the list before the next page.
		for i := range 3 {
			cigars = append(cigars, &catalog.Cigar{
				ID: fmt.Sprintf("cig_%016d", page*3+i), BrandID: demoBrands[(page+i)%len(demoBrands)].ID,
				Name: strings.Repeat("Extra ", i) + "Robusto",
			})
		}
		ix = search.Build(demoBrands, cigars)
	}
	for id := range want {
		if !seen[id] {
			t.Fatalf("cigar %s skipped", id)
		}
	}
}

func TestCursorsAreBoundAndSigned(t *testing.T) {
	c := search.NewCursors([]byte("secret"))
	cur := c.Encode(search.QueryKey("Padrón  1964", ""), search.Position{Score: 312, ID: "cig_x"})
	if pos, err := c.Decode(search.QueryKey("padron 1964", ""), cur); err != nil || pos.Score != 312 || pos.ID != "cig_x" {
		t.Fatalf("same query, other spelling: %v %v", pos, err)
	}
	for name, bad := range map[string]string{
		"other query":  mustDecodeErr(c, search.QueryKey("padron 1926", ""), cur),
		"other brand":  mustDecodeErr(c, search.QueryKey("padron 1964", "brd_x"), cur),
		"other secret": mustDecodeErr(search.NewCursors([]byte("other")), search.QueryKey("padron 1964", ""), cur),
		"tampered":     mustDecodeErr(c, search.QueryKey("padron 1964", ""), cur[:10]+"A"+cur[11:]),
		"garbage":      mustDecodeErr(c, search.QueryKey("padron 1964", ""), "!!!"),
		"empty":        mustDecodeErr(c, search.QueryKey("padron 1964", ""), ""),
	} {
		if bad != "" {
			t.Errorf("%s: %s", name, bad)
		}
	}
}

func mustDecodeErr(c *search.Cursors, qk, cur string) string {
	if _, err := c.Decode(qk, cur); err == nil {
		return "accepted"
	}
	return ""
}

// TestDerivedNames: on a catalog without any alias, resolve reads the names
// derived from the catalog's own: a brand's initialisms (with and without its
// particles, "&" or "and"), its distinctive word, joined words, the
// initialisms of a line and of a vitola, of brand and name together; and a
// word two brands share names neither.
func TestDerivedNames(t *testing.T) {
	country := "Nicaragua"
	brands := []*catalog.Brand{
		{ID: "b1", Name: "La Gloria Cubana", Country: &country},
		{ID: "b2", Name: "Casa de Torres & Hijos", Country: &country},
		{ID: "b3", Name: "Te-Amo Nuevo", Country: &country},
		{ID: "b4", Name: "Gran Habano", Country: &country},
		{ID: "b5", Name: "Habano Primero", Country: &country},
	}
	var cigars []*catalog.Cigar
	for _, c := range []struct{ brand, name string }{
		{"b1", "Serie R No. 5"}, {"b1", "Serie R No. 6"}, {"b1", "Wavell"}, {"b1", "Classic Double Corona"}, {"b1", "Classic Corona"},
		{"b2", "Master Blend 3 Robusto"}, {"b2", "Master Blend 3 Toro"}, {"b2", "Reserva 8-9-8"}, {"b2", "Reserva Robusto"},
		{"b3", "Toro"}, {"b3", "Churchill"},
		{"b4", "Corojo Robusto"}, {"b4", "Corojo Toro"},
		{"b5", "Corojo Robusto"}, {"b5", "Maduro Robusto"},
	} {
		cigars = append(cigars, &catalog.Cigar{ID: c.brand + "/" + c.name, BrandID: c.brand, Name: c.name, Origin: country})
	}
	ix := search.Build(brands, cigars)
	tests := []struct {
		query, want string // want "" = not resolved
	}{
		{"LGC Wavell", "La Gloria Cubana Wavell"},                    // initialism
		{"GC Serie R 6", "La Gloria Cubana Serie R No. 6"},           // without the particle
		{"L G C Serie R No 5", "La Gloria Cubana Serie R No. 5"},     // spaced
		{"Gloria Wavell", "La Gloria Cubana Wavell"},                 // distinctive word
		{"lgc sr6", "La Gloria Cubana Serie R No. 6"},                // a line's initialism
		{"lgcsr5", "La Gloria Cubana Serie R No. 5"},                 // brand and name together
		{"LGC DC", "La Gloria Cubana Classic Double Corona"},         // a vitola's initialism
		{"CdTH Reserva 898", "Casa de Torres & Hijos Reserva 8-9-8"}, // "8-9-8" joined
		{"Casa de Torres and Hijos Reserva Robusto", "Casa de Torres & Hijos Reserva Robusto"},
		{"CTH MB3 Toro", "Casa de Torres & Hijos Master Blend 3 Toro"},
		{"TeAmo Churchill", "Te-Amo Nuevo Churchill"}, // joined
		{"Habano Corojo Robusto", ""},                 // "Habano" is in two brands' names: it names neither
		{"Gran Habano Corojo Robusto", "Gran Habano Corojo Robusto"},
		{"LGC", ""}, // a brand alone
		{"lgc sr", ""},
	}
	for _, tt := range tests {
		hits, resolved := ix.Resolve(tt.query, "", 5)
		got := ""
		if resolved {
			got = names(hits, 1)[0]
		}
		if got != tt.want {
			t.Errorf("Resolve(%q) = %q (candidates %v), want %q", tt.query, got, names(hits, 2), tt.want)
		}
	}
}

// TestBrandWordCountsOnce: a word of the brand's name that is also a word of
// one of its cigars' names is brand evidence only when the text writes it
// once and names the brand in full; written again, it names the cigar too.
func TestBrandWordCountsOnce(t *testing.T) {
	country := "Nicaragua"
	brands := []*catalog.Brand{
		{ID: "b1", Name: "Kestrel & Finch", Country: &country},
		{ID: "b2", Name: "Gran Corsario", Country: &country},
		{ID: "b3", Name: "Gran Vela", Country: &country},
	}
	var cigars []*catalog.Cigar
	for _, c := range []struct{ brand, name string }{
		{"b1", "Kestrel Robusto"}, {"b1", "Kestrel Toro"}, {"b1", "Finch Reserva Robusto"}, {"b1", "Nocturne Robusto"},
		{"b2", "Serie 5 Gran Robusto"}, {"b2", "Serie 5 Robusto"}, {"b2", "Serie 5 Toro"}, {"b2", "Maduro Robusto"},
		{"b3", "Robusto"}, {"b3", "Churchill"},
	} {
		cigars = append(cigars, &catalog.Cigar{ID: c.brand + "/" + c.name, BrandID: c.brand, Name: c.name, Origin: country})
	}
	ix := search.Build(brands, cigars)
	tests := []struct {
		query, want string // want "" = not resolved
	}{
		// "Kestrel" names the brand here, not its line: three Robustos.
		{"Kestrel & Finch Robusto", ""},
		{"Kestrl & Finch Robusto", ""}, // a typo consumes the word as well
		{"Kestrel & Finch Kestrel Robusto", "Kestrel & Finch Kestrel Robusto"},
		{"Kestrl and Finch Kestrel Robusto", "Kestrel & Finch Kestrel Robusto"},
		{"Kestrel & Finch Robusto Kestrel", "Kestrel & Finch Kestrel Robusto"},
		// Not the brand's full name: the word is the line's as well.
		{"Kestrel Robusto", "Kestrel & Finch Kestrel Robusto"},
		{"Kestrel & Finch Finch Robusto", "Kestrel & Finch Finch Reserva Robusto"},
		{"Kestrel & Finch Nocturne", "Kestrel & Finch Nocturne Robusto"},
		{"Kestrel & Finch Kestrel", ""}, // a Robusto and a Toro
		{"Kestrel & Finch Toro", "Kestrel & Finch Kestrel Toro"},
		// "Gran" of the brand's name, and of a vitola beside a Robusto.
		{"Gran Corsario Serie 5 Gran Robusto", "Gran Corsario Serie 5 Gran Robusto"},
		{"Gran Corsario Serie 5 Robusto", "Gran Corsario Serie 5 Robusto"},
		{"Gran Corsario Gran Robusto", "Gran Corsario Serie 5 Gran Robusto"},
		{"Gran Corsario Robusto", ""},
		// Not the brand's name as written: "Gran" may be the brand's, as
		// "Fuente" of "Fuente Hemingway" is; unresolved, not the Robusto.
		{"Corsario Serie 5 Gran Robusto", ""},
		{"Gran Corsario Serie 5 Robusto Gran", "Gran Corsario Serie 5 Gran Robusto"},
		{"Gran Vela Robusto", "Gran Vela Robusto"},
	}
	for _, tt := range tests {
		hits, resolved := ix.Resolve(tt.query, "", 5)
		got := ""
		if resolved {
			got = names(hits, 1)[0]
		}
		if got != tt.want {
			t.Errorf("Resolve(%q) = %q (candidates %v), want %q", tt.query, got, names(hits, 3), tt.want)
		}
	}
	// Search matches words as written: the brand's every Robusto has them all.
	if got := names(ix.Search("Gran Corsario Gran Robusto", ""), 5); len(got) != 3 {
		t.Errorf("Search(Gran Corsario Gran Robusto) = %v, want the brand's three Robustos", got)
	}
}
