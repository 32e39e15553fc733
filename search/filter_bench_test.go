package search

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clipidx/clipidx/store"
)

// benchMeta gives the metadata of the n files of index1M (/bench/%09d.jpg)
// in path order, as fillUniform writes them beside their vectors: dates
// uniform over 2000–2024, one of 400 places (one of them Chamonix), one of
// 20 cameras. Its random sequence is its own, so the vectors stay those of
// an index made without metadata.
type benchMeta struct{ r *rand.Rand }

func newBenchMeta() *benchMeta { return &benchMeta{r: rand.New(rand.NewPCG(9, 9))} }

func (g *benchMeta) next() store.Meta {
	from, to := day("2000-01-01"), day("2025-01-01")
	taken, place, camera := from+g.r.Int64N(to-from), g.r.IntN(400), g.r.IntN(20)
	m := store.Meta{Taken: taken, TakenSource: store.TakenEXIF, HasGPS: true,
		Lat: float64(place%180) - 89.5, Lon: float64(place) - 199.5,
		City: benchTowns[place], Region: benchRegions[place/10], Country: benchLands[place/40],
		Make: "Maker", Model: benchModels[camera]}
	if place == 7 {
		m.Lat, m.Lon = 45.92, 6.87
	}
	return m
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

// BenchmarkFilteredSearch1M times Search with a filter against the same
// search without one, over the index of BenchmarkSearch1M (1,000,000
// random unit vectors, -search.index) with the metadata the index keeps
// beside them (see benchMeta; an index made before without it gains it
// first) and a copy of every 20th file whose metadata differs from its
// original's (benchCopy), one query each, alternating which runs first.
// Metrics:
// x_unfiltered, the median ratio of the filtered search's time to the
// unfiltered one's (cpu_x_unfiltered by CPU time); med_ms and
// unfiltered_ms, both medians. The filters keep from 0.25% to every
// record, taking both ways of a filtered search (see lazyDepth).
func BenchmarkFilteredSearch1M(b *testing.B) {
	const n = 1000000
	dim := *scanDim
	path := index1M(b, n, dim)
	addBenchMeta(b, path, n)
	addBenchCopies(b, path, n)
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	src := func(s *store.Snapshot) Metadata { return s }
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

// addBenchMeta writes the metadata of the n files of the index at path
// when it has none (an index fillUniform made before it wrote them).
func addBenchMeta(b *testing.B, path string, n int) {
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var has bool
	var col *store.MetaColumn
	err = rd.View(func(s *store.Snapshot) error {
		if _, has, err = s.Meta(fmt.Sprintf("/bench/%09d.jpg", n-1)); err != nil {
			return err
		}
		col, err = s.MetaColumn()
		return err
	})
	rd.Close()
	if err != nil || has && col != nil {
		if err != nil {
			b.Fatal(err)
		}
		return
	}
	w, err := store.OpenWriter(path, store.Identity{Model: "bench-random", Dim: *scanDim}, store.WriterOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if has {
		// An index from before the metadata column: any transaction of a
		// Writer makes it (as the first commit of a build would).
		t := time.Now()
		if err := w.WriteProgress(store.Progress{}); err != nil {
			b.Fatal(err)
		}
		b.Logf("metadata column made in %v", time.Since(t))
		return
	}
	g := newBenchMeta()
	var batch store.Batch
	for i := range n {
		batch.PutMeta(fmt.Sprintf("/bench/%09d.jpg", i), g.next())
		if batch.Len() == 1<<14 || i == n-1 {
			if err := w.Commit(&batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
}

// benchCopy is the path of the copy of file i of index1M: every 20th file
// has one (5%), dated by its file's time (2020-06-01 plus i seconds)
// without GPS or camera, so that its vector's files differ.
func benchCopy(i int) string { return fmt.Sprintf("/bench/copy/%09d.jpg", i) }

// addBenchCopies adds the copies of benchCopy to the index at path when
// it has none (an index made before them).
func addBenchCopies(b *testing.B, path string, n int) {
	last := (n - 1) / 20 * 20
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var has bool
	err = rd.View(func(s *store.Snapshot) error {
		_, has, err = s.Meta(benchCopy(last))
		return err
	})
	rd.Close()
	if err != nil || has {
		if err != nil {
			b.Fatal(err)
		}
		return
	}
	w, err := store.OpenWriter(path, store.Identity{Model: "bench-random", Dim: *scanDim}, store.WriterOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var batch store.Batch
	for i := 0; i < n; i += 20 {
		// The same bytes as the original (fillUniform's hash): its vector.
		h := sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i)))
		batch.Put(benchCopy(i), store.File{Size: 1, Hash: h}, nil)
		batch.PutMeta(benchCopy(i), store.Meta{Taken: day("2020-06-01") + int64(i), TakenSource: store.TakenMtime})
		if batch.Len() >= 1<<14 || i == last {
			if err := w.Commit(&batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
}

// recordsOnly hides the snapshot's metadata column: the search reads the
// records, as it does on an index without one.
type recordsOnly struct{ s *store.Snapshot }

func (r recordsOnly) EachMeta(fn func(string, store.Meta) error) error { return r.s.EachMeta(fn) }
func (r recordsOnly) Meta(p string) (store.Meta, bool, error)          { return r.s.Meta(p) }

// BenchmarkList1M times a listing by date (qualifiers alone, K = 100) over
// the index of BenchmarkFilteredSearch1M read from its metadata column
// against the same listing read from the records, alternating which runs
// first. Metrics: x_records, the median ratio of the column's time to the
// records' (cpu_x_records by CPU time); med_ms and records_ms, medians.
func BenchmarkList1M(b *testing.B) {
	const n = 1000000
	path := index1M(b, n, *scanDim)
	addBenchMeta(b, path, n)
	addBenchCopies(b, path, n)
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	err = rd.View(func(s *store.Snapshot) error {
		for _, fq := range []string{"year:2019", "kind:photo", "place:chamonix"} {
			f := parseFilter(b, fq)
			b.Run(strings.ReplaceAll(fq, " ", "_"), func(b *testing.B) {
				var wall, cpu, ms, rms []float64
				timed := func(md Metadata) (time.Duration, time.Duration) {
					c0, _ := processCPU()
					t := time.Now()
					if _, err := List(s, Options{K: 100, Filter: f, Meta: func(*store.Snapshot) Metadata { return md }}); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t)
					c1, _ := processCPU()
					return d, c1 - c0
				}
				i := 0
				for b.Loop() {
					var cw, cc, rw, rc time.Duration
					if i++; i%2 == 0 {
						cw, cc = timed(s)
						rw, rc = timed(recordsOnly{s})
					} else {
						rw, rc = timed(recordsOnly{s})
						cw, cc = timed(s)
					}
					wall = append(wall, float64(cw)/float64(rw))
					if rc > 0 {
						cpu = append(cpu, float64(cc)/float64(rc))
					}
					ms = append(ms, float64(cw)/1e6)
					rms = append(rms, float64(rw)/1e6)
				}
				med := func(xs []float64) float64 {
					slices.Sort(xs)
					return xs[len(xs)/2]
				}
				b.ReportMetric(med(wall), "x_records")
				if len(cpu) > 0 {
					b.ReportMetric(med(cpu), "cpu_x_records")
				}
				b.ReportMetric(med(ms), "med_ms")
				b.ReportMetric(med(rms), "records_ms")
			})
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
