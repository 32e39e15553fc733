package search

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/clipidx/clipidx/store"
)

func parseFilter(t testing.TB, q string) Filter {
	t.Helper()
	r, err := ParseRequest([]string{q})
	if err != nil {
		t.Fatalf("%q: %v", q, err)
	}
	return r.Filter
}

// TestFilterMatch: each qualifier against records that pass and fail it,
// at its boundaries, and records without metadata.
func TestFilterMatch(t *testing.T) {
	at := func(date string) *store.Meta {
		return &store.Meta{Taken: day(date), TakenSource: store.TakenEXIF}
	}
	chamonix := &store.Meta{HasGPS: true, Lat: 45.9237, Lon: 6.8694, City: "Chamonix-Mont-Blanc", Region: "Auvergne-Rhône-Alpes", Country: "France", CountryCode: "FR"}
	zurich := &store.Meta{HasGPS: true, Lat: 47.3769, Lon: 8.5417, City: "Zürich", Region: "Zurich", Country: "Switzerland", CountryCode: "CH"}
	pentax := &store.Meta{Make: "RICOH IMAGING COMPANY, LTD.", Model: "PENTAX K-1"}
	pentax10 := &store.Meta{Make: "PENTAX Corporation", Model: "PENTAX K10D"}
	limited := &store.Meta{Make: "RICOH IMAGING COMPANY, LTD.", Model: "PENTAX K-1", Lens: "smc PENTAX-FA 31mm F1.8 AL Limited"}
	for _, tc := range []struct {
		q    string
		path string
		m    *store.Meta
		want bool
	}{
		{"after:2019-06-01", "/a.jpg", at("2019-06-01"), true},
		{"after:2019-06-01", "/a.jpg", at("2019-05-31"), false},
		{"before:2019-09", "/a.jpg", at("2019-08-31"), true},
		{"before:2019-09", "/a.jpg", at("2019-09-01"), false},
		{"after:2019-06-01 before:2019-09", "/a.jpg", at("2019-07-14"), true},
		{"year:2019", "/a.jpg", at("2019-12-31"), true},
		{"year:2019", "/a.jpg", at("2020-01-01"), false},
		{"year:2017..2018", "/a.jpg", at("2017-01-01"), true},
		{"year:2016 year:2018", "/a.jpg", at("2017-06-01"), false},
		{"year:2016 year:2018", "/a.jpg", at("2018-06-01"), true},
		{"year:1970", "/a.jpg", &store.Meta{TakenSource: store.TakenMtime}, true}, // Taken 0 is a date
		{"year:1970", "/a.jpg", &store.Meta{}, false},                             // no date at all
		{"year:2019", "/a.jpg", nil, false},
		{"place:chamonix", "/a.jpg", chamonix, true},
		{"place:CHAMONIX", "/a.jpg", chamonix, true},
		{"place:mont-blanc", "/a.jpg", chamonix, true},
		{"place:rhone", "/a.jpg", chamonix, true}, // accent-insensitive, in the region
		{"place:cham", "/a.jpg", chamonix, false}, // whole words only
		{"place:fr", "/a.jpg", chamonix, true},    // the country code
		{"place:france", "/a.jpg", zurich, false},
		{"place:zurich", "/a.jpg", zurich, true},
		{"place:paris place:zürich", "/a.jpg", zurich, true},
		{"place:paris", "/a.jpg", nil, false},
		{"lens:31mm", "/a.jpg", limited, true},
		{`lens:"fa 31mm"`, "/a.jpg", limited, true},
		{"lens:31", "/a.jpg", limited, true},   // a whole number (see TestLensMatch)
		{"lens:3", "/a.jpg", limited, false},   // not a part of one
		{"lens:31mm", "/a.jpg", pentax, false}, // no lens recorded
		{`camera:"k-1" lens:limited`, "/a.jpg", limited, true},
		{`camera:k10d lens:limited`, "/a.jpg", limited, false},
		{"lens:50mm lens:31mm", "/a.jpg", limited, true},
		{"near:45.92,6.87,1km", "/a.jpg", chamonix, true},
		{"near:45.92,6.87,10km", "/a.jpg", zurich, false},
		{"near:47,8,100km", "/a.jpg", zurich, true},
		{"near:47,8,10km", "/a.jpg", &store.Meta{City: "Zürich"}, false}, // no GPS
		{`camera:"pentax k-1"`, "/a.jpg", pentax, true},
		{`camera:k-1`, "/a.jpg", pentax, true},
		{`camera:pentax`, "/a.jpg", pentax10, true},
		{`camera:"pentax k-1"`, "/a.jpg", pentax10, false},
		{`camera:ricoh`, "/a.jpg", pentax, true},
		{`camera:pentax`, "/a.jpg", &store.Meta{}, false},
		{"kind:photo", "/v/trip.mp4#t=83.4", nil, false},
		{"kind:photo", "/a.jpg", nil, true},
		{"kind:video", "/v/trip.mp4#t=83.4", nil, true},
		{"kind:video", "/a.jpg", &store.Meta{}, false},
		{"kind:photo|video", "/a.jpg", nil, true},
		{"kind:video year:2019", "/v/trip.mp4#t=1", at("2019-02-02"), true},
		{"kind:video year:2019", "/a.jpg", at("2019-02-02"), false},
		{"kind:motion", "/a.jpg", &store.Meta{Motion: true, MotionRead: true}, true},
		{"kind:motion", "/a.jpg", &store.Meta{MotionRead: true}, false},
		{"kind:motion", "/a.jpg", nil, false},
		{"kind:motion", "/v/trip.mp4#t=1", &store.Meta{}, false},
		{"kind:video|motion", "/v/trip.mp4#t=1", &store.Meta{}, true},
		{"kind:video|motion", "/a.jpg", &store.Meta{Motion: true}, true},
		{"kind:video|motion", "/b.jpg", &store.Meta{}, false},
		{"kind:photo|motion", "/b.jpg", nil, true},
		{"kind:photo|video|motion", "/b.jpg", nil, true},
		{"kind:live", "/a.jpg", &store.Meta{Live: true}, true},
		{"kind:live", "/a.jpg", &store.Meta{Motion: true}, false},
		{"kind:live|motion", "/a.jpg", &store.Meta{Motion: true}, true},
		{"kind:live", "/v/trip.mp4#t=1", &store.Meta{Live: true}, false},
		{"place:chamonix year:2019", "/a.jpg", chamonix, false}, // no date
	} {
		f := parseFilter(t, tc.q)
		if got := f.Match(tc.path, tc.m); got != tc.want {
			t.Errorf("%s on %s %+v: %v, want %v", tc.q, tc.path, tc.m, got, tc.want)
		}
	}
}

