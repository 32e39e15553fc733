package gemm

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkBF16 runs LinearBF16 on the model's linear shapes with each bf16
// kernel this CPU has, interleaved with our float32 Linear (one call of each
// side per iteration, best of N, as BenchmarkRatio), and reports GFLOP/s and
// each kernel's speed-up over float32 (the target is ≥ 1.6× for
// AVX512_BF16). Compare AMX with `python3 internal/anchors/torch_bf16_mm.py`
// (torch.mm on bfloat16 tensors, same shapes and threads).
func BenchmarkBF16(b *testing.B) {
	defer SetBF16Kernel("")
	var kernels []string
	for _, k := range []string{"avx512bf16", "amx"} {
		if err := SetBF16Kernel(k); err != nil {
			b.Logf("bf16 kernel %s not measured: %v", k, err)
			continue
		}
		kernels = append(kernels, k)
	}
	benchLinearShapes(b, func(b *testing.B, pool *Pool, s modelShape, a, c []float32, r *rand.Rand, clock func() time.Duration) {
		w := &Matrix{Rows: s.n, Cols: s.k, F32: randSlice(r, s.n*s.k, 1)}
		pw, err := PackBF16(w)
		if err != nil {
			b.Fatal(err)
		}
		sides := []func(){func() { pool.Linear(c, a, s.m, w, nil) }}
		for _, k := range kernels {
			sides = append(sides, func() {
				SetBF16Kernel(k)
				pool.LinearBF16(c, a, s.m, pw, nil)
			})
		}
		best := interleave(b, clock, sides...)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		b.ReportMetric(flops/best[0].Seconds()/1e9, "f32_GFLOP/s")
		for i, k := range kernels {
			b.ReportMetric(flops/best[i+1].Seconds()/1e9, k+"_GFLOP/s")
			b.ReportMetric(best[0].Seconds()/best[i+1].Seconds(), k+"/f32")
		}
	})
}
