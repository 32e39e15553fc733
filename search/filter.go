package search

import (
	"fmt"
	"math"
	"strings"
	"unicode"

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
	// in the city, region or country name (or be the country code).
	Places [][]string
	// Near are circles around points; a record with GPS inside any matches.
	Near []Circle
	// Cameras are folded words that must appear in a row in "make model".
	Cameras [][]string
	// Lenses are folded words that must appear in a row in the lens name.
	Lenses [][]string
	// Kinds keeps photos, video frames or both (0 = both).
	Kinds Kind

	written []string // the qualifiers, as String gives them back
}

// Kind is a set of record kinds: a photo, or a frame of a video (a path
// holding store.FrameSep).
type Kind uint8

// The record kinds of kind:photo and kind:video.
const (
	KindPhoto Kind = 1 << iota
	KindVideo
)

// Circle is a disc on the Earth: its centre in WGS84 degrees and its
// radius in kilometres along the surface.
type Circle struct{ Lat, Lon, Km float64 }

// IsZero reports whether f keeps every record.
func (f *Filter) IsZero() bool {
	return !f.HasAfter && !f.HasBefore && len(f.Years) == 0 && len(f.Places) == 0 && len(f.Near) == 0 &&
		len(f.Cameras) == 0 && len(f.Lenses) == 0 && (f.Kinds == 0 || f.Kinds == KindPhoto|KindVideo)
}

// Qualified reports whether f was given any qualifier (kind:photo|video
// keeps every record, and still makes a query that lists by date).
func (f *Filter) Qualified() bool { return len(f.written) > 0 || !f.IsZero() }

// NeedsMeta reports whether f keeps only records with metadata (any date,
// place or camera qualifier).
func (f *Filter) NeedsMeta() bool {
	return f.HasAfter || f.HasBefore || len(f.Years) > 0 || len(f.Places) > 0 || len(f.Near) > 0 || len(f.Cameras) > 0 ||
		len(f.Lenses) > 0
}

// String gives the qualifiers back as a query writes them, in the order
// they were parsed ("" for a filter not made by ParseRequest).
func (f *Filter) String() string { return strings.Join(f.written, " ") }

// KeepsPath reports whether a record's path passes the kind qualifier.
func (f *Filter) KeepsPath(path string) bool {
	if f.Kinds == 0 || f.Kinds == KindPhoto|KindVideo {
		return true
	}
	video := strings.Contains(path, store.FrameSep)
	return video == (f.Kinds == KindVideo)
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
	f      *Filter
	places map[string]bool // place name or country code → matches
	cams   map[[2]string]bool
	lenses map[string]bool
}

func newMatcher(f *Filter) *matcher {
	return &matcher{f: f, places: map[string]bool{}, cams: map[[2]string]bool{}, lenses: map[string]bool{}}
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
	if len(f.Places) > 0 && !(x.place(m.City) || x.place(m.Region) || x.place(m.Country) || x.code(m.CountryCode)) {
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

func (x *matcher) place(name string) bool {
	if name == "" {
		return false
	}
	ok, seen := x.places[name]
	if !seen {
		ok = anyRun(x.f.Places, foldWords(name))
		x.places[name] = ok
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
		ok = anyRun(x.f.Cameras, foldWords(make+" "+model))
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
		ok = anyRun(x.f.Lenses, foldWords(name))
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

// foldWords is s case- and accent-folded ("Zürich" and "zurich" are one
// name, "Łódź" and "lodz" too), split into words of letters and digits.
func foldWords(s string) []string {
	var b strings.Builder
	for _, r := range norm.NFD.String(folder.String(s)) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case unaccented[r] != "":
			b.WriteString(unaccented[r])
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		default:
			b.WriteByte(' ')
		}
	}
	return strings.Fields(b.String())
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
