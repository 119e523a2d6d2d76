package search_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
)

// catalogState is a catalog as the store holds it: brands and cigars by ID.
type catalogState struct {
	brands map[string]*catalog.Brand
	cigars map[string]*catalog.Cigar
}

func newCatalogState(brands []*catalog.Brand, cigars []*catalog.Cigar) *catalogState {
	s := &catalogState{brands: map[string]*catalog.Brand{}, cigars: map[string]*catalog.Cigar{}}
	for _, b := range brands {
		s.brands[b.ID] = b
	}
	for _, c := range cigars {
		s.cigars[c.ID] = c
	}
	return s
}

// all returns the catalog in ID order, as the store's AllBrands and AllCigars.
func (s *catalogState) all() ([]*catalog.Brand, []*catalog.Cigar) {
	var bs []*catalog.Brand
	for _, id := range slices.Sorted(maps.Keys(s.brands)) {
		bs = append(bs, s.brands[id])
	}
	var cs []*catalog.Cigar
	for _, id := range slices.Sorted(maps.Keys(s.cigars)) {
		cs = append(cs, s.cigars[id])
	}
	return bs, cs
}

// words people write in cigar names, with numerals, generic words and
// near-misses of each other, so that changed names hit typo, prefix and
// generic-word rules.
var nameWords = []string{"Robusto", "Robustos", "Toro", "Torpedo", "Churchill", "Corona", "Gorda", "Maduro",
	"Classic", "Serie", "No. 2", "No. II", "VI", "6", "Reserva", "Reserve", "Edición", "Limitada", "Lote",
	"Especial", "Exclusivo", "Petit", "Belicoso", "1964", "Añejo", "Gran", "Grand", "Azul", "ZafiroAzul", "No2"}

// changeQueries read words that come and go with the names above: split words
// an index joins only while it holds the joined one, numerals written as one
// word, names derived from them (initialisms, "cr" for "Corona Robusto") and
// the brands' ("Casa" names a brand only while one brand has it).
var changeQueries = []string{"zafiro azul", "zafiro azul robusto", "no2", "no2 maduro", "grand reserve", "lote",
	"cr", "gr robusto", "sn2", "casa toro", "c robusto 12", "ec 2"}

// mutator makes random upserts of a catalog.
type mutator struct {
	r      *rand.Rand
	s      *catalogState
	n      int      // for unique names
	recent []string // cigars written, changed again more often: their words come and go
}

func (m *mutator) pick(xs []string) string { return xs[m.r.IntN(len(xs))] }

func (m *mutator) randomName() string {
	k := 1 + m.r.IntN(4)
	ws := make([]string, k)
	for i := range ws {
		ws[i] = m.pick(nameWords)
	}
	m.n++
	return fmt.Sprintf("%s %d", strings.Join(ws, " "), m.n)
}

func (m *mutator) randomBrand() *catalog.Brand {
	ids := slices.Sorted(maps.Keys(m.s.brands))
	return m.s.brands[ids[m.r.IntN(len(ids))]]
}

func (m *mutator) randomCigar() *catalog.Cigar {
	if len(m.recent) > 0 && m.r.IntN(2) == 0 {
		return m.s.cigars[m.recent[m.r.IntN(len(m.recent))]]
	}
	ids := slices.Sorted(maps.Keys(m.s.cigars))
	return m.s.cigars[ids[m.r.IntN(len(ids))]]
}

// batch makes one write's upserts, applies them to the state and returns them.
func (m *mutator) batch(size int) (brands []*catalog.Brand, cigars []*catalog.Cigar) {
	putC := func(c *catalog.Cigar) {
		m.s.cigars[c.ID] = c
		m.recent = append(m.recent, c.ID)
		cigars = append(cigars, c)
	}
	putB := func(b *catalog.Brand) { m.s.brands[b.ID] = b; brands = append(brands, b) }
	for range size {
		switch op := m.r.IntN(10); op {
		case 0, 1, 2: // a new cigar
			tmpl, b := *m.randomCigar(), m.randomBrand()
			tmpl.Name, tmpl.BrandID, tmpl.Aliases = m.randomName(), b.ID, nil
			tmpl.ID = catalog.CigarID(b.Name, tmpl.Name)
			putC(&tmpl)
		case 3: // renamed
			c := *m.randomCigar()
			c.Name = m.randomName()
			putC(&c)
		case 4: // moved to another brand
			c := *m.randomCigar()
			c.BrandID = m.randomBrand().ID
			putC(&c)
		case 5: // other leaves
			c, other := *m.randomCigar(), m.randomCigar()
			c.Wrapper, c.Filler = other.Wrapper, other.Binder
			putC(&c)
		case 6: // aliases of its own, or none
			c := *m.randomCigar()
			c.Aliases = nil
			if m.r.IntN(2) == 0 {
				c.Aliases = []string{fmt.Sprintf("ZX%d", m.r.IntN(50)), m.pick(nameWords) + " " + m.pick(nameWords)}
			}
			putC(&c)
		case 7: // a brand's aliases change (every cigar of it holds them)
			b := *m.randomBrand()
			b.Aliases = slices.Clone(b.Aliases)
			if len(b.Aliases) > 0 && m.r.IntN(2) == 0 {
				b.Aliases = b.Aliases[1:]
			} else {
				m.n++
				b.Aliases = append(b.Aliases, fmt.Sprintf("Alias %s %d", m.pick(nameWords), m.n))
			}
			putB(&b)
		case 8: // a new brand with a cigar
			m.n++
			name := fmt.Sprintf("Casa %s %d", m.pick(nameWords), m.n)
			b := &catalog.Brand{ID: catalog.BrandID(name), Name: name, Aliases: []string{fmt.Sprintf("C%d", m.n)}}
			putB(b)
			c := *m.randomCigar()
			c.Name, c.BrandID, c.Aliases = m.randomName(), b.ID, nil
			c.ID = catalog.CigarID(name, c.Name)
			putC(&c)
		case 9: // written again unchanged
			putC(m.randomCigar())
		}
	}
	return brands, cigars
}

