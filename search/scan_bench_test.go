package search

import (
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clipidx/clipidx/internal/anchors"
	"github.com/clipidx/clipidx/store"
)

var (
	scanRows  = flag.Int("search.rows", 1<<20, "rows of BenchmarkScan (bfloat16, 2·dim bytes each)")
	scanDim   = flag.Int("search.dim", 1024, "dimension of BenchmarkScan")
	indexPath = flag.String("search.index", "", "index file of BenchmarkSearch1M, made (1M random unit vectors × -search.dim) if absent; empty: a temporary one")
	numpyPath = flag.String("search.python", "/usr/bin/python3", "python with numpy, the anchor of BenchmarkScan and BenchmarkSearch1M (empty: none)")
)

// numpyAnchor is a python process holding a float32 matrix of the same
// shape, timing X @ q each time it is asked, so that both scans run side
// by side in one run.
type numpyAnchor struct{ p *anchors.Process }

const numpyScript = `
import sys, time, numpy as np
n, d = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(1)
X = np.empty((n, d), dtype=np.float32)
X[:65536] = rng.standard_normal((min(65536, n), d), dtype=np.float32)
for i in range(65536, n, 65536):
    X[i:i+65536] = X[:min(65536, n-i)]
q = rng.standard_normal(d, dtype=np.float32)
X @ q
print("ready", flush=True)
for line in sys.stdin:
    c = time.process_time(); t = time.perf_counter()
    s = X @ q
    t = time.perf_counter() - t; c = time.process_time() - c
    print(t, c, flush=True)
`

func startNumpy(b *testing.B, rows, dim int) *numpyAnchor {
	if *numpyPath == "" {
		return nil
	}
	cmd := exec.Command(*numpyPath, "-c", numpyScript, strconv.Itoa(rows), strconv.Itoa(dim))
	cmd.Stderr = os.Stderr
	if os.Getenv("OPENBLAS_THREAD_TIMEOUT") == "" {
		// OpenBLAS threads spin after each call; capped, they do not steal
		// a core from the scan that runs next.
		cmd.Env = append(os.Environ(), "OPENBLAS_THREAD_TIMEOUT=4")
	}
	p, err := anchors.Start(cmd)
	if err != nil {
		b.Logf("no numpy anchor (%s with numpy): %v", *numpyPath, err)
		return nil
	}
	b.Cleanup(func() { p.Close() })
	return &numpyAnchor{p}
}

// time runs X @ q once in the python process and returns its wall and
// CPU (all threads) durations.
func (a *numpyAnchor) time(b *testing.B) (wall, cpu time.Duration) {
	wall, cpu, err := a.p.Time("go")
	if err != nil {
		b.Fatalf("numpy anchor: %v", err)
	}
	return wall, cpu
}

// pairs collects paired timings of a scan and numpy's X @ q and reports
// the medians of their ratios: x_numpy by wall time, cpu_x_numpy by CPU
// time (less sensitive to a shared machine: the time each spent on a
// core, stalls on memory included), and both medians in milliseconds.
type pairs struct{ wall, cpu, ms, npms []float64 }

func (p *pairs) run(b *testing.B, np *numpyAnchor, fn func()) {
	c0, okc := processCPU()
	t := time.Now()
	fn()
	d := time.Since(t)
	c1, _ := processCPU()
	if np == nil {
		return
	}
	b.StopTimer()
	nw, nc := np.time(b)
	p.wall = append(p.wall, float64(d)/float64(nw))
	if okc && nc > 0 {
		p.cpu = append(p.cpu, float64(c1-c0)/float64(nc))
	}
	p.ms = append(p.ms, float64(d)/1e6)
	p.npms = append(p.npms, float64(nw)/1e6)
	b.StartTimer()
}

func (p *pairs) report(b *testing.B) {
	med := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	if len(p.wall) > 0 {
		b.ReportMetric(med(p.wall), "x_numpy")
		b.ReportMetric(med(p.ms), "med_ms")
		b.ReportMetric(med(p.npms), "numpy_ms")
	}
	if len(p.cpu) > 0 {
		b.ReportMetric(med(p.cpu), "cpu_x_numpy")
	}
}

