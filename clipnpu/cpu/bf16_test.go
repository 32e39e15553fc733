package cpu

import (
	"slices"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/hf"
)

// TestStackQKV checks that bf16 layers run q, k and v as one product where
// the three lie end to end (the image tower of packTestConfig, H = 64,
// packed in memory or mapped from the cache, whose 8 KiB matrices fill
// whole pages), and as three where they cannot (its text tower, H = 48:
// rows not a multiple of 32), and that the stacked product changes no
// output bit: the same model with the stacks dropped gives equal
// embeddings.
func TestStackQKV(t *testing.T) {
	bf16OrPortable(t)
	stacks := func(t *fastTower) (n int) {
		for i := range t.layers {
			if t.layers[i].qkvBF != nil {
				n++
			}
		}
		return n
	}
	dir := t.TempDir()
	for _, start := range []string{"packed in memory", "mapped from the cache"} {
		t.Run(start, func(t *testing.T) {
			b, err := NewFast(hf.RandomModel(packTestConfig, 1, core.F32, core.BothTowers, 2), core.Options{Threads: 2, Precision: "bf16", PackCache: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			f := b.(*fastCPU)
			if note := b.Info().DeviceNote; start == "mapped from the cache" && !strings.Contains(note, "mapped from") {
				t.Fatalf("second start did not map the cache: %q", note)
			}
			if got, want := stacks(f.vis), len(f.vis.layers); got != want {
				t.Errorf("image tower: %d of %d layers stacked q, k and v", got, want)
			}
			if got := stacks(f.txt); got != 0 {
				t.Errorf("text tower (H = 48): %d layers stacked q, k and v, want 0", got)
			}
			stacked := embedCacheInputs(t, b)
			for i := range f.vis.layers {
				f.vis.layers[i].qkvBF = nil
			}
			three := embedCacheInputs(t, b)
			for i := range three {
				if !slices.Equal(stacked[i], three[i]) {
					t.Fatalf("output %d: one stacked q, k, v product differs from three products", i)
				}
			}
		})
	}
}
