//go:build amd64 && !purego

package gemm

import (
	"runtime"
	"testing"

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

// bf16KernelDepth is the depth BenchmarkBF16Kernels runs each call over.
var bf16KernelDepth = 512

// BenchmarkBF16Kernels measures each bf16 micro-kernel alone on one core,
// operands in L1 (a [mr, 32] block over bf16KernelDepth depths): the
// ceiling of LinearBF16 (compare BenchmarkBF16 at -gemm.threads=1).
func BenchmarkBF16Kernels(b *testing.B) {
	kb := bf16KernelDepth
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
	best := cpuTimed(b, 1, func() { probeVDPBF16PS(n) }, func() { probeVFMADD231PS(n) })
	dp, fma := best[0]/(24*n), best[1]/(24*n)
	b.ReportMetric(dp, "ns/vdpbf16ps")
	b.ReportMetric(fma, "ns/vfmadd231ps")
	b.ReportMetric(2*fma/dp, "flop_ratio")
}