// TestPlaceCountry: a place of one two-letter word is a country (code or
// name), or a town or region of that whole name, never a word of a longer
// one; other places match whole words anywhere.
func TestPlaceCountry(t *testing.T) {
	paris := &store.Meta{City: "Paris 04 Hôtel-de-Ville", Region: "Île-de-France", Country: "France", CountryCode: "FR"}
	berlin := &store.Meta{City: "Berlin", Region: "Land Berlin", Country: "Germany", CountryCode: "DE"}
	lapaz := &store.Meta{City: "La Paz", Region: "La Paz", Country: "Bolivia", CountryCode: "BO"}
	salvador := &store.Meta{City: "San Salvador", Region: "San Salvador", Country: "El Salvador", CountryCode: "SV"}
	aas := &store.Meta{City: "Ås", Region: "Akershus", Country: "Norway", CountryCode: "NO"}
	bo := &store.Meta{City: "Bø", Region: "Telemark", Country: "Norway", CountryCode: "NO"}
	moirana := &store.Meta{City: "Mo i Rana", Region: "Nordland", Country: "Norway", CountryCode: "NO"}
	for _, tc := range []struct {
		q    string
		m    *store.Meta
		want bool
	}{
		{"place:de", paris, false}, // not the "de" of Hôtel-de-Ville nor of Île-de-France
		{"place:DE", berlin, true},
		{"place:fr", paris, true},
		{"place:la", lapaz, false},
		{"place:bo", lapaz, true},
		{"place:el", salvador, true}, // a word of the country name
		{"place:sv", salvador, true},
		{`place:"la paz"`, lapaz, true}, // phrases and longer words as before
		{"place:paz", lapaz, true},
		{`place:"ile de france"`, paris, true},
		{"place:hotel-de-ville", paris, true},
		{`place:"de ville"`, paris, true},
		{"place:04", paris, true}, // two digits are no country
		{"place:paris", paris, true},
		{"place:france", paris, true},
		{"place:de place:paris", paris, true},
		{"place:de place:fr", berlin, true},
		{"place:ås", aas, true}, // a town of two letters is found by its whole name
		{"place:as", aas, true},
		{"place:bø", bo, true},
		{"place:telemark", bo, true},
		{"place:no", bo, true},
		{"place:mo", moirana, false}, // a word of a longer name is not
	} {
		f := parseFilter(t, tc.q)
		if got := f.Match("/a.jpg", tc.m); got != tc.want {
			t.Errorf("%s on %q, %q, %q (%s): %v, want %v", tc.q, tc.m.City, tc.m.Region, tc.m.Country, tc.m.CountryCode, got, tc.want)
		}
	}
}

