package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/store"
)

// sliceMeta is metadata held in path order, as the index keeps it: a pass
// walks it, a lookup is a binary search (a B+tree descent's order of cost).
type sliceMeta struct {
	paths []string
	metas []store.Meta
}

func (s *sliceMeta) EachMeta(fn func(string, store.Meta) error) error {
	for i, p := range s.paths {
		if err := fn(p, s.metas[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *sliceMeta) Meta(p string) (store.Meta, bool, error) {
	i := sort.SearchStrings(s.paths, p)
	if i < len(s.paths) && s.paths[i] == p {
		return s.metas[i], true, nil
	}
	return store.Meta{}, false, nil
}

// benchMeta dates the n files of index1M uniformly over 2000–2024, puts
// them in one of 400 places (one of them Chamonix) with GPS, and names one
// of 20 cameras.
func benchMeta(n int) *sliceMeta {
	r := rand.New(rand.NewPCG(9, 9))
	from, to := day("2000-01-01"), day("2025-01-01")
	md := &sliceMeta{paths: make([]string, n), metas: make([]store.Meta, n)}
	for i := range n {
		md.paths[i] = fmt.Sprintf("/bench/%09d.jpg", i)
		place := r.IntN(400)
		m := store.Meta{Taken: from + r.Int64N(to-from), TakenSource: store.TakenEXIF, HasGPS: true,
			Lat: float64(place%180) - 89.5, Lon: float64(place) - 199.5,
			City: fmt.Sprintf("Town %d", place), Region: fmt.Sprintf("Region %d", place/10), Country: fmt.Sprintf("Land %d", place/40),
			Make: "Maker", Model: fmt.Sprintf("Model %d", r.IntN(20))}
		if place == 7 {
			m.City, m.Lat, m.Lon = "Chamonix-Mont-Blanc", 45.92, 6.87
		}
		md.metas[i] = m
	}
	return md
}

// BenchmarkFilteredSearch1M times Search with a filter against the same
// search without one, over the index of BenchmarkSearch1M (1,000,000
// random unit vectors, -search.index) with metadata held in memory
// (benchMeta), one query each, alternating which runs first. Metrics:
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
	md := benchMeta(n)
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
