package gemm

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

var benchSpin = flag.Bool("gemm.spin", true, "BenchmarkPoolUnderLoad: keep one CPU busy with another process")

// TestHelperSpin is not a test: BenchmarkPoolUnderLoad runs the test
// binary with GEMM_HELPER_SPIN=1 to get a process that keeps one CPU busy.
func TestHelperSpin(t *testing.T) {
	if os.Getenv("GEMM_HELPER_SPIN") != "1" {
		t.Skip("helper process for BenchmarkPoolUnderLoad")
	}
	x := 0
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); {
		for i := range 1 << 20 {
			x += i
		}
	}
	fmt.Println(x)
}

// planWholeStrips is planGrid without its row halves at the end.
func planWholeStrips(s *gemmSplit, g *gemmArgs, t int) {
	tailHalves = false
	defer func() { tailHalves = true }()
	planGrid(s, g, t)
}

// BenchmarkPoolUnderLoad runs a representative product (the image tower's
// fc1, 1028×1280 by 1280×5120) on a Pool of -gemm.threads workers while
// another process keeps one CPU busy, alternating the ways of cutting it:
// the default grid ("grid"), the grid without its last strips cut into row
// halves ("whole"), the guided split ("guided") and every chunk
// minChunkCols wide ("fine"). It reports the minimum, median and maximum
// of each side's pass times in ms: the spread that a descheduled worker
// causes. -gemm.spin=false leaves the busy process out.
func BenchmarkPoolUnderLoad(b *testing.B) {
	if *benchSpin {
		spin := exec.Command(os.Args[0], "-test.run=^TestHelperSpin$")
		spin.Env = append(os.Environ(), "GEMM_HELPER_SPIN=1")
		if err := spin.Start(); err != nil {
			b.Skipf("cannot start the busy process: %v", err)
		}
		defer func() {
			spin.Process.Kill()
			spin.Wait()
		}()
	}
	threads := *benchThreads
	pool := NewPool(threads)
	defer pool.Close()
	r := rand.New(rand.NewPCG(1, 1))
	const m, n, k = 1028, 5120, 1280
	x, c := randSlice(r, m*k, 1), make([]float32, m*n)
	w := &Matrix{Rows: n, Cols: k, F32: randSlice(r, n*k, 1)}
	pool.Linear(c, x, m, w, nil) // buffers
	sides := []struct {
		name   string
		hook   func(*gemmSplit, *gemmArgs, int)
		spread int
		d      []time.Duration
		cpu    []time.Duration // process CPU time per pass (all threads)
	}{
		{"grid", nil, guidedSpread, nil, nil}, // the default
		{"whole", planWholeStrips, guidedSpread, nil, nil},
		{"guided", planGuided, guidedSpread, nil, nil},
		{"fine", planGuided, 1 << 20, nil, nil}, // every chunk minChunkCols wide
	}
	for b.Loop() {
		for i := range sides {
			s := &sides[i]
			planHook, spread = s.hook, s.spread
			t0, c0 := time.Now(), processCPUTime()
			pool.Linear(c, x, m, w, nil)
			s.d = append(s.d, time.Since(t0))
			s.cpu = append(s.cpu, processCPUTime()-c0)
		}
	}
	planHook, spread = nil, guidedSpread
	for _, side := range sides {
		slices.Sort(side.d)
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		b.ReportMetric(ms(side.d[0]), side.name+"_min_ms")
		b.ReportMetric(ms(side.d[len(side.d)/2]), side.name+"_med_ms")
		b.ReportMetric(ms(side.d[len(side.d)-1]), side.name+"_max_ms")
		if side.cpu[0] > 0 {
			slices.Sort(side.cpu)
			b.ReportMetric(ms(side.cpu[len(side.cpu)/2]), side.name+"_cpu_med_ms")
		}
	}
}
