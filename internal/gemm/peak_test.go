package gemm

import (
	"testing"
	"time"
)

// TestPeakF32 checks PeakF32's frame: a figure where this build has an
// FMA loop, 0 where it has none or for no threads.
func TestPeakF32(t *testing.T) {
	loop, _ := fmaPeakLoop()
	got := PeakF32(2, 5*time.Millisecond)
	switch {
	case loop == nil && got != 0:
		t.Errorf("PeakF32 = %v without an FMA loop, want 0", got)
	case loop != nil && !(got > 0):
		t.Errorf("PeakF32 = %v, want a positive figure", got)
	}
	if got := PeakF32(0, time.Millisecond); got != 0 {
		t.Errorf("PeakF32 on 0 threads = %v, want 0", got)
	}
}

// BenchmarkFMAPeak reports PeakF32 on one thread and on -gemm.threads: the
// ceiling of every float32 product on this machine (compare
// BenchmarkMicroKernel, one core, and BenchmarkTile).
func BenchmarkFMAPeak(b *testing.B) {
	if loop, _ := fmaPeakLoop(); loop == nil {
		b.Skip("no FMA peak loop in this build")
	}
	var one, all float64
	for b.Loop() {
		one = max(one, PeakF32(1, 100*time.Millisecond))
		all = max(all, PeakF32(*benchThreads, 100*time.Millisecond))
	}
	b.ReportMetric(one, "1thread_GFLOP/s")
	b.ReportMetric(all, "threads_GFLOP/s")
}
