package gemm

import (
	"flag"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

var benchThreads = flag.Int("gemm.threads", 2, "threads for BenchmarkShapes (ours and OpenBLAS)")

// modelShapes are the products of the ViT-H/14 forward: the four per-layer
// linears of the image tower (a pass of 4 images, m = 4·257) and of the text
// tower (8 prompts, m = 8·77), the patch embedding, and one attention head.
var modelShapes = []struct {
	name    string
	m, n, k int
	linear  bool // y = x·wᵀ (w [n,k]); otherwise MatMul as named
	transB  bool
}{
	{"img_qkv", 1028, 3840, 1280, true, true},
	{"img_o", 1028, 1280, 1280, true, true},
	{"img_fc1", 1028, 5120, 1280, true, true},
	{"img_fc2", 1028, 1280, 5120, true, true},
	{"txt_qkv", 616, 3072, 1024, true, true},
	{"txt_o", 616, 1024, 1024, true, true},
	{"txt_fc1", 616, 4096, 1024, true, true},
	{"txt_fc2", 616, 1024, 4096, true, true},
	{"patch", 1024, 1280, 588, true, true},
	{"attn_qk", 257, 257, 80, false, true},
	{"attn_pv", 257, 80, 257, false, false},
}

// BenchmarkShapes measures our kernels and the system OpenBLAS side by side
// on each model shape, reporting GFLOP/s (2·m·n·k per op). Run the OpenBLAS
// side without OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE overrides.
func BenchmarkShapes(b *testing.B) {
	threads := *benchThreads
	pool := NewPool(threads)
	defer pool.Close()
	lib, libErr := LoadBLAS()
	if libErr == nil {
		lib.SetThreads(threads)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range modelShapes {
		a := randSlice(r, s.m*s.k, 1)
		bm := randSlice(r, s.n*s.k, 1)
		c := make([]float32, s.m*s.n)
		ldb := s.n
		if s.transB {
			ldb = s.k
		}
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		report := func(b *testing.B) {
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		b.Run(s.name, func(b *testing.B) {
			b.Run("ours", func(b *testing.B) {
				w := &Matrix{Rows: s.n, Cols: s.k, F32: bm}
				for b.Loop() {
					if s.linear {
						pool.Linear(c, a, s.m, w, nil)
					} else {
						pool.MatMul(c, s.n, a, s.k, bm, ldb, s.m, s.n, s.k, s.transB, 1)
					}
				}
				report(b)
			})
			for _, dt := range []Dtype{BF16, F16} {
				if !s.linear {
					break
				}
				w := randWeights(r, s.n, s.k, dt)
				b.Run("ours_"+dt.String(), func(b *testing.B) {
					for b.Loop() {
						pool.Linear(c, a, s.m, w, nil)
					}
					report(b)
				})
			}
			b.Run("openblas", func(b *testing.B) {
				if libErr != nil {
					b.Skip(libErr)
				}
				for b.Loop() {
					lib.Sgemm(c, s.n, a, s.k, bm, ldb, s.m, s.n, s.k, s.transB, 1)
				}
				report(b)
			})
		})
	}
}

// BenchmarkRatio alternates one call of ours and one of OpenBLAS per
// iteration on each model shape, so both sides see the same load on a
// shared machine, and reports the best-of-N GFLOP/s of each side and their
// ratio (ours/openblas, the number the 0.9× target refers to).
// With -gemm.threads=1 both sides run on the benchmark's own OS thread, and
// the times are that thread's CPU time (Linux), so that time slices lost to
// other processes on a shared machine do not count against either side.
func BenchmarkRatio(b *testing.B) {
	lib, err := LoadBLAS()
	if err != nil {
		b.Skip(err)
	}
	threads := *benchThreads
	epoch := time.Now()
	clock := func() time.Duration { return time.Since(epoch) }
	_, cpuClock := threadCPUTime()
	cpuClock = cpuClock && threads == 1
	if cpuClock {
		clock = func() time.Duration { d, _ := threadCPUTime(); return d }
	}
	lib.SetThreads(threads)
	pool := NewPool(threads)
	defer pool.Close()
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range modelShapes {
		b.Run(s.name, func(b *testing.B) {
			if cpuClock {
				runtime.LockOSThread() // the thread clock must stay ours
				defer runtime.UnlockOSThread()
			}
			a, bm := randSlice(r, s.m*s.k, 1), randSlice(r, s.n*s.k, 1)
			c := make([]float32, s.m*s.n)
			w := &Matrix{Rows: s.n, Cols: s.k, F32: bm}
			ldb := s.n
			if s.transB {
				ldb = s.k
			}
			ours := func() {
				if s.linear {
					pool.Linear(c, a, s.m, w, nil)
				} else {
					pool.MatMul(c, s.n, a, s.k, bm, ldb, s.m, s.n, s.k, s.transB, 1)
				}
			}
			best := [2]time.Duration{1 << 62, 1 << 62}
			for b.Loop() {
				for side, f := range []func(){ours, func() { lib.Sgemm(c, s.n, a, s.k, bm, ldb, s.m, s.n, s.k, s.transB, 1) }} {
					t0 := clock()
					f()
					best[side] = min(best[side], clock()-t0)
				}
			}
			flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
			b.ReportMetric(flops/best[0].Seconds()/1e9, "ours_GFLOP/s")
			b.ReportMetric(flops/best[1].Seconds()/1e9, "blas_GFLOP/s")
			b.ReportMetric(best[1].Seconds()/best[0].Seconds(), "ratio")
		})
	}
}
