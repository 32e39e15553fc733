package gemm

import (
	"runtime"
	"sync"
	"time"
)

// PeakF32 measures this CPU's float32 multiply-add peak with threads
// threads running at once, in GFLOP/s: each runs a loop of independent
// fused multiply-adds on registers only (the widest this build's
// kernels use: AVX-512 or AVX2 with FMA on amd64), for about d, on its own
// locked OS thread. No product can run faster, so a pass's GFLOP/s over
// this figure is how much of the machine it uses; the figure moves with
// the clock, so it is worth measuring in the same run as what it bounds.
// It returns 0 where no such loop exists (other architectures, the purego
// build, a CPU without FMA).
func PeakF32(threads int, d time.Duration) float64 {
	loop, flopsPerIter := fmaPeakLoop()
	return peakOf(loop, flopsPerIter, threads, d)
}

// peakOf is PeakF32 for loop (n iterations of flopsPerIter flops).
func peakOf(loop func(n int) float32, flopsPerIter float64, threads int, d time.Duration) float64 {
	if loop == nil || threads < 1 {
		return 0
	}
	// Calls of about half a millisecond (56 FMAs an iteration): the clock
	// is read between them.
	const iters = 1 << 16
	var (
		start, wg sync.WaitGroup
		mu        sync.Mutex
		calls     int
	)
	start.Add(1)
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			start.Wait()
			n := 0
			for t0 := time.Now(); time.Since(t0) < d || n == 0; n++ {
				loop(iters)
			}
			mu.Lock()
			calls += n
			mu.Unlock()
		}()
	}
	t0 := time.Now()
	start.Done()
	wg.Wait()
	return float64(calls) * iters * flopsPerIter / time.Since(t0).Seconds() / 1e9
}
