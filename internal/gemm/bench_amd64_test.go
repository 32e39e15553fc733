//go:build amd64 && !purego

package gemm

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkKernels runs the AVX2 and AVX-512 kernels and OpenBLAS's sgemm
// in turn on each model shape (one call each per iteration, best of N, as
// BenchmarkRatio) and reports each side's GFLOP/s and the ratios
// avx512/openblas and avx512/avx2. Export OPENBLAS_CORETYPE=SkylakeX on
// Sapphire/Emerald Rapids: OpenBLAS 0.3.21 does not recognise them and
// falls back to a kernel about 5x slower.
func BenchmarkKernels(b *testing.B) {
	if !useAVX512 {
		b.Skip("CPU lacks AVX-512F or AVX512BW")
	}
	if os.Getenv("OPENBLAS_THREAD_TIMEOUT") == "" {
		os.Setenv("OPENBLAS_THREAD_TIMEOUT", "4") // see BenchmarkRatio
	}
	lib, err := LoadBLAS()
	if err != nil {
		b.Skip(err)
	}
	threads := *benchThreads
	lib.SetThreads(threads)
	pool := NewPool(threads)
	defer pool.Close()
	clock, cpu := benchClock(threads)
	r := rand.New(rand.NewPCG(1, 1))
	prev := chosen.Load()
	defer chosen.Store(prev)
	for _, s := range modelShapes {
		b.Run(s.name, func(b *testing.B) {
			if cpu {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			a, bm := randSlice(r, s.m*s.k, 1), randSlice(r, s.n*s.k, 1)
			c := make([]float32, s.m*s.n)
			w := &Matrix{Rows: s.n, Cols: s.k, F32: bm}
			ldb := s.n
			if s.transB {
				ldb = s.k
			}
			ours := func(kernel string) func() {
				return func() {
					if err := SetKernel(kernel); err != nil {
						b.Fatal(err)
					}
					if s.linear {
						pool.Linear(c, a, s.m, w, nil)
					} else {
						pool.MatMul(c, s.n, a, s.k, bm, ldb, s.m, s.n, s.k, s.transB, 1)
					}
				}
			}
			best := interleave(b, clock, ours("avx2"), ours("avx512"), func() {
				lib.Sgemm(c, s.n, a, s.k, bm, ldb, s.m, s.n, s.k, s.transB, 1)
			})
			flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
			b.ReportMetric(flops/best[0].Seconds()/1e9, "avx2_GFLOP/s")
			b.ReportMetric(flops/best[1].Seconds()/1e9, "avx512_GFLOP/s")
			b.ReportMetric(flops/best[2].Seconds()/1e9, "blas_GFLOP/s")
			b.ReportMetric(best[2].Seconds()/best[1].Seconds(), "avx512/blas")
			b.ReportMetric(best[0].Seconds()/best[1].Seconds(), "avx512/avx2")
		})
	}
}

// BenchmarkTile compares blockings of the AVX-512 kernel (or, with
// -gemm.tilekernel avx2, the AVX2 one) on the model's linear shapes,
// interleaved, on -gemm.threads: the numbers behind tune.go's kc512,
// mc512 and nc512. Variants are given as kc/mc/nc in -gemm.tiles.
func BenchmarkTile(b *testing.B) {
	base := avx512Kernel
	switch *benchTileKernel {
	case "avx512":
		if !useAVX512 {
			b.Skip("CPU lacks AVX-512F or AVX512BW")
		}
	case "avx2":
		if !useAVX2 {
			b.Skip("CPU lacks AVX2 or FMA")
		}
		base = avx2Kernel
	default:
		b.Fatalf("-gemm.tilekernel %q: want avx512 or avx2", *benchTileKernel)
	}
	var variants []*microKernel
	for _, v := range strings.Split(*benchTiles, ",") {
		var kcv, mcv, ncv int
		order := ""
		if _, err := fmt.Sscanf(v, "%d/%d/%d%s", &kcv, &mcv, &ncv, &order); err != nil && order == "" {
			if _, err := fmt.Sscanf(v, "%d/%d/%d", &kcv, &mcv, &ncv); err != nil {
				b.Fatalf("-gemm.tiles %q: %v", v, err)
			}
		}
		kr := *base
		kr.kc, kr.kcPad, kr.mc, kr.nc = kcv, kcv+16, mcv, ncv
		if o, w, ok := strings.Cut(order, "w"); ok {
			ways, err := strconv.Atoi(w)
			if err != nil {
				b.Fatalf("-gemm.tiles %q: ways %q", v, w)
			}
			order, kr.aWays = o, ways
		}
		switch order {
		case "":
		case "a":
			kr.aOuter = true
		case "b":
			kr.aOuter = false
		default:
			b.Fatalf("-gemm.tiles %q: order %q, want a (A slab outer) or b (B panel outer)", v, order)
		}
		variants = append(variants, &kr)
	}
	benchLinearShapes(b, func(b *testing.B, pool *Pool, s modelShape, a, c []float32, r *rand.Rand, clock func() time.Duration) {
		if *benchTileRows > 0 && *benchTileRows < s.m {
			s.m = *benchTileRows // a slice of the product, as the kernel chooser's trials
		}
		raw := randSlice(r, s.n*s.k, 1)
		prev := chosen.Load()
		var sides []func()
		for _, kr := range variants {
			w := &Matrix{Rows: s.n, Cols: s.k, F32: raw}
			if *benchTilePacked {
				chosen.Store(&kernelChoice{kr, "benchmark"})
				pool.Pack(w) // for this variant's depth blocks, as the model's weights
			}
			// A at the stride this variant reads in place, as the model
			// lays out its activations (Stride), when there is one.
			lda := s.k
			if !directA(kr, lda) {
				if ld := paddedStride(kr, s.k); ld > 0 {
					lda = ld
				}
			}
			x := make([]float32, (s.m-1)*lda+s.k)
			for i := range s.m {
				copy(x[i*lda:i*lda+s.k], a[i*s.k:(i+1)*s.k])
			}
			sides = append(sides, func() {
				chosen.Store(&kernelChoice{kr, "benchmark"})
				pool.LinearStrided(c, s.n, x, lda, s.m, w, nil)
			})
		}
		best := interleave(b, clock, sides...)
		chosen.Store(prev)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		for i, kr := range variants {
			o := "b"
			if kr.aOuter {
				o = "a"
			}
			if kr.aWays > 0 {
				o += fmt.Sprintf("w%d", kr.aWays)
			}
			b.ReportMetric(flops/best[i].Seconds()/1e9, fmt.Sprintf("%d/%d/%d%s_GFLOP/s", kr.kc, kr.mc, kr.nc, o))
		}
	})
}

var benchTileKernel = flag.String("gemm.tilekernel", "avx512", "BenchmarkTile's kernel: avx512 or avx2")

var benchTileRows = flag.Int("gemm.tilerows", 0, "BenchmarkTile: only this many rows of each product (0: all); the kernel chooser's trials run 84")

var benchTilePacked = flag.Bool("gemm.tilepacked", false, "BenchmarkTile: weights packed once per variant (Pool.Pack), as the model's float32 weights on AVX-512, instead of packed block by block")

var benchTiles = flag.String("gemm.tiles", "1280/70/1024b,1280/168/1024a,256/168/1024a",
	"kc/mc/nc[order][wN] blockings of the AVX-512 kernel for BenchmarkTile (order a: A slab outer, b: B panel outer; none: the kernel's; wN: A read in place when at most N rows of a slab start on one line of an L1 way (aWays), its rows laid out at such a stride as the model's activations are)")

// BenchmarkMicroKernel runs one micro-kernel call on data in L1, 100 calls per iteration, best of N by the thread's CPU time (A packed
// with stride kc, the B panel, C), the ceiling of each kernel on this core.
func BenchmarkMicroKernel(b *testing.B) {
	for _, name := range []string{"avx512", "avx2"} {
		b.Run(name, func(b *testing.B) {
			useKernel(b, name)
			kr := currentKernel().kr
			r := rand.New(rand.NewPCG(1, 1))
			const k = 256
			a, bp := randSlice(r, kr.mr*(k+16), 1), randSlice(r, k*kr.nr, 1)
			c := make([]float32, kr.mr*kr.nr)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			clock, _ := benchClock(1) // this thread's CPU time on Linux
			best := interleave(b, clock, func() {
				for range 100 {
					runKernel(kr, k, &a[0], k+16, &bp[0], &c[0], kr.nr, 1, nil, true)
				}
			})
			b.ReportMetric(100*2*float64(kr.mr*kr.nr*k)/best[0].Seconds()/1e9, "GFLOP/s")
		})
	}
}
