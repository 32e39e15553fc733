package npu

import (
	"flag"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/hf"
	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/clipidx/clipidx/internal/rss"
)

var emuViTHLayers = flag.Int("emu-vith-layers", 2,
	"vision layers of the ViT-H/14-shaped bundle BenchmarkEmulatedViTH exports, text layers min(this, 24) (32 is the real model: about 6 GB and minutes)")

// vitHConfig is CLIP ViT-H/14 with layers vision layers and min(layers,
// 24) text layers.
func vitHConfig(layers int) core.Config {
	return core.Config{
		Name: "vit-h14-shaped",
		Vision: core.VisionConfig{Hidden: 1280, Heads: 16, Layers: layers, MLP: 5120, Patch: 14, ImageSize: 224,
			Act: "gelu", LayerNormEps: 1e-5},
		Text: core.TextConfig{Hidden: 1024, Heads: 16, Layers: min(layers, 24), MLP: 4096, Vocab: 49408, Context: 77,
			Act: "gelu", LayerNormEps: 1e-5, EOS: 49407},
		ProjectionDim: 1024,
	}
}

// BenchmarkEmulatedViTH exports a random ViT-H/14-shaped model
// (-emu-vith-layers layers, bf16 weights packed to bfp16ebs8; vision
// v_stride 264 and GEMM M 256, so v_rows 1280; text 8 prompts in 80-row
// slots, M 64) and times one pass on the CPU-emulated NPU: "image" 4
// images, "text" 8 prompts. s/pass is wall time, cpu-s/pass the process's
// CPU time (robust to other load on the machine), s/layer the pass over the
// tower's layer count (the host side is a small part; see
// BenchmarkNPUHostImage). "image" also reports the load of both towers:
// load-s (opening and decoding), load-rss-MB (resident growth across the
// load) and weights-MB (decoded weights held).
func BenchmarkEmulatedViTH(b *testing.B) {
	cfg := vitHConfig(*emuViTHLayers)
	dir := b.TempDir()
	m := hf.RandomModel(cfg, 1, core.BF16, core.BothTowers, runtime.GOMAXPROCS(0))
	if err := exportBundle(m, dir, exportShape{vBatch: 4, vM: 256, vMHAExtra: 8, tBatch: 8, tM: 64}, nil); err != nil {
		b.Fatal(err)
	}
	m = nil
	debug.FreeOSMemory() // so load-rss-MB is the loaded backend, not the export
	rss0, _ := rss.Current()

	t0 := time.Now()
	dev := NewEmuDevice(0)
	nb, err := OpenBundle(dir, core.Options{}, dev)
	if err != nil {
		b.Fatal(err)
	}
	defer nb.Close()
	load := time.Since(t0)
	debug.FreeOSMemory()
	rss1, _ := rss.Current()

	px := make([]float32, 4*3*224*224)
	for i := range px {
		px[i] = float32(math.Sin(float64(i) * 0.001))
	}
	ids := make([]int32, 8*77)
	for p := 0; p < 8; p++ {
		ids[p*77] = 49406
		for s := 1; s < 10+p; s++ {
			ids[p*77+s] = int32(300 + 37*p + s)
		}
		ids[p*77+10+p] = 49407
	}
	timePass := func(b *testing.B, layers int, pass func() error) {
		cpu0, _ := rss.CPUTime()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := pass(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		cpu1, _ := rss.CPUTime()
		per := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(per, "s/pass")
		b.ReportMetric((cpu1-cpu0).Seconds()/float64(b.N), "cpu-s/pass")
		b.ReportMetric(per/float64(layers), "s/layer")
	}
	b.Run("image", func(b *testing.B) {
		timePass(b, cfg.Vision.Layers, func() error { _, err := nb.EncodeImages(px, 4); return err })
		b.ReportMetric(load.Seconds(), "load-s")
		b.ReportMetric(float64(rss1-rss0)/(1<<20), "load-rss-MB")
		b.ReportMetric(float64(dev.held)/(1<<20), "weights-MB")
	})
	b.Run("text", func(b *testing.B) {
		timePass(b, cfg.Text.Layers, func() error { _, err := nb.EncodeTexts(ids, 8); return err })
	})
}

// naiveGEMM is the emulator's GEMM before it used gemm.Pool (kept here as
// the side-by-side baseline): C [M, N] = A [M, K] · B [K, N] + bias with B
// decoded to float32, row-parallel scalar loops.
func naiveGEMM(C, A, B, bias []float32, M, K, N, threads int) {
	core.Parallel(M, threads, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			acc := C[i*N : (i+1)*N]
			copy(acc, bias)
			for kk, av := range A[i*K : (i+1)*K] {
				if av == 0 {
					continue
				}
				brow := B[kk*N : (kk+1)*N]
				for n, bv := range brow {
					acc[n] += av * bv
				}
			}
		}
	})
}

// BenchmarkEmulatedGEMM times one ViT-H/14 fc1 chunk (M 256, K 1280,
// N 5136) as the emulator runs it now ("pool": bf16 Bᵀ on gemm.Pool) and
// as it did before ("naive": float32 B, scalar loops), side by side.
func BenchmarkEmulatedGEMM(b *testing.B) {
	const M, K, N = 256, 1280, 5136
	l := gemmTiles(K, N)
	Bf := make([]float32, K*N)
	for i := range Bf {
		Bf[i] = float32(math.Sin(float64(i)*0.37)) * 0.05
	}
	packed, err := packB(Bf, l)
	if err != nil {
		b.Fatal(err)
	}
	threads := runtime.GOMAXPROCS(0)
	A := make([]float32, M*K)
	for i := range A {
		A[i] = float32(math.Cos(float64(i) * 0.01))
	}
	roundBF16(A)
	bias := make([]float32, N)
	C := make([]float32, M*N)
	flops := 2.0 * M * K * N
	b.Run("pool", func(b *testing.B) {
		w := gemm.Matrix{Rows: N, Cols: K, Dtype: gemm.BF16, U16: make([]uint16, K*N)}
		if err := decodeBT(w.U16, packed, l, threads); err != nil {
			b.Fatal(err)
		}
		pool := gemm.NewPool(threads)
		defer pool.Close()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			pool.Linear(C, A, M, &w, bias)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("naive", func(b *testing.B) {
		dec, err := unpackB(packed, l)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			naiveGEMM(C, A, dec, bias, M, K, N, threads)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("decode", func(b *testing.B) {
		w := make([]uint16, K*N)
		for i := 0; i < b.N; i++ {
			if err := decodeBT(w, packed, l, threads); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(K*N)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweights/s")
	})
}
