package search

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/clipidx/clipidx/store"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Filter keeps the records whose file says when, where or with what it
// was taken (store.Meta), and whether it is a photo or a video frame. The
// zero value keeps every record. Different keys must all match; a key
// given more than once (year:, place:, near:, camera:) matches any of its
// values. A record without metadata matches no date, place or camera
// qualifier.
type Filter struct {
	// After and Before bound the wall-clock capture time (store.Meta.Taken):
	// After ≤ Taken < Before, each when its Has flag is set.
	After, Before       int64
	HasAfter, HasBefore bool
	// Years are [from, to) ranges of Taken, any of which matches.
	Years [][2]int64
	// Places are case- and accent-folded words that must appear in a row
	// in the city, region or country name, or be the country code. A
	// place that is one word of two letters (place:de) is a country: it
	// matches the country code or a word of the country name, never a
	// word of a city or region ("de" of "Hôtel-de-Ville").
	Places [][]string
	// PlaceParts are places given in parts (place:paris,france,
	// place:springfield,us): each part must match the record's place as a
	// place of its own would (one its city or region, another its
	// country...). Any entry, or any of Places, matches.
	PlaceParts [][][]string
	// Near are circles around points; a record with GPS inside any matches.
	Near []Circle
	// Cameras are the folded runs of letters and of digits of each value
	// (foldRuns: "x-t4" is x t 4). A value matches a "make model" whose
	// runs, written together, hold its runs written together, beginning
	// and ending where runs of the name do (nameMatch): x t 4 is in X-T4,
	// x 10 is not in X100V.
	Cameras [][]string
	// Lenses are runs as Cameras are, matched against the lens name.
	Lenses [][]string
	// Kinds keeps photos, video frames, Motion Photos (store.Meta.Motion),
	// Live Photos' stills (store.Meta.Live) or any of them (0 = every
	// record).
	Kinds Kind

	written []string // the qualifiers, as String gives them back
}

// Kind is a set of record kinds: a photo, or a frame of a video (a path
// holding store.FrameSep).
type Kind uint8

// The record kinds of kind:photo, kind:video, kind:motion (a Motion
// Photo, among the photos) and kind:live (a Live Photo's still).
const (
	KindPhoto Kind = 1 << iota
	KindVideo
	KindMotion
	KindLive
)

// everyKind reports whether k keeps every record.
func (k Kind) everyKind() bool { return k == 0 || k&(KindPhoto|KindVideo) == KindPhoto|KindVideo }

// somePhotos reports whether f keeps, of the photos, Motion Photos or
// Live Photos alone (which their metadata tells).
func (f *Filter) somePhotos() bool {
	return f.Kinds&(KindMotion|KindLive) != 0 && f.Kinds&KindPhoto == 0
}

// keepsPhoto reports whether a photo whose metadata says motion and live
// passes the kind qualifier.
func (k Kind) keepsPhoto(motion, live bool) bool {
	return k.everyKind() || k&KindPhoto != 0 || k&KindMotion != 0 && motion || k&KindLive != 0 && live
}

// Circle is a disc on the Earth: its centre in WGS84 degrees and its
// radius in kilometres along the surface.
type Circle struct{ Lat, Lon, Km float64 }

// IsZero reports whether f keeps every record.
func (f *Filter) IsZero() bool {
	return !f.HasAfter && !f.HasBefore && len(f.Years) == 0 && len(f.Places) == 0 && len(f.PlaceParts) == 0 && len(f.Near) == 0 &&
		len(f.Cameras) == 0 && len(f.Lenses) == 0 && f.Kinds.everyKind()
}

// Qualified reports whether f was given any qualifier (kind:photo|video
// keeps every record, and still makes a query that lists by date).
func (f *Filter) Qualified() bool { return len(f.written) > 0 || !f.IsZero() }

