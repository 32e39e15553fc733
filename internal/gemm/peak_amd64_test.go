//go:build amd64 && !purego

package gemm

import (
	"testing"
	"time"
)

// TestFMAPeakLoops checks that each FMA peak loop this CPU can run does
// its multiply-adds: n iterations leave 2n in every lane of every
// accumulator, and the loops return the first plus the last (4n).
func TestFMAPeakLoops(t *testing.T) {
	loops := []struct {
		name string
		ok   bool
		fn   func(int) float32
	}{{"avx512", useAVX512, fmaPeakAVX512}, {"avx2", useAVX2, fmaPeakAVX2}}
	for _, l := range loops {
		if !l.ok {
			t.Logf("%s: not run, this CPU lacks it", l.name)
			continue
		}
		for _, n := range []int{1, 7, 1000} {
			if got := l.fn(n); got != float32(4*n) {
				t.Errorf("%s loop of %d iterations returned %v, want %d", l.name, n, got, 4*n)
			}
		}
	}
}

// BenchmarkFMAPeakAVX2 reports the AVX2 FMA peak (ymm) on one thread and on
// -gemm.threads: the ceiling of the AVX2 kernel, which on a CPU with
// AVX-512 sits below PeakF32 (set BenchmarkTile -gemm.tilekernel avx2
// against it).
func BenchmarkFMAPeakAVX2(b *testing.B) {
	if !useAVX2 {
		b.Skip("CPU lacks AVX2 or FMA")
	}
	var one, all float64
	for b.Loop() {
		one = max(one, peakOf(fmaPeakAVX2, avx2PeakFlops, 1, 100*time.Millisecond))
		all = max(all, peakOf(fmaPeakAVX2, avx2PeakFlops, *benchThreads, 100*time.Millisecond))
	}
	b.ReportMetric(one, "1thread_GFLOP/s")
	b.ReportMetric(all, "threads_GFLOP/s")
}
