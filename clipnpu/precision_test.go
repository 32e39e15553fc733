package clipnpu_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/compare"
	"github.com/clipidx/clipidx/clipnpu/conformance"
	"github.com/clipidx/clipidx/internal/fixtures"
	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/clipidx/clipidx/preprocess"
)

// bf16MinCosine is the bar of --precision bf16 against float32: above
// taconite-clip's NPU (0.99944 image, 0.99912 text).
const bf16MinCosine = 0.9995

// needBF16 skips a test on a CPU without a bf16 kernel, naming what it lacks.
func needBF16(t *testing.T) {
	t.Helper()
	if _, err := gemm.BF16Kernel(); err != nil {
		t.Skipf("--precision bf16 is not available here: %v", err)
	}
}

// samePrecision embeds px (n images) and ids (m texts) with f32 and bf16
// and holds bf16 to the gates compare chooses for it and, stricter, to
// cosine ≥ bf16MinCosine; it returns the statistics of each tower.
func samePrecision(t *testing.T, f32, bf16 clipnpu.Backend, px []float32, n int, ids []int32, m int) (img, txt compare.Stats) {
	t.Helper()
	gates, err := compare.For(bf16.Info())
	if err != nil {
		t.Fatal(err)
	}
	dim := f32.Info().Dim
	tower := func(name string, enc func(clipnpu.Backend) ([]float32, error), rows int, g compare.Gate) compare.Stats {
		a, err := enc(f32)
		if err != nil {
			t.Fatal(err)
		}
		b, err := enc(bf16)
		if err != nil {
			t.Fatal(err)
		}
		st, err := compare.Embeddings(b, a, rows, dim)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range st.Check(g) {
			t.Errorf("bf16 %s against f32: %s", name, v)
		}
		if !(st.MinCosine >= bf16MinCosine) {
			t.Errorf("bf16 %s against f32: lowest cosine %.6f, want ≥ %g", name, st.MinCosine, bf16MinCosine)
		}
		return st
	}
	if n > 0 {
		img = tower("images", func(b clipnpu.Backend) ([]float32, error) { return b.EncodeImages(px, n) }, n, gates.Image)
	}
	if m > 0 {
		txt = tower("texts", func(b clipnpu.Backend) ([]float32, error) { return b.EncodeTexts(ids, m) }, m, gates.Text)
	}
	if bf16.Info().Precision != "bf16" || f32.Info().Precision != "f32" {
		t.Errorf("Info.Precision %q and %q, want bf16 and f32", bf16.Info().Precision, f32.Info().Precision)
	}
	return img, txt
}

// TestBF16Precision measures --precision bf16 against float32 on the
// shared fixture and the unseen-model fixtures of testdata, with their
// reference inputs.
func TestBF16Precision(t *testing.T) {
	needBF16(t)
	dirs := map[string]string{"tiny-clip-h": fixtures.TinyModel(t)}
	for _, name := range []string{"legacy-eos-bf16", "qgelu-f16"} {
		dirs[name] = filepath.Join("testdata", name)
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			ref, err := conformance.ReadReference(dir)
			if err != nil {
				t.Fatal(err)
			}
			f32, err := clipnpu.Load(dir, clipnpu.Options{Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			defer f32.Close()
			bf16, err := clipnpu.Load(dir, clipnpu.Options{Device: "cpu", Precision: "bf16"})
			if err != nil {
				t.Fatal(err)
			}
			defer bf16.Close()
			img, txt := samePrecision(t, f32, bf16, ref.Pixels(), len(ref.Images), ref.IDs(), len(ref.Texts))
			t.Logf("%s: bf16 vs f32: images %v; texts %v", name, img, txt)
		})
	}
}

// TestBF16PrecisionViTH14 measures --precision bf16 against float32 on
// random weights of ViT-H/14's shape, with real photos (Go's own test
// JPEGs) as inputs. It builds two 2 GB models and takes minutes on 2
// busy cores, so it runs only with CLIPIDX_LARGE_TESTS=1 (the README's
// Development section says how).
func TestBF16PrecisionViTH14(t *testing.T) {
	needBF16(t)
	if os.Getenv("CLIPIDX_LARGE_TESTS") != "1" {
		t.Skip("ViT-H/14-sized model: set CLIPIDX_LARGE_TESTS=1 to run it")
	}
	var photos []string
	for _, f := range []string{"video-001.jpeg", "video-005.gray.jpeg"} {
		photos = append(photos, filepath.Join(runtime.GOROOT(), "src", "image", "testdata", f))
	}
	proc := preprocess.New(preprocess.DefaultConfig(), preprocess.Options{})
	var px []float32
	for _, p := range photos {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("Go's test photos are not installed: %v", err)
		}
		v, err := proc.File(p)
		if err != nil {
			t.Fatal(err)
		}
		px = append(px, v...)
	}
	cfg := clipnpu.ViTH14Config()
	// Two prompts of real text lengths: "a photo of a dog" and a longer one.
	ids := make([]int32, 2*cfg.Text.Context)
	for i, n := range []int{7, 20} {
		seq := ids[i*cfg.Text.Context : (i+1)*cfg.Text.Context]
		seq[0] = 49406
		for j := 1; j < n; j++ {
			seq[j] = int32(320 + 37*j + 1000*i)
		}
		for j := n; j < len(seq); j++ {
			seq[j] = cfg.Text.EOS
		}
	}
	f32, err := clipnpu.NewRandom(cfg, 7, "f16", clipnpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f32.Close()
	bf16, err := clipnpu.NewRandom(cfg, 7, "f16", clipnpu.Options{Precision: "bf16"})
	if err != nil {
		t.Fatal(err)
	}
	defer bf16.Close()
	img, txt := samePrecision(t, f32, bf16, px, len(photos), ids, 2)
	t.Logf("ViT-H/14 random weights, %d photos: bf16 vs f32: images %v; texts %v", len(photos), img, txt)
}

// TestPrecisionRefused: bf16 is refused where it does not apply, and on a
// CPU without a kernel with a message naming what it lacks.
func TestPrecisionRefused(t *testing.T) {
	dir := fixtures.TinyModel(t)
	for _, o := range []clipnpu.Options{
		{Device: "reference", Precision: "bf16"},
		{Device: "npu", Precision: "bf16"},
		{Precision: "f8"},
	} {
		if b, err := clipnpu.Load(dir, o); err == nil {
			b.Close()
			t.Errorf("Load with %+v succeeded", o)
		}
	}
	if _, err := gemm.BF16Kernel(); err == nil {
		return
	}
	_, err := clipnpu.Load(dir, clipnpu.Options{Precision: "bf16"})
	if err == nil || !strings.Contains(err.Error(), "--precision f32") {
		t.Errorf("bf16 on a CPU without a kernel: %v", err)
	}
}