// TestPlaceParts: a place given in parts between commas matches a record
// whose place matches every part (place:paris,france once matched
// nothing: "paris france" is no run of words in any one name).
func TestPlaceParts(t *testing.T) {
	paris := &store.Meta{City: "Paris 04 Hôtel-de-Ville", Region: "Île-de-France", Country: "France", CountryCode: "FR"}
	texas := &store.Meta{City: "Paris", Region: "Texas", Country: "United States", CountryCode: "US"}
	for _, tc := range []struct {
		q         string
		paris, tx bool
	}{
		{"place:paris", true, true},
		{"place:paris,france", true, false},
		{"place:paris,fr", true, false},
		{"place:paris,us", false, true},
		{`place:"paris, texas"`, false, true},
		{`place:"paris, united states"`, false, true},
		{"place:paris,de", false, false}, // de is a country here too: not Hôtel-de-Ville
		{"place:paris,us place:ile-de-france", true, true},
	} {
		f := parseFilter(t, tc.q)
		if got := f.Match("/a.jpg", paris); got != tc.paris {
			t.Errorf("%s on Paris, France: %v, want %v", tc.q, got, tc.paris)
		}
		if got := f.Match("/a.jpg", texas); got != tc.tx {
			t.Errorf("%s on Paris, Texas: %v, want %v", tc.q, got, tc.tx)
		}
	}
	if _, err := ParseRequest([]string{"place:paris,"}); err == nil {
		t.Error("place:paris, (an empty part) was accepted")
	}
}