// NeedsMeta reports whether f keeps only records with metadata (any date,
// place or camera qualifier, or kind:motion or kind:live without
// kind:photo).
func (f *Filter) NeedsMeta() bool {
	return f.HasAfter || f.HasBefore || len(f.Years) > 0 || f.hasPlace() || len(f.Near) > 0 || len(f.Cameras) > 0 ||
		len(f.Lenses) > 0 || f.somePhotos()
}

// hasPlace reports whether f has a place qualifier.
func (f *Filter) hasPlace() bool { return len(f.Places) > 0 || len(f.PlaceParts) > 0 }

// String gives the qualifiers back as a query writes them, in the order
// they were parsed ("" for a filter not made by ParseRequest).
func (f *Filter) String() string { return strings.Join(f.written, " ") }

// KeepsPath reports whether a record's path passes the kind qualifier, as
// far as the path tells (whether a photo is a Motion Photo, its metadata
// tells: Match).
func (f *Filter) KeepsPath(path string) bool {
	if f.Kinds.everyKind() {
		return true
	}
	if strings.Contains(path, store.FrameSep) {
		return f.Kinds&KindVideo != 0
	}
	return f.Kinds&(KindPhoto|KindMotion|KindLive) != 0
}

// Match reports whether the record at path with metadata m (nil = none)
// passes f.
func (f *Filter) Match(path string, m *store.Meta) bool {
	return newMatcher(f).match(path, m)
}

// matcher is a filter with the folded names it has seen: the names of
// places and cameras repeat across a collection, and folding each once
// keeps a pass over a million records cheap. Not safe for concurrent use.
type matcher struct {
	f         *Filter
	areas     [][]string      // f.Places less the countries (isCountry): for cities and regions
	whole     []string        // the countries' words: a city or region of that name alone ("Ås", "Bø")
	cameras   []string        // f.Cameras, each run joined
	lensNames []string        // f.Lenses, each run joined
	parts     [][]*matcher    // f.PlaceParts, a matcher of its own for each part
	places    map[string]bool // city or region name → matches
	countries map[string]bool // country name → matches
	cams      map[[2]string]bool
	lenses    map[string]bool
}

func newMatcher(f *Filter) *matcher {
	x := &matcher{f: f, places: map[string]bool{}, countries: map[string]bool{}, cams: map[[2]string]bool{}, lenses: map[string]bool{}}
	for _, p := range f.Places {
		if !isCountry(p) {
			x.areas = append(x.areas, p)
		} else {
			x.whole = append(x.whole, p[0])
		}
	}
	for _, c := range f.Cameras {
		x.cameras = append(x.cameras, strings.Join(c, ""))
	}
	for _, pp := range f.PlaceParts {
		var ms []*matcher
		for _, p := range pp {
			ms = append(ms, newMatcher(&Filter{Places: [][]string{p}}))
		}
		x.parts = append(x.parts, ms)
	}
	for _, l := range f.Lenses {
		x.lensNames = append(x.lensNames, strings.Join(l, ""))
	}
	return x
}