// BenchmarkScan scores -search.rows bfloat16 vectors held in memory, in
// chunks of 256 rows shared among runtime.NumCPU() workers as Search does,
// with each kernel; after every scan numpy's float32 X @ q of the same
// shape runs once (metrics: see pairs).
// It needs about 6·rows·dim bytes of memory.
func BenchmarkScan(b *testing.B) {
	rows, dim := *scanRows, *scanDim
	const chunk = 256
	rows = (rows + chunk - 1) / chunk * chunk
	r := rand.New(rand.NewPCG(1, 1))
	one := bf16Vectors(r, chunk, dim) // one chunk, repeated
	hi := make([]byte, rows*dim*2)
	for i := 0; i < len(hi); i += len(one) {
		copy(hi[i:], one)
	}
	q := randVec(r, dim, 1)
	np := startNumpy(b, rows, dim)
	threads := runtime.NumCPU()
	for _, k := range kernels() {
		b.Run(fmt.Sprintf("%s/%dx%d", k, rows, dim), func(b *testing.B) {
			old := kernel
			kernel = k
			defer func() { kernel = old }()
			h := newHiQuery(q)
			var p pairs
			b.SetBytes(int64(len(hi)))
			for b.Loop() {
				p.run(b, np, func() {
					var next atomic.Int64
					var wg sync.WaitGroup
					for range threads {
						wg.Add(1)
						go func() {
							defer wg.Done()
							out := make([]float32, chunk)
							for {
								c := int(next.Add(1) - 1)
								if c*chunk >= rows {
									return
								}
								h.scoreRows(hi[c*chunk*dim*2:(c+1)*chunk*dim*2], out)
							}
						}()
					}
					wg.Wait()
				})
			}
			p.report(b)
		})
	}
}

// BenchmarkSearch1M times Search (top 10, 16-bit scan and exact re-rank)
// over an index of 1,000,000 random unit vectors with each kernel; after
// every search numpy's float32 X @ q of the same shape runs once (metrics:
// see pairs). Filling the index takes a minute and 4·dim MB of disk:
// -search.index keeps it for the next run.
func BenchmarkSearch1M(b *testing.B) {
	const n = 1000000
	dim := *scanDim
	path := index1M(b, n, dim)
	rd, err := store.OpenReader(path, store.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	np := startNumpy(b, n, dim)
	r := rand.New(rand.NewPCG(2, 2))
	err = rd.View(func(s *store.Snapshot) error {
		if s.Dim() != dim {
			b.Fatalf("%s has dimension %d, -search.dim is %d", path, s.Dim(), dim)
		}
		Search(s, randVec(r, dim, 1), Options{}) // the page cache
		for _, k := range kernels() {
			b.Run(k.String(), func(b *testing.B) {
				old := kernel
				kernel = k
				defer func() { kernel = old }()
				var p pairs
				for b.Loop() {
					q := randVec(r, dim, 1)
					p.run(b, np, func() {
						if _, err := Search(s, q, Options{}); err != nil {
							b.Fatal(err)
						}
					})
				}
				p.report(b)
			})
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSearch1MOpen is BenchmarkSearch1M with the current kernel and
// the index opened for every search, as `clipidx search` and each request
// of `clipidx serve` do: the first scan of a new mapping also pays the
// page faults that map the index (one per 64 KiB on Linux, unless the page
// cache holds it in 2 MiB pages).
func BenchmarkSearch1MOpen(b *testing.B) {
	const n = 1000000
	dim := *scanDim
	path := index1M(b, n, dim)
	np := startNumpy(b, n, dim)
	r := rand.New(rand.NewPCG(3, 3))
	search := func() {
		rd, err := store.OpenReader(path, store.ReaderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer rd.Close()
		err = rd.View(func(s *store.Snapshot) error {
			_, err := Search(s, randVec(r, dim, 1), Options{})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	search() // the page cache
	var p pairs
	for b.Loop() {
		p.run(b, np, search)
	}
	p.report(b)
}

// index1M is -search.index, or a temporary file, filled with n random
// unit vectors of dim values unless it exists.
func index1M(b *testing.B, n, dim int) string {
	path := *indexPath
	if path == "" {
		path = filepath.Join(b.TempDir(), "s.db")
	}
	if _, err := os.Stat(path); err != nil {
		fillUniform(b, path, n, dim)
	}
	return path
}

// fillUniform writes n random unit vectors, one file each, with its
// metadata (see benchMeta) in the same batch.
func fillUniform(b *testing.B, path string, n, dim int) {
	w, err := store.OpenWriter(path, store.Identity{Model: "bench-random", Dim: dim}, store.WriterOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	r, g := rand.New(rand.NewPCG(1, 1)), newBenchMeta()
	var batch store.Batch
	for i := range n {
		h := sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i)))
		p := fmt.Sprintf("/bench/%09d.jpg", i)
		batch.Put(p, store.File{Size: 1, Hash: h}, randVec(r, dim, 1))
		batch.PutMeta(p, g.next())
		if batch.Len() == 1<<14 || i == n-1 {
			if err := w.Commit(&batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
}
