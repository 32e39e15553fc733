package clipnpu

import (
	"math"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/hf"

	"github.com/clipidx/clipidx/clipnpu/compare"
	"github.com/clipidx/clipidx/clipnpu/core"
)

// TestNewRandom: same seed → same embeddings whatever the thread count; the
// dtypes give finite, dtype-close results; the towers option allocates one.
func TestNewRandom(t *testing.T) {
	cfg := smallConfig()
	px, ids := testInputs(cfg, 2)
	embed := func(dt string, seed uint64, threads int) ([]float32, []float32) {
		t.Helper()
		b, err := NewRandom(cfg, seed, dt, core.Options{Device: "reference", Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		im, err := b.EncodeImages(px, 2)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := b.EncodeTexts(ids, 2)
		if err != nil {
			t.Fatal(err)
		}
		return im, tx
	}
	i1, t1 := embed("f32", 5, 1)
	i3, t3 := embed("f32", 5, 3)
	i9, _ := embed("f32", 9, 1)
	for i := range i1 {
		if i1[i] != i3[i] || math.IsNaN(float64(i1[i])) {
			t.Fatalf("image value %d: %v with 1 thread, %v with 3", i, i1[i], i3[i])
		}
	}
	for i := range t1 {
		if t1[i] != t3[i] {
			t.Fatalf("text value %d: %v with 1 thread, %v with 3", i, t1[i], t3[i])
		}
	}
	if compare.Cosine(i1[:8], i9[:8]) > 0.99 {
		t.Error("different seeds gave the same model")
	}
	for _, dt := range []string{"f16", "bf16"} {
		im, tx := embed(dt, 5, 2)
		// The same seed draws the same values, rounded to 16 bits.
		if c := compare.Cosine(im[:8], i1[:8]); !(c >= 0.99) {
			t.Errorf("%s image embedding cosine %v to f32", dt, c)
		}
		if c := compare.Cosine(tx[:8], t1[:8]); !(c >= 0.99) {
			t.Errorf("%s text embedding cosine %v to f32", dt, c)
		}
	}
	if _, err := NewRandom(cfg, 1, "f8", core.Options{}); err == nil {
		t.Error("dtype f8 accepted")
	}
	if _, err := NewRandom(cfg, 1, "f32", core.Options{Device: "npu"}); err == nil {
		t.Error("random model on the NPU accepted")
	}
	m := hf.RandomModel(cfg, 1, core.F16, core.TextTower, 2)
	if m.Vision != nil || m.Text == nil || m.Text.Tok.U16 == nil {
		t.Error("TextTower random model allocated the wrong towers or dtype")
	}
}