// TestLensMatch: lens: and camera: against names as cameras write them,
// with and without spaces, and the matches a number or a word must not
// give: inside a number, inside a run of letters, across a decimal point.
func TestLensMatch(t *testing.T) {
	const (
		canon     = "EF24-70mm f/2.8L II USM"
		canon105  = "EF24-105mm f/4L IS USM"
		canonRF   = "RF24-105mm F4 L IS USM"
		canonEFS  = "EF-S18-55mm f/3.5-5.6 IS STM"
		sigma     = "EF150-600mm"
		sony      = "FE 24-70mm F2.8 GM"
		sony105   = "FE 24-105mm F4 G OSS"
		nikon     = "AF-S NIKKOR 24-70mm f/2.8E ED VR"
		fuji      = "XF16-55mmF2.8 R LM WR"
		fuji35    = "XF35mmF1.4 R"
		iphone    = "iPhone 13 back dual wide camera 5.1mm f/1.6"
		pentaxLim = "smc PENTAX-FA 31mm F1.8 AL Limited"
	)
	for _, tc := range []struct {
		q, lens string
		want    bool
	}{
		{`lens:"ef 24-70"`, canon, true},
		{"lens:24-70", canon, true},
		{"lens:ef24-70mm", canon, true},
		{`lens:"24-70mm f/2.8"`, canon, true},
		{"lens:usm", canon, true},
		{"lens:70", canon, true}, // a whole number
		{"lens:24", canon, true},
		{"lens:f2.8", canon, true},
		{"lens:2.8l", canon, true},
		{`lens:"l ii usm"`, canon, true},
		{"lens:EF", canon, true},
		{"lens:f4", canon105, true},
		{"lens:ef", canonEFS, true},
		{"lens:efs", canonEFS, true},
		{"lens:ef-s18-55", canonEFS, true},
		{"lens:3.5-5.6", canonEFS, true},
		{`lens:"24-70"`, sony, true},
		{`lens:"fe 24-70mm"`, sony, true},
		{"lens:fe24-70", sony, true},
		{`lens:"24-70mm f/2.8"`, sony, true},
		{"lens:gm", sony, true},
		{"lens:af-s", nikon, true},
		{"lens:afs", nikon, true},
		{`lens:"nikkor 24-70"`, nikon, true},
		{"lens:f/2.8e", nikon, true},
		{`lens:"ed vr"`, nikon, true},
		{"lens:xf16-55", fuji, true},
		{`lens:"xf 16-55mm"`, fuji, true},
		{`lens:"16-55mm f2.8"`, fuji, true},
		{`lens:"f/2.8 r lm wr"`, fuji, true},
		{"lens:wr", fuji, true},
		{"lens:1.4", fuji35, true},
		{"lens:xf35", fuji35, true},
		{"lens:iphone13", iphone, true},
		{`lens:"iphone 13"`, iphone, true},
		{"lens:5.1mm", iphone, true},
		{`lens:"dual wide"`, iphone, true},
		{"lens:f/1.6", iphone, true},
		{"lens:fa31", pentaxLim, true},
		{`lens:"pentax-fa 31mm"`, pentaxLim, true},
		// Not in the middle of a number.
		{"lens:50", sigma, false},
		{"lens:50", canon105, false},
		{"lens:50", sony105, false},
		{"lens:7", canon, false},
		{"lens:24-7", canon, false},
		{"lens:10", canon105, false},
		{"lens:3", iphone, false},
		// Not across a decimal point: 2.8 is not 2, 8 nor 28.
		{"lens:8", canon, false},
		{"lens:28", canon, false},
		{"lens:2", canon, false},
		{"lens:1mm", iphone, false},
		{"lens:4", fuji35, false},
		{"lens:f1", fuji35, false},
		{"lens:f/4", canon, false},
		// Not in the middle of a run of letters.
		{"lens:ef", canonRF, false},
		{"lens:us", canon, false},
		{"lens:sm", canon, false},
		{"lens:g", sony, false},
		{"lens:gm", sony105, false},
		{"lens:xf16-5", fuji, false},
	} {
		f := parseFilter(t, tc.q)
		if got := f.Match("/a.jpg", &store.Meta{Lens: tc.lens}); got != tc.want {
			t.Errorf("%s on %q: %v, want %v", tc.q, tc.lens, got, tc.want)
		}
	}
	for _, tc := range []struct {
		q, make, model string
		want           bool
	}{
		{"camera:7m3", "SONY", "ILCE-7M3", true},
		{"camera:ilce7m3", "SONY", "ILCE-7M3", true},
		{`camera:"sony ilce-7m3"`, "SONY", "ILCE-7M3", true},
		{"camera:ilce-7", "SONY", "ILCE-7M3", true},
		{"camera:xt4", "FUJIFILM", "X-T4", true},
		{"camera:x-t4", "FUJIFILM", "X-T4", true},
		{"camera:x100", "FUJIFILM", "X100V", true},
		{"camera:x100v", "FUJIFILM", "X100V", true},
		{"camera:z6", "NIKON CORPORATION", "NIKON Z 6_2", true},
		{"camera:d850", "NIKON CORPORATION", "NIKON D850", true},
		{"camera:eos5d", "Canon", "Canon EOS 5D Mark III", true},
		{`camera:"5d mark iii"`, "Canon", "Canon EOS 5D Mark III", true},
		{"camera:r5", "Canon", "Canon EOS R5", true},
		{`camera:"e-m1 mark ii"`, "OLYMPUS CORPORATION", "E-M1MarkII", true},
		{"camera:k1", "RICOH IMAGING COMPANY, LTD.", "PENTAX K-1", true},
		{`camera:"iphone 13"`, "Apple", "iPhone 13 Pro", true},
		{"camera:x10", "FUJIFILM", "X100V", false},
		{"camera:d85", "NIKON CORPORATION", "NIKON D850", false},
		{`camera:"5d mark ii"`, "Canon", "Canon EOS 5D Mark III", false},
		{"camera:r5", "Canon", "Canon EOS R50", false},
		{"camera:k1", "PENTAX Corporation", "PENTAX K10D", false},
		{`camera:"iphone 1"`, "Apple", "iPhone 13 Pro", false},
		{"camera:a7", "SONY", "ILCE-7M3", false},
	} {
		f := parseFilter(t, tc.q)
		if got := f.Match("/a.jpg", &store.Meta{Make: tc.make, Model: tc.model}); got != tc.want {
			t.Errorf("%s on %q %q: %v, want %v", tc.q, tc.make, tc.model, got, tc.want)
		}
	}
}

