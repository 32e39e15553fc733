package npu

import (
	"math"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/internal/gemm"
)

// hostBenchBackend is an npuBackend holding only ViT-H/14's host-side vision
// weights (random): the part of an image pass that runs on the CPU.
func hostBenchBackend(threads int) *npuBackend {
	const H, P, Tok = 1280, 14, 257
	fill := func(n int, seed float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(math.Sin(float64(i)*seed)) * 0.05
		}
		return v
	}
	nb := &npuBackend{threads: threads, pool: gemm.NewPool(threads)}
	nb.cfg = npuConfig{vDim: H, patch: P, imageSize: 224, vTokens: Tok, vStride: 264, vRows: 1280, vBatch: 4, vEps: 1e-5}
	nb.patchW = core.Tensor{Name: "v.patch_w", Rows: H, Cols: 3 * P * P, Dtype: core.F32, F32: fill(H*3*P*P, 0.37)}
	nb.cls, nb.vpos = fill(H, 0.11), fill(Tok*H, 0.13)
	nb.preW, nb.preB = fill(H, 0.17), fill(H, 0.19)
	return nb
}

// BenchmarkNPUHostImage measures the host side of one 4-image pass at
// ViT-H/14 shapes: the f32 patch embedding, class and position embedding,
// pre-LayerNorm, then the bf16 residual and its affine-free LayerNorm (the
// tower's input). "ref-patch" is the same patch embedding on the plain
// reference loop, side by side.
func BenchmarkNPUHostImage(b *testing.B) {
	nb := hostBenchBackend(0)
	defer nb.pool.Close()
	px := make([]float32, 4*3*224*224)
	for i := range px {
		px[i] = float32(math.Cos(float64(i) * 0.01))
	}
	b.Run("pass", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			x := nb.visionInput(px, 4)
			roundBF16(x)
			h := make([]float32, len(x))
			lnNoAffine(h, x, nb.cfg.vRows, nb.cfg.vDim, nb.cfg.vEps, nb.pool.Threads())
		}
	})
	b.Run("ref-patch", func(b *testing.B) {
		patches := patchRows(px, 4, 224, 14)
		emb := make([]float32, 4*256*1280)
		for i := 0; i < b.N; i++ {
			core.Linear(emb, patches, 4*256, &nb.patchW, nil, nb.pool.Threads())
		}
	})
	b.Run("gemm-patch", func(b *testing.B) {
		patches := patchRows(px, 4, 224, 14)
		emb := make([]float32, 4*256*1280)
		w := gemm.Matrix{Rows: 1280, Cols: 588, Dtype: gemm.F32, F32: nb.patchW.F32}
		for i := 0; i < b.N; i++ {
			nb.pool.Linear(emb, patches, 4*256, &w, nil)
		}
	})
}