// sameAnswers compares every answer of got with want's over the queries.
func sameAnswers(t *testing.T, step string, got, want *search.Index, queries []string, brandIDs []string, cigarIDs []string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: "+format, append([]any{step}, args...)...)
	}
	hitsEqual := func(what, q string, a, b []search.Hit) {
		t.Helper()
		if len(a) != len(b) {
			fail("%s %q: %d hits, want %d", what, q, len(a), len(b))
		}
		for i := range a {
			if a[i].Cigar.ID != b[i].Cigar.ID || a[i].Score != b[i].Score || a[i].Brand.Name != b[i].Brand.Name ||
				!slices.Equal(a[i].Brand.Aliases, b[i].Brand.Aliases) || a[i].Cigar.Name != b[i].Cigar.Name {
				fail("%s %q: hit %d is %s %s (%d), want %s %s (%d)", what, q, i, a[i].Brand.Name, a[i].Cigar.Name, a[i].Score,
					b[i].Brand.Name, b[i].Cigar.Name, b[i].Score)
			}
		}
	}
	if got.Len() != want.Len() {
		fail("%d cigars, want %d", got.Len(), want.Len())
	}
	for _, q := range queries {
		hitsEqual("search", q, got.Search(q, ""), want.Search(q, ""))
		a, moreA := got.SearchPage(q, "", nil, 7)
		b, moreB := want.SearchPage(q, "", nil, 7)
		hitsEqual("search page 1", q, a, b)
		if moreA != moreB {
			fail("search %q: more %v, want %v", q, moreA, moreB)
		}
		if len(a) > 0 {
			after := &search.Position{Score: a[len(a)-1].Score, ID: a[len(a)-1].Cigar.ID}
			a2, _ := got.SearchPage(q, "", after, 7)
			b2, _ := want.SearchPage(q, "", after, 7)
			hitsEqual("search page 2", q, a2, b2)
			back := search.Window{Before: after, N: 5, Backward: true}
			hitsEqual("search backwards", q, got.SearchWindow(q, "", back), want.SearchWindow(q, "", back))
		}
		ra, resA := got.Resolve(q, "", 5)
		rb, resB := want.Resolve(q, "", 5)
		hitsEqual("resolve", q, ra, rb)
		if resA != resB {
			fail("resolve %q: resolved %v, want %v", q, resA, resB)
		}
	}
	for _, id := range brandIDs {
		b, ok := want.BrandByID(id)
		g, gok := got.BrandByID(id)
		if ok != gok || ok && (g.Name != b.Name || !slices.Equal(g.Aliases, b.Aliases)) {
			fail("brand %s: %+v, want %+v", id, g, b)
		}
		if !ok {
			continue
		}
		for _, name := range append([]string{b.Name}, b.Aliases...) {
			gb, gok := got.Brand(name)
			wb, wok := want.Brand(name)
			if gok != wok || gok && gb.ID != wb.ID {
				fail("brand named %q: %v, want %v", name, gb, wb)
			}
		}
		q := b.Name + " robusto"
		hitsEqual("search of brand", q, got.Search("robusto", id), want.Search("robusto", id))
		ra, resA := got.Resolve("robusto", b.Name, 3)
		rb, resB := want.Resolve("robusto", b.Name, 3)
		hitsEqual("resolve with a brand hint", b.Name, ra, rb)
		if resA != resB {
			fail("resolve with hint %q: resolved %v, want %v", b.Name, resA, resB)
		}
	}
	for _, id := range cigarIDs {
		gd, gok, gerr := got.Document(id)
		wd, wok, werr := want.Document(id)
		if gok != wok || gerr != nil || werr != nil || string(gd) != string(wd) {
			fail("document %s: %s (%v, %v), want %s (%v, %v)", id, gd, gok, gerr, wd, wok, werr)
		}
	}
}

