package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/store"
)

// benchRecord is one record's metadata as the index keeps it: compact
// and pointer-free (a million of them cost the garbage collector nothing
// to scan, as the index's pages do not); benchMeta decodes each into a
// store.Meta as it is read.
type benchRecord struct {
	taken         int64
	place, camera uint16
}

// benchMeta is the metadata of the n files of index1M (/bench/%09d.jpg),
// in path order: a pass decodes every record, a lookup parses the path.
type benchMeta struct{ recs []benchRecord }

func (md *benchMeta) meta(i int) store.Meta {
	x := md.recs[i]
	m := store.Meta{Taken: x.taken, TakenSource: store.TakenEXIF, HasGPS: true,
		Lat: float64(x.place%180) - 89.5, Lon: float64(x.place) - 199.5,
		City: benchTowns[x.place], Region: benchRegions[x.place/10], Country: benchLands[x.place/40],
		Make: "Maker", Model: benchModels[x.camera]}
	if x.place == 7 {
		m.Lat, m.Lon = 45.92, 6.87
	}
	return m
}

func (md *benchMeta) EachMeta(fn func(string, store.Meta) error) error {
	for i := range md.recs {
		if err := fn(fmt.Sprintf("/bench/%09d.jpg", i), md.meta(i)); err != nil {
			return err
		}
	}
	return nil
}

func (md *benchMeta) Meta(p string) (store.Meta, bool, error) {
	var i int
	if _, err := fmt.Sscanf(p, "/bench/%09d.jpg", &i); err != nil || i < 0 || i >= len(md.recs) {
		return store.Meta{}, false, nil
	}
	return md.meta(i), true, nil
}

var (
	benchTowns                            = append(append(names("Town", 7), "Chamonix-Mont-Blanc"), names("Town", 400)[8:]...)
	benchRegions, benchLands, benchModels = names("Region", 40), names("Land", 10), names("Model", 20)
)

func names(what string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s %d", what, i)
	}
	return out
}

// newBenchMeta dates the n files uniformly over 2000–2024, puts each in
// one of 400 places (one of them Chamonix) and names one of 20 cameras.
func newBenchMeta(n int) *benchMeta {
	r := rand.New(rand.NewPCG(9, 9))
	from, to := day("2000-01-01"), day("2025-01-01")
	md := &benchMeta{recs: make([]benchRecord, n)}
	for i := range md.recs {
		md.recs[i] = benchRecord{taken: from + r.Int64N(to-from), place: uint16(r.IntN(400)), camera: uint16(r.IntN(20))}
	}
	return md
}

// BenchmarkFilteredSearch1M times Search with a filter against the same
// search without one, over the index of BenchmarkSearch1M (1,000,000
// random unit vectors, -search.index) with metadata held in memory
// (benchMeta: a pass decodes each record, a lookup costs less than the
// index's B+tree descent), one query each, alternating which runs first. Metrics:
// x_unfiltered, the median ratio of the filtered search's time to the
// unfiltered one's (cpu_x_unfiltered by CPU time); med_ms and
// unfiltered_ms, both medians. The filters keep from 0.25% to every
// record, taking both ways of a filtered search (see lazyDepth).
func BenchmarkFilteredSearch1M(b *testing.B) {
	const n = 1000000
	dim := *scanDim
	path := index1M(b, n, dim)
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	md := newBenchMeta(n)
	src := func(*store.Snapshot) Metadata { return md }
	r := rand.New(rand.NewPCG(4, 4))
	err = rd.View(func(s *store.Snapshot) error {
		Search(s, randVec(r, dim, 1), Options{}) // the page cache
		for _, fq := range []string{"year:2019", "kind:photo", "camera:\"model 3\" year:2010..2014", "place:chamonix", "near:45.9,6.9,20km year:2019"} {
			f := parseFilter(b, fq)
			b.Run(strings.ReplaceAll(fq, " ", "_"), func(b *testing.B) {
				var wall, cpu, ms, ums []float64
				timed := func(opts Options, q []float32) (time.Duration, time.Duration) {
					c0, _ := processCPU()
					t := time.Now()
					if _, err := Search(s, q, opts); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t)
					c1, _ := processCPU()
					return d, c1 - c0
				}
				i := 0
				for b.Loop() {
					q := randVec(r, dim, 1)
					var fw, fc, uw, uc time.Duration
					if i++; i%2 == 0 {
						fw, fc = timed(Options{Filter: f, Meta: src}, q)
						uw, uc = timed(Options{}, q)
					} else {
						uw, uc = timed(Options{}, q)
						fw, fc = timed(Options{Filter: f, Meta: src}, q)
					}
					wall = append(wall, float64(fw)/float64(uw))
					if uc > 0 {
						cpu = append(cpu, float64(fc)/float64(uc))
					}
					ms = append(ms, float64(fw)/1e6)
					ums = append(ums, float64(uw)/1e6)
				}
				med := func(xs []float64) float64 {
					slices.Sort(xs)
					return xs[len(xs)/2]
				}
				b.ReportMetric(med(wall), "x_unfiltered")
				if len(cpu) > 0 {
					b.ReportMetric(med(cpu), "cpu_x_unfiltered")
				}
				b.ReportMetric(med(ms), "med_ms")
				b.ReportMetric(med(ums), "unfiltered_ms")
			})
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
