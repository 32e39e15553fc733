package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// TestRebuildHoldsLittle: a build that finds a library unchanged, or
// one new file in it, holds little memory for each file, at any point of
// it: the heap left after a collection at each progress report (every
// 256 files of the walk, and each phase), above what it was before the
// build, stays under 160 bytes a file (each record was held whole, with
// its path twice and a place in two maps, and every content hash in a
// map once a file needed reading: 400 to 470 bytes).
func TestRebuildHoldsLittle(t *testing.T) {
	const n, limit = 10000, 160
	d := t.TempDir()
	db := filepath.Join(t.TempDir(), "i.db")
	writeLibrary(t, d, n, 250)
	o := Options{Encoder: &fakeEnc{}, Preprocess: fakePre, Identity: fakeID, CommitEvery: 1000}
	if sum, err := Build(context.Background(), db, []string{d}, o); err != nil || sum.Added != n {
		t.Fatal(sum, err)
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for _, tc := range []struct {
		name  string
		added int
	}{{"unchanged", 0}, {"one file added", 1}} {
		if tc.added > 0 {
			write(t, filepath.Join(d, "new", "IMG_NEW.png"), png+"new")
		}
		var most uint64
		var when Event
		o.Progress = func(e Event) {
			if h := heap(); h > most {
				most, when = h, e
			}
		}
		base := heap()
		sum, err := Build(context.Background(), db, []string{d}, o)
		if err != nil || sum.Unchanged != n || sum.Added != tc.added {
			t.Fatal(tc.name, sumOf(sum), err)
		}
		per := float64(most-min(most, base)) / n
		t.Logf("%s: %.0f bytes a file held at most (%s %d)", tc.name, per, when.Phase, when.Done)
		if per > limit {
			t.Errorf("%s: the build held %.0f bytes a file (at %s %d), want at most %d", tc.name, per, when.Phase, when.Done, limit)
		}
	}
}

// BenchmarkRebuildMemory measures what a build over a large library holds
// in memory when it finds nothing changed (unchanged) or one new file
// (one-added): the peak of the Go heap above what it was before the build
// (peak-heap-B/file, sampled every millisecond), the largest heap the
// garbage collector found live (live-B/file), and the bytes allocated
// (alloc-B/file), each per file of the library. Slow to set up (it writes
// and indexes every file once): run it alone,
//
//	go test ./index -run '^$' -bench RebuildMemory -benchtime 5x
func BenchmarkRebuildMemory(b *testing.B) {
	for _, n := range []int{100_000, 300_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			d, db, o := indexedLibrary(b, n, 250)
			b.Run("unchanged", func(b *testing.B) { benchRebuild(b, d, db, o, n, false) })
			b.Run("one-added", func(b *testing.B) { benchRebuild(b, d, db, o, n, true) })
		})
	}
}

// indexedLibrary writes n tiny files, perFolder to a folder, and indexes
// them; it returns the library's folder, the index and the options of the
// build.
func indexedLibrary(b *testing.B, n, perFolder int) (dir, db string, o Options) {
	dir, db = b.TempDir(), filepath.Join(b.TempDir(), "i.db")
	writeLibrary(b, dir, n, perFolder)
	o = Options{Encoder: &fakeEnc{}, Preprocess: fakePre, Identity: fakeID, CommitEvery: 1000}
	if sum, err := Build(context.Background(), db, []string{dir}, o); err != nil || sum.Added != n {
		b.Fatal(sum, err)
	}
	return dir, db, o
}

// benchRebuild times and measures builds of the library dir of n files
// (indexedLibrary) that find it unchanged, or, with add, one new file in
// it (written before each build, outside the timing).
func benchRebuild(b *testing.B, dir, db string, o Options, n int, add bool) {
	var peak, live, alloc uint64
	var found int
	for b.Loop() {
		b.StopTimer()
		want := 0
		if add {
			want = 1
			write(b, filepath.Join(dir, "added", fmt.Sprintf("IMG_%d.png", found)), fmt.Sprintf("%sadded %d", png, found))
		}
		w := watchHeap()
		b.StartTimer()
		sum, err := Build(context.Background(), db, []string{dir}, o)
		b.StopTimer()
		p, l, a := w.stop()
		b.StartTimer()
		if err != nil || sum.Unchanged != n+found || sum.Added != want {
			b.Fatal(sum, err)
		}
		found += want
		peak, live, alloc = max(peak, p), max(live, l), alloc+a
	}
	b.ReportMetric(float64(peak)/float64(n), "peak-heap-B/file")
	b.ReportMetric(float64(live)/float64(n), "live-B/file")
	b.ReportMetric(float64(alloc)/float64(b.N)/float64(n), "alloc-B/file")
}

// writeLibrary writes n small distinct images under dir, perFolder to a
// folder, in folders two levels deep (as years and events).
func writeLibrary(b testing.TB, dir string, n, perFolder int) {
	for i := range n {
		folder := filepath.Join(dir, fmt.Sprintf("%d", 2000+i/perFolder/20), fmt.Sprintf("event %03d", i/perFolder%20))
		if i%perFolder == 0 {
			if err := os.MkdirAll(folder, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		name := filepath.Join(folder, fmt.Sprintf("IMG_%06d.png", i))
		if err := os.WriteFile(name, fmt.Appendf(nil, "%s%d", png, i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// heapWatch samples the heap until stopped.
type heapWatch struct {
	quit, done chan struct{}
	base       [3]uint64 // objects, live and allocated bytes at the start
	peak, live uint64
}

var heapSamples = []string{"/memory/classes/heap/objects:bytes", "/gc/heap/live:bytes", "/gc/heap/allocs:bytes"}

func readHeap(s []metrics.Sample) (v [3]uint64) {
	metrics.Read(s)
	for i := range v {
		v[i] = s[i].Value.Uint64()
	}
	return v
}

// watchHeap collects garbage, takes the heap's size then as the base, and
// samples it every millisecond.
func watchHeap() *heapWatch {
	runtime.GC()
	s := make([]metrics.Sample, len(heapSamples))
	for i, name := range heapSamples {
		s[i].Name = name
	}
	w := &heapWatch{quit: make(chan struct{}), done: make(chan struct{}), base: readHeap(s)}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			v := readHeap(s)
			w.peak, w.live = max(w.peak, v[0]), max(w.live, v[1])
			select {
			case <-w.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// stop ends the sampling and returns the peaks above the base, and the
// bytes allocated since the start.
func (w *heapWatch) stop() (peak, live, alloc uint64) {
	close(w.quit)
	<-w.done
	s := make([]metrics.Sample, len(heapSamples))
	for i, name := range heapSamples {
		s[i].Name = name
	}
	v := readHeap(s)
	w.peak, w.live = max(w.peak, v[0]), max(w.live, v[1])
	sub := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return sub(w.peak, w.base[0]), sub(w.live, w.base[1]), v[2] - w.base[2]
}