// TestFoldRuns: names cut into runs of letters and of digits, decimal
// numbers whole.
func TestFoldRuns(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"EF24-70mm f/2.8L II USM", []string{"ef", "24", "70", "mm", "f", "2.8", "l", "ii", "usm"}},
		{"XF16-55mmF2.8 R LM WR", []string{"xf", "16", "55", "mm", "f", "2.8", "r", "lm", "wr"}},
		{"iPhone 13 back camera 5.1mm f/1.6", []string{"i", "phone", "13", "back", "camera", "5.1", "mm", "f", "1.6"}},
		{"E 18-135mm F3.5-5.6 OSS", []string{"e", "18", "135", "mm", "f", "3.5", "5.6", "oss"}},
		{"1.4x. .5 Ø 2..3", []string{"1.4", "x", "5", "o", "2", "3"}},
		{"Zeiss Touit 2.8/12", []string{"zeiss", "touit", "2.8", "12"}},
		{"E-M1MarkII", []string{"e", "m", "1", "mark", "ii"}},
		{"iPhone", []string{"i", "phone"}},
		{"Éé\u0301E", []string{"ee", "e"}},
		{"-/.", nil},
	} {
		if got := foldRuns(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("foldRuns(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestDistanceKm: great-circle distances against known values (within the
// 0.5% a sphere allows), across the antimeridian and the poles.
func TestDistanceKm(t *testing.T) {
	for _, tc := range []struct {
		lat1, lon1, lat2, lon2, km float64
	}{
		{48.8566, 2.3522, 51.5074, -0.1278, 343.9},    // Paris–London
		{-33.8688, 151.2093, 40.7128, -74.006, 15989}, // Sydney–New York
		{0, 179.9, 0, -179.9, 22.24},                  // across the antimeridian
		{90, 0, -90, 0, 20015},                        // pole to pole
		{45.92, 6.87, 45.92, 6.87, 0},
	} {
		got := distanceKm(tc.lat1, tc.lon1, tc.lat2, tc.lon2)
		if math.Abs(got-tc.km) > 0.005*tc.km+1e-9 {
			t.Errorf("(%g,%g)–(%g,%g) = %.1f km, want %.1f", tc.lat1, tc.lon1, tc.lat2, tc.lon2, got, tc.km)
		}
	}
}

// fakeMeta is the metadata of some records, as the store serves it.
type fakeMeta map[string]store.Meta

func (f fakeMeta) EachMeta(fn func(string, store.Meta) error) error {
	paths := make([]string, 0, len(f))
	for p := range f {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if err := fn(p, f[p]); err != nil {
			return err
		}
	}
	return nil
}

func (f fakeMeta) Meta(p string) (store.Meta, bool, error) { m, ok := f[p]; return m, ok, nil }

func (f fakeMeta) source() func(*store.Snapshot) Metadata {
	return func(*store.Snapshot) Metadata { return f }
}

// bruteFiltered is the reference of a filtered search: every record the
// filter keeps scored exactly, best first (ties by vector id), k paths.
func bruteFiltered(s *store.Snapshot, q []float32, k int, f Filter, md fakeMeta, under []string) []Result {
	q, _ = unit(q)
	type scored struct {
		id    store.VecID
		score float32
		paths []string
	}
	byVec := map[store.VecID]*scored{}
	s.Files("", func(p string, file store.File) error {
		var m *store.Meta
		if x, ok := md[p]; ok {
			m = &x
		}
		if file.Vec == 0 || !underAny(p, under) || !f.Match(p, m) {
			return nil
		}
		if byVec[file.Vec] == nil {
			byVec[file.Vec] = &scored{id: file.Vec, score: dot32(q, s.Vector(file.Vec))}
		}
		byVec[file.Vec].paths = append(byVec[file.Vec].paths, p)
		return nil
	})
	var all []*scored
	for _, v := range byVec {
		slices.Sort(v.paths)
		all = append(all, v)
	}
	slices.SortFunc(all, func(a, b *scored) int {
		if better(cand{id: a.id, score: a.score}, cand{id: b.id, score: b.score}) {
			return -1
		}
		return 1
	})
	var out []Result
	for _, v := range all {
		for _, p := range v.paths {
			if len(out) < k {
				out = append(out, Result{Path: p, Score: v.score, ID: v.id})
			}
		}
	}
	return out
}

// yearMeta dates file i of fill (and its duplicate) in 2019 when keep(i)
// is true and in 2010 otherwise; the duplicate of file i is dated 2019
// when dupKeep(i), whatever its original says, so that a vector's paths
// can differ.
func yearMeta(n int, keep, dupKeep func(i int) bool) fakeMeta {
	md := fakeMeta{}
	for i := range n {
		y := "2010-05-05"
		if keep(i) {
			y = "2019-05-05"
		}
		md[pathOf(i)] = store.Meta{Taken: day(y), TakenSource: store.TakenEXIF}
		if i%10 == 0 {
			if dupKeep != nil && dupKeep(i) {
				y = "2019-05-05"
			}
			md[dupOf(i)] = store.Meta{Taken: day(y), TakenSource: store.TakenEXIF}
		}
	}
	return md
}

func pathOf(i int) string { return "/d" + strconv.Itoa(i%3) + "/f" + strconv.Itoa(i) + ".jpg" }
func dupOf(i int) string  { return "/dup/f" + strconv.Itoa(i) + ".jpg" }

// TestFilterBeforeRank: on an index where the global top k holds no
// record the filter keeps, the filtered search returns the k best of the
// records it keeps, equal to an exhaustive reference, both when many
// records match (the scan's best are tested) and when few do (one pass
// marks them), with a duplicate listed only by its matching path.
func TestFilterBeforeRank(t *testing.T) {
	const n, dim, k = 3 * lazyDepth, 32, 10
	path := fill(t, n, dim, 7)
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	f := parseFilter(t, "year:2019")
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name          string
		keep, dupKeep func(i int) bool // of the files near centre 2; the query is near centre 0
		many          bool
		far           bool // the query points away from centre 2: the scan's kept best hold no match
	}{
		{"many", func(i int) bool { return i%4 == 2 }, func(i int) bool { return i%20 == 10 }, true, false},
		{"many far", func(i int) bool { return i%4 == 2 }, nil, true, true},
		{"few", func(i int) bool { return i%4 == 2 && i%997 == 2 }, func(i int) bool { return i%2000 == 10 }, false, false},
		{"none", func(i int) bool { return false }, nil, false, false},
	} {
		md := yearMeta(n, tc.keep, tc.dupKeep)
		rd.View(func(s *store.Snapshot) error {
			q := s.Vector(1) // file 0: centre 0
			q = slices.Clone(q)
			for i := range q {
				q[i] += float32(r.NormFloat64() * 0.01)
			}
			if tc.far {
				for i, x := range s.Vector(3) { // file 2: centre 2
					q[i] -= 2 * x
				}
			}
			plain, err := Search(s, q, Options{K: k})
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range plain {
				if m, ok := md[x.Path]; ok && f.Match(x.Path, &m) {
					t.Fatalf("%s: the global top %d holds %s, which matches: the test shows nothing", tc.name, k, x.Path)
				}
			}
			chunks, _ := s.Chunks()
			run := newFilterRun(s, Options{Filter: f, Meta: md.source()})
			if depth, _ := run.depth(chunks, nil, k); (depth > 0) != tc.many {
				t.Errorf("%s: depth %d, want the first way %v", tc.name, depth, tc.many)
			}
			for _, exact := range []bool{false, true} {
				got, err := Search(s, q, Options{K: k, Filter: f, Meta: md.source(), Exact: exact})
				if err != nil {
					t.Fatal(err)
				}
				want := bruteFiltered(s, q, k, f, md, nil)
				if !sameResults(got, want) {
					t.Errorf("%s (exact %v):\n got %v\nwant %v", tc.name, exact, got, want)
				}
				if tc.name != "none" && len(got) != k {
					t.Errorf("%s: %d results, want %d", tc.name, len(got), k)
				}
			}
			return nil
		})
	}
}

func sameResults(a, b []Result) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Path != b[i].Path || a[i].Score != b[i].Score {
			return false
		}
	}
	return true
}

