//go:build amd64 && !purego

package gemm

import (
	"flag"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/cpu"
)

// cpuTimed calls f reps times per round, rounds as b.Loop allows, and
// returns the best per-call time in nanoseconds, by the calling thread's CPU
// time (Linux; the wall clock elsewhere) so that other load on a shared
// machine hardly counts.
func cpuTimed(b *testing.B, reps int, sides ...func()) []float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	clock, _ := benchClock(1)
	best := make([]float64, len(sides))
	for i := range best {
		best[i] = 1e300
	}
	for b.Loop() {
		for i, f := range sides {
			t0 := clock()
			for range reps {
				f()
			}
			best[i] = min(best[i], float64(clock()-t0)/float64(reps))
		}
	}
	return best
}

// bf16KernelDepth is the depth BenchmarkBF16Kernels runs each call over
// (a multiple of 32); 512 puts the AMX operands (2·32·512·2 bytes) in L2.
var bf16KernelDepth = flag.Int("gemm.bf16depth", 512, "depth of one call in BenchmarkBF16Kernels (multiple of 32)")

// BenchmarkBF16Kernels measures each bf16 micro-kernel alone on one core,
// operands in L1 (a [mr, 32] block over bf16KernelDepth depths): the
// ceiling of LinearBF16 (compare BenchmarkBF16 at -gemm.threads=1).
func BenchmarkBF16Kernels(b *testing.B) {
	kb := *bf16KernelDepth
	for _, name := range []string{"amx", "avx512bf16"} {
		b.Run(name, func(b *testing.B) {
			useBF16Kernel(b, name)
			impl := bf16State.Load().impl
			a := make([]uint16, impl.mr*kb)
			for i := range a {
				a[i] = RoundBF16(float32(i%7) - 3)
			}
			bp := make([]uint16, bf16NR*kb)
			for i := range bp {
				bp[i] = RoundBF16(float32(i%5) * 0.25)
			}
			c, init := make([]float32, impl.mr*bf16NR), make([]float32, bf16NR)
			lda := kb * 2
			if impl.tiledA {
				lda = kb * 32
			}
			best := cpuTimed(b, 100, func() {
				impl.kern(&amxConfig[0], &a[0], lda, &bp[0], kb*32, kb, &c[0], bf16NR*4, &init[0], 0)
			})
			b.ReportMetric(float64(impl.mr*bf16NR*kb*2)/best[0], "GFLOP/s")
		})
	}
}

// BenchmarkBF16Instructions reports the reciprocal throughput of zmm
// VDPBF16PS and VFMADD231PS on this core, in ns per instruction, and the
// flop ratio VDPBF16PS/FMA (2 if both issue at the same rate): the bound on
// what the AVX512_BF16 kernel can gain over an AVX-512 float32 kernel.
func BenchmarkBF16Instructions(b *testing.B) {
	if !cpu.X86.HasAVX512F || !cpu.X86.HasAVX512BF16 {
		b.Skip("this CPU lacks AVX512_BF16")
	}
	const n = 10000
	best := cpuTimed(b, 1, func() { probeVDPBF16PS(n) }, func() { fmaPeakAVX512(n) })
	dp, fma := best[0]/(24*n), best[1]/(56*n) // 24 VDPBF16PS, 56 FMAs an iteration
	b.ReportMetric(dp, "ns/vdpbf16ps")
	b.ReportMetric(fma, "ns/vfmadd231ps")
	b.ReportMetric(2*fma/dp, "flop_ratio")
}

// BenchmarkBF16AMX runs LinearBF16 on the AMX kernel alone on the model's
// linear shapes (best of N calls, CPU time at -gemm.threads=1, wall time
// otherwise) and reports GFLOP/s, the figure to set beside
// internal/anchors/torch_bf16_mm.py run with the same threads.
func BenchmarkBF16AMX(b *testing.B) {
	useBF16Kernel(b, "amx")
	benchLinearShapes(b, func(b *testing.B, pool *Pool, s modelShape, a, c []float32, r *rand.Rand, clock func() time.Duration) {
		pw, err := PackBF16(&Matrix{Rows: s.n, Cols: s.k, F32: randSlice(r, s.n*s.k, 1)})
		if err != nil {
			b.Fatal(err)
		}
		best := interleave(b, clock, func() { pool.LinearBF16(c, a, s.m, pw, nil) })
		b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)/best[0].Seconds()/1e9, "amx_GFLOP/s")
	})
}

// BenchmarkBF16AMXStrip interleaves LinearBF16 on the AMX kernel called
// once per [32, 32] block (one tile config load each) with the strip kernel
// (one config load per [32, 256] strip), and reports strip/block speed.
func BenchmarkBF16AMXStrip(b *testing.B) {
	useBF16Kernel(b, "amx")
	strip := bf16State.Load().impl
	block := *strip
	block.strip = nil
	benchLinearShapes(b, func(b *testing.B, pool *Pool, s modelShape, a, c []float32, r *rand.Rand, clock func() time.Duration) {
		pw, err := PackBF16(&Matrix{Rows: s.n, Cols: s.k, F32: randSlice(r, s.n*s.k, 1)})
		if err != nil {
			b.Fatal(err)
		}
		side := func(impl *bf16Impl) func() {
			return func() {
				bf16State.Store(&bf16Choice{impl, nil})
				pool.LinearBF16(c, a, s.m, pw, nil)
			}
		}
		best := interleave(b, clock, side(&block), side(strip))
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		b.ReportMetric(flops/best[0].Seconds()/1e9, "block_GFLOP/s")
		b.ReportMetric(flops/best[1].Seconds()/1e9, "strip_GFLOP/s")
		b.ReportMetric(best[0].Seconds()/best[1].Seconds(), "strip/block")
	})
}
