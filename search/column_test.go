package search

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/store"
)

// putMeta writes md into the index at path (identity of fillSpread), so
// that the store's metadata column holds it.
func putMeta(t *testing.T, path string, dim int, md fakeMeta) {
	t.Helper()
	w, err := store.OpenWriter(path, store.Identity{Model: "fake", Dim: dim}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b store.Batch
	for p, m := range md {
		b.PutMeta(p, m)
		if _, _, frame := store.SplitFrame(p); m.Live && !frame {
			// The still's movie, whose record makes it a Live Photo's
			// (the store keeps Meta.Live).
			movie := strings.TrimSuffix(p, filepath.Ext(p)) + ".MOV"
			b.Put(movie, store.File{Size: 1, Kind: store.KindLiveVideo, Err: store.LiveVideoNote + filepath.Base(p)}, nil)
		}
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
}

// randomMeta gives every file of fillSpread (and its duplicate, which
// agrees with it most of the time) metadata from a few values of each
// field: dates over 2009–2020 or none, three towns with positions or no
// GPS, three cameras or none.
func randomMeta(r *rand.Rand, n int) fakeMeta {
	towns := []store.Meta{
		{HasGPS: true, Lat: 45.92, Lon: 6.87, City: "Chamonix-Mont-Blanc", Region: "Auvergne-Rhône-Alpes", Country: "France", CountryCode: "FR"},
		{HasGPS: true, Lat: -33.87, Lon: 151.21, City: "Sydney", Region: "New South Wales", Country: "Australia", CountryCode: "AU"},
		{HasGPS: true, Lat: 48.85, Lon: 2.35, City: "Paris", Region: "Île-de-France", Country: "France", CountryCode: "FR"},
		{},
	}
	cams := [][3]string{{"PENTAX", "PENTAX K-1", "smc PENTAX-FA 31mm F1.8 AL Limited"}, {"PENTAX", "PENTAX K-1", "HD PENTAX-D FA 50mm"},
		{"Apple", "iPhone 12", ""}, {"Canon", "EOS R5", "RF24-70mm F2.8 L IS USM"}, {}}
	one := func() store.Meta {
		m := towns[r.IntN(len(towns))]
		if r.IntN(5) > 0 {
			m.Taken, m.TakenSource = day(fmt.Sprintf("%d-%02d-10", 2009+r.IntN(12), 1+r.IntN(12))), store.TakenEXIF
		}
		c := cams[r.IntN(len(cams))]
		m.Make, m.Model, m.Lens = c[0], c[1], c[2]
		m.Motion, m.MotionRead, m.Live = r.IntN(6) == 0, true, r.IntN(5) == 0
		return m
	}
	md := fakeMeta{}
	for i := range n {
		if r.IntN(20) == 0 {
			continue // no metadata at all
		}
		m := one()
		md[pathOf(i)] = m
		if i%10 == 0 {
			if r.IntN(4) == 0 {
				m = one()
			}
			md[dupOf(i)] = m
		}
	}
	return md
}

// TestColumnFilterMatchesRecords: with the metadata in the store, the
// search reads the store's metadata column for the second way; its
// results equal the exhaustive reference on the records for filters of
// every kind, selective and not, with and without Under and duplicates
// whose metadata differ.
func TestColumnFilterMatchesRecords(t *testing.T) {
	const n, dim = 2*lazyDepth + 300, 16
	path := fillSpread(t, n, dim, 13, 0.3)
	r := rand.New(rand.NewPCG(26, 26))
	md := randomMeta(r, n)
	putMeta(t, path, dim, md)
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	src := func(s *store.Snapshot) Metadata { return s }
	rd.View(func(s *store.Snapshot) error {
		if col, err := s.MetaColumn(); col == nil || err != nil {
			t.Fatalf("no metadata column (%v): the test would read the records", err)
		}
		chunks, _ := s.Chunks()
		columnWays := 0
		for i, fq := range []string{
			"year:2019", "year:2012..2014 place:france", "place:chamonix", "place:au camera:canon",
			"camera:\"pentax k-1\"", "near:45.9,6.9,20km", "near:-33.9,151.2,5km year:2015",
			"after:2019-06-01 before:2019-09", "kind:photo", "kind:video", "camera:iphone place:paris year:2020",
			"lens:31mm", "camera:pentax lens:50mm year:2011..2016",
			"place:nowhere", "kind:motion", "kind:video|motion", "kind:motion year:2012..2016", "kind:photo|motion",
			"kind:live", "kind:live|motion", "kind:live|video place:france",
		} {
			f := parseFilter(t, fq)
			for j, k := range []int{1, 10, 100} {
				var under []string
				if (i+j)%3 == 1 {
					under = []string{"/d2", "/dup"}
				}
				q := randVec(r, dim, 1)
				opts := Options{K: k, Filter: f, Meta: src, Under: under}
				got, err := Search(s, q, opts)
				if err != nil {
					t.Fatal(err)
				}
				if want := bruteFiltered(s, q, k, f, md, under); !sameResults(got, want) {
					t.Errorf("%s (k %d, under %v):\n got %v\nwant %v", fq, k, under, got, want)
				}
				if d, _ := newFilterRun(s, opts).depth(chunks, nil, k); d == 0 {
					columnWays++
				}
			}
		}
		if columnWays < 10 {
			t.Errorf("only %d searches took the second way: the column is barely tested", columnWays)
		}
		return nil
	})
}

// TestColumnListMatchesRecords: List read from the metadata column equals
// List read from the records, for every order, k, Under and filters that
// keep few, many and every record (with undated ones among them).
func TestColumnListMatchesRecords(t *testing.T) {
	const n, dim = 3000, 8
	path := fillSpread(t, n, dim, 17, 0.3)
	r := rand.New(rand.NewPCG(7, 7))
	md := randomMeta(r, n)
	// Records of one capture second, told apart by their sub-second times.
	for i := 0; i < n; i += 97 {
		md[pathOf(i)] = store.Meta{Taken: day("2015-03-03"), TakenNs: int32(i), TakenSource: store.TakenVideo}
	}
	putMeta(t, path, dim, md)
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	src := func(s *store.Snapshot) Metadata { return s }
	rd.View(func(s *store.Snapshot) error {
		fromColumn := 0
		for i, fq := range []string{"year:2019", "place:france", "camera:canon year:2010..2015", "near:45.9,6.9,20km", "lens:rf24",
			"kind:photo", "year:2015", "after:2015-03-03 before:2015-03-04", "place:nowhere", "kind:motion", "kind:video|motion", "kind:live"} {
			f := parseFilter(t, fq)
			for j, k := range []int{1, 7, 100, 5000} {
				for _, order := range []Order{ByDateDesc, ByDate} {
					opts := Options{K: k, Filter: f, Order: order}
					if (i+j)%3 == 1 {
						opts.Under = []string{"/d1", "/dup"}
					}
					want, err := List(s, Options{K: k, Filter: f, Order: order, Under: opts.Under, Meta: md.source()})
					if err != nil {
						t.Fatal(err)
					}
					opts.Meta = src
					got, err := List(s, opts)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != len(want) {
						t.Errorf("%s k %d %v under %v: %d results, want %d", fq, k, order, opts.Under, len(got), len(want))
						continue
					}
					for x := range got {
						if got[x].Path != want[x].Path || got[x].ID != want[x].ID || (got[x].Meta == nil) != (want[x].Meta == nil) {
							t.Errorf("%s k %d %v under %v: result %d %s, want %s", fq, k, order, opts.Under, x, got[x].Path, want[x].Path)
							break
						}
					}
					if _, ok, _ := newFilterRun(s, opts).listColumn(k, order, false); ok {
						fromColumn++
					}
				}
			}
		}
		if fromColumn < 30 {
			t.Errorf("only %d listings read the column", fromColumn)
		}
		return nil
	})
}

// TestFirstDates: the records dated at or before the n-th, whatever the
// ties and the order.
func TestFirstDates(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for trial := range 500 {
		cands := make([]dated, 1+r.IntN(300))
		span := int64(1 + r.IntN(50))
		for i := range cands {
			cands[i] = dated{taken: r.Int64N(span), id: store.VecID(i + 1)}
		}
		n := 1 + r.IntN(len(cands))
		desc := trial%2 == 1
		before := func(a, b dated) int {
			if desc {
				return cmp.Compare(b.taken, a.taken)
			}
			return cmp.Compare(a.taken, b.taken)
		}
		sorted := slices.Clone(cands)
		slices.SortFunc(sorted, before)
		nth := sorted[n-1].taken
		want := 0
		for _, c := range sorted {
			if before(c, dated{taken: nth}) <= 0 {
				want++
			}
		}
		head := firstDates(cands, n, before)
		if len(head) != want {
			t.Fatalf("trial %d: %d records up to the %d-th date, want %d", trial, len(head), n, want)
		}
		for _, c := range head {
			if before(c, dated{taken: nth}) > 0 {
				t.Fatalf("trial %d: %d is after the %d-th date %d", trial, c.taken, n, nth)
			}
		}
	}
}