// TestApplyEqualsBuild applies random sequences of upserts to an index, write
// after write, and holds every answer to those of Build over the same catalog:
// search (every hit, pages forwards and backwards), resolve (with and without
// a brand hint), brand lookups and documents, over the quality set's queries
// and queries naming what changed. It also compacts along the way.
func TestApplyEqualsBuild(t *testing.T) {
	demoIndex(t)
	base := benchQueries(t)
	steps := 12
	if testing.Short() {
		steps = 4
	}
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			st := newCatalogState(demoBrands, demoCigars)
			m := &mutator{r: rand.New(rand.NewPCG(seed, 25)), s: st}
			ix := search.Build(st.all())
			for step := range steps {
				brands, cigars := m.batch(1 + m.r.IntN(40))
				ix = ix.Apply(brands, cigars)
				if step == steps/2 {
					ix = ix.Compact()
				}
				want := search.Build(st.all())
				// The quality set (a sample, for time) and what the batch named.
				queries := append(slices.Clone(base[:60]), changeQueries...)
				for i := range 40 {
					queries = append(queries, base[(step*40+i*7)%len(base)])
				}
				var brandIDs, cigarIDs []string
				for _, c := range cigars {
					b := st.brands[c.BrandID]
					ws := strings.Fields(c.Name)
					queries = append(queries, c.Name, b.Name+" "+c.Name, b.Name+" "+strings.Join(ws[:len(ws)/2+1], " "),
						ws[0][:max(1, len(ws[0])-1)])
					queries = append(queries, c.Aliases...)
					brandIDs = append(brandIDs, c.BrandID)
					cigarIDs = append(cigarIDs, c.ID)
				}
				for _, b := range brands {
					initials := ""
					for _, w := range strings.Fields(b.Name) {
						initials += w[:1]
					}
					queries = append(queries, b.Name, initials+" toro", initials)
					queries = append(queries, b.Aliases...)
					brandIDs = append(brandIDs, b.ID)
				}
				sameAnswers(t, fmt.Sprintf("after write %d", step+1), ix, want, queries, brandIDs, cigarIDs)
			}
		})
	}
}

// TestApplyLargeChanges: a change touching more cigars than Apply updates in
// place (a brand of many cigars renamed, a large import) gives Build's
// answers too.
func TestApplyLargeChanges(t *testing.T) {
	demoIndex(t)
	st := newCatalogState(demoBrands, demoCigars)
	ix := search.Build(st.all())
	// Rename the brand of most cigars, in place first (under the share), then
	// rename every brand (over it).
	count := map[string]int{}
	for _, c := range demoCigars {
		count[c.BrandID]++
	}
	top := slices.SortedFunc(maps.Keys(count), func(a, b string) int { return count[b] - count[a] })
	for _, ids := range [][]string{top[:1], top} {
		var brands []*catalog.Brand
		for _, id := range ids {
			b := *st.brands[id]
			b.Name += " Cigars"
			b.Aliases = append(slices.Clone(b.Aliases), strings.ToUpper(b.Name[:3])+"C")
			st.brands[id] = &b
			brands = append(brands, &b)
		}
		ix = ix.Apply(brands, nil)
		want := search.Build(st.all())
		queries := slices.Clone(benchQueries(t)[:80])
		for _, b := range brands[:min(20, len(brands))] {
			queries = append(queries, b.Name+" robusto", b.Aliases[len(b.Aliases)-1]+" toro")
		}
		sameAnswers(t, fmt.Sprintf("%d brands renamed", len(ids)), ix, want, queries, ids[:min(20, len(ids))], nil)
	}
}

// TestApplyForgetsWords: a word no cigar holds any more after a change is not
// a word of the index, as after a build: split words are no longer joined
// into it ("zafiro azul"), a numeral written with it is split ("no2").
func TestApplyForgetsWords(t *testing.T) {
	demoIndex(t)
	st := newCatalogState(demoBrands, demoCigars)
	tmpl := *st.cigars[demoCigars[0].ID]
	tmpl.Name, tmpl.Aliases = "ZafiroAzul No2 Robusto", nil
	tmpl.ID = catalog.CigarID("x", tmpl.Name)
	other := tmpl
	other.Name, other.ID = "Azul Toro No 2", catalog.CigarID("x", "Azul Toro No 2")
	st.cigars[tmpl.ID], st.cigars[other.ID] = &tmpl, &other
	ix := search.Build(st.all())
	renamed := tmpl
	renamed.Name = "Robusto Azul"
	st.cigars[tmpl.ID] = &renamed
	ix = ix.Apply(nil, []*catalog.Cigar{&renamed})
	queries := []string{"zafiro azul", "zafiroazul", "no2", "azul no2", "no2 toro", "zafiro azul toro"}
	sameAnswers(t, "after the rename", ix, search.Build(st.all()), queries, []string{tmpl.BrandID}, []string{tmpl.ID, other.ID})
}