// isCountry reports whether a place is one word of two letters, which
// names a country by its code (place:de) and, as a word, is too common in
// the names of towns to look for there ("Hôtel-de-Ville", "La Paz"): it
// matches a town or region only when that is the whole name ("Ås", "Mo").
func isCountry(p []string) bool {
	if len(p) != 1 || utf8.RuneCountInString(p[0]) != 2 {
		return false
	}
	for _, r := range p[0] {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

func (x *matcher) match(path string, m *store.Meta) bool {
	f := x.f
	if !f.KeepsPath(path) {
		return false
	}
	if !f.NeedsMeta() {
		return true
	}
	if m == nil {
		return false
	}
	if !strings.Contains(path, store.FrameSep) && !f.Kinds.keepsPhoto(m.Motion, m.Live) {
		return false
	}
	if f.HasAfter || f.HasBefore || len(f.Years) > 0 {
		if m.TakenSource == "" {
			return false
		}
		if f.HasAfter && m.Taken < f.After || f.HasBefore && m.Taken >= f.Before {
			return false
		}
		if len(f.Years) > 0 && !anyYear(f.Years, m.Taken) {
			return false
		}
	}
	if f.hasPlace() && !x.place(m.City, m.Region, m.Country, m.CountryCode) {
		return false
	}
	if len(f.Near) > 0 && !f.near(m) {
		return false
	}
	if len(f.Cameras) > 0 && !x.camera(m.Make, m.Model) {
		return false
	}
	if len(f.Lenses) > 0 && !x.lens(m.Lens) {
		return false
	}
	return true
}

func anyYear(ys [][2]int64, t int64) bool {
	for _, y := range ys {
		if y[0] <= t && t < y[1] {
			return true
		}
	}
	return false
}

// place reports whether a place qualifier matches a record's place: its
// city or region (not for a country, isCountry), its country name or its
// country code; or all the parts of one given in parts.
func (x *matcher) place(city, region, country, cc string) bool {
	if len(x.f.Places) > 0 && (x.area(city) || x.area(region) || x.country(country) || x.code(cc)) {
		return true
	}
	for _, parts := range x.parts {
		if !slices.ContainsFunc(parts, func(p *matcher) bool { return !p.place(city, region, country, cc) }) {
			return true
		}
	}
	return false
}

func (x *matcher) area(name string) bool {
	if name == "" || len(x.areas) == 0 && len(x.whole) == 0 {
		return false
	}
	ok, seen := x.places[name]
	if !seen {
		w := foldWords(name)
		ok = anyRun(x.areas, w) || len(w) == 1 && slices.Contains(x.whole, w[0])
		x.places[name] = ok
	}
	return ok
}

func (x *matcher) country(name string) bool {
	if name == "" {
		return false
	}
	ok, seen := x.countries[name]
	if !seen {
		ok = anyRun(x.f.Places, foldWords(name))
		x.countries[name] = ok
	}
	return ok
}

// code matches a one-word place (place:fr) against the ISO country code.
func (x *matcher) code(cc string) bool {
	if cc == "" {
		return false
	}
	for _, p := range x.f.Places {
		if len(p) == 1 && strings.EqualFold(p[0], cc) {
			return true
		}
	}
	return false
}

func (x *matcher) camera(make, model string) bool {
	if make == "" && model == "" {
		return false
	}
	k := [2]string{make, model}
	ok, seen := x.cams[k]
	if !seen {
		ok = nameMatch(x.cameras, make+" "+model)
		x.cams[k] = ok
	}
	return ok
}

func (x *matcher) lens(name string) bool {
	if name == "" {
		return false
	}
	ok, seen := x.lenses[name]
	if !seen {
		ok = nameMatch(x.lensNames, name)
		x.lenses[name] = ok
	}
	return ok
}

func (f *Filter) near(m *store.Meta) bool {
	if !m.HasGPS {
		return false
	}
	for _, c := range f.Near {
		if distanceKm(c.Lat, c.Lon, m.Lat, m.Lon) <= c.Km {
			return true
		}
	}
	return false
}

// earthKm is the mean radius of the Earth (IUGG), in km.
const earthKm = 6371.0088

// distanceKm is the great-circle distance between two points (haversine,
// accurate to 0.5% on the WGS84 ellipsoid: a radius is a rough bound).
func distanceKm(lat1, lon1, lat2, lon2 float64) float64 {
	rad := math.Pi / 180
	dlat, dlon := (lat2-lat1)*rad, (lon2-lon1)*rad
	a := math.Sin(dlat/2)*math.Sin(dlat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dlon/2)*math.Sin(dlon/2)
	return 2 * earthKm * math.Asin(math.Sqrt(min(1, a)))
}

// anyRun reports whether any needle appears as consecutive words of hay.
func anyRun(needles [][]string, hay []string) bool {
	for _, n := range needles {
		for i := 0; i+len(n) <= len(hay); i++ {
			if equalWords(hay[i:i+len(n)], n) {
				return true
			}
		}
	}
	return false
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var folder = cases.Fold()

// unaccented are letters that keep their stroke under decomposition.
var unaccented = map[rune]string{'ø': "o", 'ł': "l", 'đ': "d", 'ħ': "h", 'æ': "ae", 'œ': "oe", 'ı': "i", 'þ': "th", 'ð': "d"}

// fold is s case- and accent-folded ("Zürich" and "zurich" are one name,
// "Łódź" and "lodz" too), with a space for every rune that is not a letter
// or a digit but a point.
func fold(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(folder.String(s)) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case unaccented[r] != "":
			b.WriteString(unaccented[r])
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// foldWords is s folded, split into words of letters and digits.
func foldWords(s string) []string {
	return strings.FieldsFunc(fold(s), func(r rune) bool { return r == ' ' || r == '.' })
}

// foldRuns is s folded, split into runs of letters and runs of digits:
// "EF24-70mm f/2.8L II USM" is ef 24 70 mm f 2.8 l ii usm. A run ends at
// every rune that is neither (space, hyphen, slash, point…), where letters
// meet digits and where a capital follows a small letter (Fujifilm's
// "XF16-55mmF2.8" is xf 16 55 mm f 2.8, "E-M1MarkII" is e m 1 mark ii); a
// point between two digits is a decimal point and stays in its number, so
// that 2.8 is not 2, 8 nor 28.
func foldRuns(s string) []string {
	rs := []rune(fold(splitCamel(s)))
	var runs []string
	start, kind := 0, 0 // kind of the current run: 0 none, 1 letters, 2 digits
	for i, r := range rs {
		k := 0
		switch {
		case unicode.IsLetter(r):
			k = 1
		case unicode.IsDigit(r):
			k = 2
		case r == '.' && kind == 2 && i+1 < len(rs) && unicode.IsDigit(rs[i+1]):
			k = 2
		}
		if k != kind {
			if kind != 0 {
				runs = append(runs, string(rs[start:i]))
			}
			start, kind = i, k
		}
	}
	if kind != 0 {
		runs = append(runs, string(rs[start:]))
	}
	return runs
}

// splitCamel is s with a space where a capital follows a small letter.
func splitCamel(s string) string {
	var b strings.Builder
	lower := false
	for _, r := range s {
		if lower && unicode.IsUpper(r) {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		if !unicode.Is(unicode.Mn, r) {
			lower = unicode.IsLower(r)
		}
	}
	return b.String()
}

// nameMatch reports whether any needle (a query's runs, joined) appears in
// name's runs joined, beginning and ending where a run of name begins or
// ends. So the separators between runs are ignored on either side and a
// needle matches whole runs only: "ef2470" (lens:"ef 24-70", lens:ef24-70)
// and "70" are in EF24-70mm, "ef" is not in RF24-105mm, "50" not in
// EF150-600mm nor in 24-105mm, "8" not in f/2.8.
func nameMatch(needles []string, name string) bool {
	var b strings.Builder
	edge := []bool{true} // edge[i]: a run of name begins or ends at byte i of b
	for _, r := range foldRuns(name) {
		b.WriteString(r)
		for range len(r) - 1 {
			edge = append(edge, false)
		}
		edge = append(edge, true)
	}
	hay := b.String()
	for _, n := range needles {
		for i := 0; i+len(n) <= len(hay); {
			j := strings.Index(hay[i:], n)
			if j < 0 {
				break
			}
			if i += j; edge[i] && edge[i+len(n)] {
				return true
			}
			i++
		}
	}
	return false
}

// Order is how results are listed.
type Order int

// The orders of --sort.
const (
	ByScore    Order = iota // best match first (the default)
	ByDate                  // oldest first; records without a date last
	ByDateDesc              // newest first; records without a date last
)

// ParseOrder reads "score", "date" or "-date".
func ParseOrder(s string) (Order, error) {
	switch s {
	case "", "score":
		return ByScore, nil
	case "date":
		return ByDate, nil
	case "-date":
		return ByDateDesc, nil
	}
	return 0, fmt.Errorf("sort takes score, date (oldest first) or -date (newest first), not %q", s)
}

func (o Order) String() string { return [...]string{"score", "date", "-date"}[o] }
