package clipnpu_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/compare"
	"github.com/clipidx/clipidx/clipnpu/conformance"
	"github.com/clipidx/clipidx/internal/gemm"
)

// openFast loads dir on the fast CPU forward.
func openFast(t *testing.T, dir string) clipnpu.Backend {
	t.Helper()
	b, err := clipnpu.Load(dir, clipnpu.Options{Device: "cpu", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if d := b.Info().Device; d != clipnpu.DeviceCPU {
		t.Fatalf("Info().Device = %q, want %q (fast path not compiled in?)", d, clipnpu.DeviceCPU)
	}
	return b
}

func TestFastConformance(t *testing.T) {
	conformance.Run(t, openFast, conformance.F32CPU())
}

// smallConfig is a CLIP shape small enough for the reference forward; odd
// widths and token counts exercise the GEMM edges.
func smallConfig(vh, vheads, vlayers, patch, size, th, theads, tlayers, ctx, proj int, act string) clipnpu.Config {
	return clipnpu.Config{
		Name:          "test",
		Vision:        clipnpu.VisionConfig{Hidden: vh, Heads: vheads, Layers: vlayers, MLP: 4 * vh, Patch: patch, ImageSize: size, Act: act, LayerNormEps: 1e-5},
		Text:          clipnpu.TextConfig{Hidden: th, Heads: theads, Layers: tlayers, MLP: 4 * th, Vocab: 1000, Context: ctx, Act: act, LayerNormEps: 1e-5, EOS: 999},
		ProjectionDim: proj,
	}
}

// legacyEOS sets the old eos_token_id 2: HF then pools at the largest id
// (999 in these tests, the real EOS id).
func legacyEOS(c clipnpu.Config) clipnpu.Config {
	c.Text.EOS = 2
	return c
}

// TestFastMatchesReference runs the fast and the reference forward on the
// same random weights of several shapes and dtypes, each item alone and in a
// batch (batch sizes that cross the fast path's chunking).
func TestFastMatchesReference(t *testing.T) {
	tests := []struct {
		name    string
		cfg     clipnpu.Config
		dtype   string
		n       int
		threads int
	}{
		{"gelu f32", smallConfig(64, 4, 2, 14, 56, 48, 4, 2, 77, 32, "gelu"), "f32", 3, 2},
		{"quick_gelu f16 odd", smallConfig(72, 3, 2, 16, 80, 40, 5, 2, 77, 24, "quick_gelu"), "f16", 2, 2},
		{"gelu bf16 one thread", smallConfig(96, 6, 1, 32, 96, 64, 8, 3, 77, 40, "gelu"), "bf16", 3, 1},
		{"short context f16 three threads", smallConfig(48, 2, 1, 8, 40, 56, 7, 2, 19, 16, "gelu"), "f16", 2, 3},
		{"text chunking", smallConfig(32, 2, 1, 16, 32, 32, 2, 1, 9, 8, "gelu"), "f32", 35, 2},
		{"image chunking", smallConfig(32, 2, 1, 16, 32, 32, 2, 1, 9, 8, "quick_gelu"), "bf16", 10, 2},
		{"legacy eos 2", legacyEOS(smallConfig(40, 4, 2, 16, 48, 40, 4, 2, 30, 16, "gelu")), "f32", 5, 2},
		// MLP 1024: float32 rows 4 KiB apart alias L1 sets, so the MLP
		// hidden gets a padded row stride (gemm.Stride) on every kernel.
		{"padded mlp stride", smallConfig(256, 4, 2, 16, 32, 256, 4, 2, 20, 32, "gelu"), "f32", 3, 2},
		{"padded mlp stride quick_gelu", smallConfig(256, 4, 2, 16, 32, 256, 4, 2, 20, 32, "quick_gelu"), "f32", 2, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := clipnpu.NewRandom(tc.cfg, 7, tc.dtype, clipnpu.Options{Device: "reference"})
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			fast, err := clipnpu.NewRandom(tc.cfg, 7, tc.dtype, clipnpu.Options{Device: "cpu", Threads: tc.threads})
			if err != nil {
				t.Fatal(err)
			}
			defer fast.Close()
			if d := fast.Info().Device; d != clipnpu.DeviceCPU {
				t.Fatalf("Info().Device = %q, want %q", d, clipnpu.DeviceCPU)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			S, T, D := tc.cfg.Vision.ImageSize, tc.cfg.Text.Context, tc.cfg.ProjectionDim
			px := make([]float32, tc.n*3*S*S)
			for i := range px {
				px[i] = float32(rng.NormFloat64())
			}
			// Prompts of random length (the fast path drops the tokens after
			// the pooled one), one of full length and, from 3 prompts on,
			// one without EOS (HF pools its first token).
			ids := make([]int32, tc.n*T)
			for b := 0; b < tc.n; b++ {
				seq := ids[b*T : (b+1)*T]
				L := 2 + rng.IntN(T-1) // EOS position + 1
				switch {
				case b == tc.n-1:
					L = T
				case b == 1 && tc.n > 2:
					L = T + 1 // no EOS
				}
				seq[0] = 998
				for j := 1; j < T; j++ {
					seq[j] = int32(rng.IntN(990))
				}
				for j := L - 1; j < T; j++ {
					seq[j] = 999 // EOS then EOS padding
				}
			}
			gates, err := compare.For(fast.Info())
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, fastOut, refOut []float32, g compare.Gate) {
				t.Helper()
				s, err := compare.Embeddings(fastOut, refOut, len(refOut)/D, D)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				t.Logf("%s: %v", what, s)
				for _, v := range s.Check(g) {
					t.Errorf("%s: %s", what, v)
				}
			}
			fi, err := fast.EncodeImages(px, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			ri, err := ref.EncodeImages(px, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			check("image", fi, ri, gates.Image)
			ft, err := fast.EncodeTexts(ids, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			rt, err := ref.EncodeTexts(ids, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			check("text", ft, rt, gates.Text)
			// The last item alone equals the last item of the batch.
			last := tc.n - 1
			one, err := fast.EncodeImages(px[last*3*S*S:], 1)
			if err != nil {
				t.Fatal(err)
			}
			check("image alone vs in batch", one, fi[last*D:], gates.Batch)
			onet, err := fast.EncodeTexts(ids[last*T:], 1)
			if err != nil {
				t.Fatal(err)
			}
			check("text alone vs in batch", onet, ft[last*D:], gates.Batch)
		})
	}
}

// TestFastTowers checks that a one-tower backend refuses the other tower.
func TestFastTowers(t *testing.T) {
	cfg := smallConfig(32, 2, 1, 16, 32, 32, 2, 1, 9, 8, "gelu")
	for _, tc := range []struct {
		towers     clipnpu.Towers
		img, texts bool
	}{
		{clipnpu.ImageTower, true, false},
		{clipnpu.TextTower, false, true},
		{clipnpu.BothTowers, true, true},
	} {
		t.Run(fmt.Sprint(tc.towers), func(t *testing.T) {
			b, err := clipnpu.NewRandom(cfg, 1, "f16", clipnpu.Options{Device: "cpu", Towers: tc.towers})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			_, err = b.EncodeImages(make([]float32, 3*32*32), 1)
			if (err == nil) != tc.img {
				t.Errorf("EncodeImages error %v, want success %v", err, tc.img)
			}
			_, err = b.EncodeTexts(make([]int32, 9), 1)
			if (err == nil) != tc.texts {
				t.Errorf("EncodeTexts error %v, want success %v", err, tc.texts)
			}
		})
	}
}

// BenchmarkFastImagePass is one image pass of 4 through a ViT-B/32-shaped
// random model (f16): go test -bench FastImagePass -benchtime 3x ./clipnpu/
func BenchmarkFastImagePass(b *testing.B) {
	chooseKernels(b)
	be, err := clipnpu.NewRandom(clipnpu.ViTB32Config(), 1, "f16", clipnpu.Options{Device: "cpu"})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	S := be.Info().ImageSize
	px := make([]float32, 4*3*S*S)
	for i := range px {
		px[i] = float32(i%255)/128 - 1
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := be.EncodeImages(px, 4); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFastH14Layers runs an image pass of 4 and a text pass of 8
// through ViT-H/14-shaped towers cut to 4 layers each (the per-layer shapes
// of the real model, a fraction of its load time), f16 weights:
// go test -bench FastH14Layers -benchtime 3x ./clipnpu/
func BenchmarkFastH14Layers(b *testing.B) {
	chooseKernels(b)
	cfg := clipnpu.ViTH14Config()
	cfg.Vision.Layers, cfg.Text.Layers = 4, 4
	be, err := clipnpu.NewRandom(cfg, 1, "f16", clipnpu.Options{Device: "cpu"})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	S, T := cfg.Vision.ImageSize, cfg.Text.Context
	px := make([]float32, 4*3*S*S)
	for i := range px {
		px[i] = float32(i%255)/128 - 1
	}
	ids := make([]int32, 8*T)
	for i := range ids {
		ids[i] = int32(i*7919) % 40000
		if i%T >= 20 {
			ids[i] = cfg.Text.EOS
		}
	}
	for _, pass := range []struct {
		name string
		run  func() error
	}{
		{"images4", func() error { _, err := be.EncodeImages(px, 4); return err }},
		{"texts8", func() error { _, err := be.EncodeTexts(ids, 8); return err }},
	} {
		b.Run(pass.name, func(b *testing.B) {
			for b.Loop() {
				if err := pass.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// chooseKernels sets the kernels clipidx's commands run, chosen by
// measurement on this CPU (gemm.Choose, nothing kept), for a benchmark of
// the model: the package defaults differ (AVX2 on AMD CPUs with AVX-512,
// where attention's products then took 28% of a bf16 image pass instead
// of 8%).
func chooseKernels(b *testing.B) {
	b.Helper()
	c, err := gemm.Choose(gemm.ChooseOptions{Threads: runtime.NumCPU()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { gemm.SetKernel(""); gemm.SetBF16Kernel("") })
	b.Logf("kernels chosen by measurement: %s; %s", c.Summary(gemm.ContestF32), c.Summary(gemm.ContestBF16))
}