// TestFilterRandomSelectivity: filters keeping from none to every record,
// with and without Under, with K from 1 to 200, against the reference
// (either way, and the fallback from the first to the second).
func TestFilterRandomSelectivity(t *testing.T) {
	const n, dim = 2*lazyDepth + 500, 16
	path := fillSpread(t, n, dim, 11, 0.3)
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	f := parseFilter(t, "year:2019")
	r := rand.New(rand.NewPCG(5, 6))
	rd.View(func(s *store.Snapshot) error {
		for trial := range 24 {
			every := []int{1, 2, 7, 50, 300, 3000, 100000}[trial%7]
			md := yearMeta(n, func(i int) bool { return (i*7919+trial)%every == 0 }, func(i int) bool { return i%(20*every) == 10 })
			k := []int{1, 10, 200}[trial%3]
			var under []string
			if trial%4 == 3 {
				under = []string{"/d1", "/dup"}
			}
			q := randVec(r, dim, 1)
			got, err := Search(s, q, Options{K: k, Filter: f, Meta: md.source(), Under: under})
			if err != nil {
				t.Fatal(err)
			}
			if want := bruteFiltered(s, q, k, f, md, under); !sameResults(got, want) {
				t.Errorf("trial %d (1 in %d, k %d, under %v):\n got %v\nwant %v", trial, every, k, under, got, want)
			}
		}
		return nil
	})
}

// TestKindFilter: kind:video keeps the frames of videos only, with no
// metadata at all (the kind is in the path).
func TestKindFilter(t *testing.T) {
	path := t.TempDir() + "/s.db"
	w, err := store.OpenWriter(path, store.Identity{Model: "fake", Dim: 8}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	var b store.Batch
	for i := range 40 {
		p := "/p/" + strconv.Itoa(i) + ".jpg"
		if i%5 == 0 {
			p = "/v/clip.mp4" + store.FrameSep + strconv.Itoa(i)
		}
		b.Put(p, store.File{Hash: [32]byte{byte(i), 1}}, randVec(r, 8, 1))
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rd.View(func(s *store.Snapshot) error {
		for _, kind := range []string{"kind:video", "kind:photo"} {
			f := parseFilter(t, kind)
			got, err := Search(s, randVec(r, 8, 1), Options{K: 100, Filter: f, Frames: true}) // every frame, not one a video
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"kind:video": 8, "kind:photo": 32}[kind]; len(got) != want {
				t.Errorf("%s: %d results, want %d", kind, len(got), want)
			}
			for _, x := range got {
				if !f.KeepsPath(x.Path) {
					t.Errorf("%s: %s listed", kind, x.Path)
				}
			}
		}
		return nil
	})
}

// listIndex writes /p/0.jpg … /p/9.jpg, a failed /p/bad.jpg and the frame
// /v/clip.mp4#t=1, with metadata dating /p/i.jpg on day 10+i of 2019
// (none for /p/3.jpg), 2021 for the frame, and a date for the failed file.
func listIndex(t *testing.T) (*store.Reader, fakeMeta) {
	path := t.TempDir() + "/s.db"
	w, err := store.OpenWriter(path, store.Identity{Model: "fake", Dim: 8}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	md := fakeMeta{}
	var b store.Batch
	for i := range 10 {
		p := "/p/" + strconv.Itoa(i) + ".jpg"
		b.Put(p, store.File{Hash: [32]byte{byte(i), 2}}, randVec(r, 8, 1))
		if i != 3 {
			md[p] = store.Meta{Taken: day("2019-01-10") + int64(i)*86400, TakenSource: store.TakenEXIF}
		}
	}
	b.Put("/p/bad.jpg", store.File{Err: "truncated", Kind: store.FailCorrupt}, nil)
	md["/p/bad.jpg"] = store.Meta{Taken: day("2019-01-30"), TakenSource: store.TakenEXIF}
	b.Put("/v/clip.mp4"+store.FrameSep+"1", store.File{Hash: [32]byte{99}}, randVec(r, 8, 1))
	md["/v/clip.mp4"+store.FrameSep+"1"] = store.Meta{Taken: day("2021-03-03"), TakenSource: store.TakenVideo}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd, md
}

func resultPaths(res []Result) []string {
	var ps []string
	for _, r := range res {
		ps = append(ps, r.Path)
	}
	return ps
}

// TestList: a query of qualifiers only lists the records they keep by
// date, newest first by default, oldest first for ByDate, records without
// a date last; a failed file is never listed; K bounds the list.
func TestList(t *testing.T) {
	rd, md := listIndex(t)
	rd.View(func(s *store.Snapshot) error {
		for _, tc := range []struct {
			q     string
			order Order
			k     int
			want  []string
		}{
			{"year:2019", ByScore, 3, []string{"/p/9.jpg", "/p/8.jpg", "/p/7.jpg"}},
			{"year:2019", ByDateDesc, 3, []string{"/p/9.jpg", "/p/8.jpg", "/p/7.jpg"}},
			{"year:2019", ByDate, 4, []string{"/p/0.jpg", "/p/1.jpg", "/p/2.jpg", "/p/4.jpg"}},
			{"after:2019-01-17", ByDate, 10, []string{"/p/7.jpg", "/p/8.jpg", "/p/9.jpg", "/v/clip.mp4#t=1"}},
			{"kind:video", ByScore, 10, []string{"/v/clip.mp4#t=1"}},
			// kind alone reads no metadata: the undated record is listed, last.
			{"kind:photo", ByDate, 11, []string{"/p/0.jpg", "/p/1.jpg", "/p/2.jpg", "/p/4.jpg", "/p/5.jpg", "/p/6.jpg", "/p/7.jpg", "/p/8.jpg", "/p/9.jpg", "/p/3.jpg"}},
			{"kind:photo|video", ByDateDesc, 2, []string{"/v/clip.mp4#t=1", "/p/9.jpg"}},
			{"year:2020", ByScore, 10, nil},
		} {
			got, err := List(s, Options{K: tc.k, Filter: parseFilter(t, tc.q), Order: tc.order, Meta: md.source()})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(resultPaths(got), tc.want) {
				t.Errorf("%s %v k=%d: %v, want %v", tc.q, tc.order, tc.k, resultPaths(got), tc.want)
			}
			for _, x := range got {
				if x.ID == 0 {
					t.Errorf("%s: %s listed without its vector id", tc.q, x.Path)
				}
			}
		}
		return nil
	})
}

// TestSortByDate: the K best matches, then ordered by date (undated last);
// the set of results is the one a sort by score gives.
func TestSortByDate(t *testing.T) {
	rd, md := listIndex(t)
	rd.View(func(s *store.Snapshot) error {
		q := randVec(rand.New(rand.NewPCG(8, 8)), 8, 1)
		best, err := Search(s, q, Options{K: 6})
		if err != nil {
			t.Fatal(err)
		}
		for _, order := range []Order{ByDate, ByDateDesc} {
			got, err := Search(s, q, Options{K: 6, Order: order, Meta: md.source()})
			if err != nil {
				t.Fatal(err)
			}
			if !sameSet(resultPaths(got), resultPaths(best)) {
				t.Errorf("%v: %v, want the paths of %v", order, resultPaths(got), resultPaths(best))
			}
			for i := 1; i < len(got); i++ {
				if c := byDate(got[i-1].Meta, got[i].Meta, order); c > 0 {
					t.Errorf("%v: %s before %s", order, got[i-1].Path, got[i].Path)
				}
			}
		}
		return nil
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestListFramesInTimeOrder: the frames of a video share its date, and a
// listing ordered them by their path's text: #t=0, #t=16, #t=8.
func TestListFramesInTimeOrder(t *testing.T) {
	path := t.TempDir() + "/s.db"
	w, err := store.OpenWriter(path, store.Identity{Model: "fake", Dim: 8}, store.WriterOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	md := fakeMeta{}
	var b store.Batch
	var want []string
	for i, at := range []string{"0", "8", "16", "24.5", "100"} {
		p := "/v/clip.mp4" + store.FrameSep + at
		b.Put(p, store.File{Hash: [32]byte{byte(i), 7}}, randVec(r, 8, 1))
		md[p] = store.Meta{Taken: day("2021-03-03"), TakenSource: store.TakenVideo}
		want = append(want, p)
	}
	if err := w.Commit(&b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rd.View(func(s *store.Snapshot) error {
		for _, order := range []Order{ByDate, ByDateDesc} {
			got, err := List(s, Options{K: 10, Frames: true, Filter: parseFilter(t, "kind:video"), Order: order, Meta: md.source()})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(resultPaths(got), want) {
				t.Errorf("%v: %v, want %v", order, resultPaths(got), want)
			}
		}
		return nil
	})
}
