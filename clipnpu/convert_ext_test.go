package clipnpu_test

import (
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/conformance"
)

// openRounded loads dir on the fast CPU forward with its float32 matrices
// rounded to binary16 at load.
func openRounded(t *testing.T, dir string) clipnpu.Backend {
	t.Helper()
	b, err := clipnpu.Load(dir, clipnpu.Options{Device: "cpu", Threads: 2, Weights: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	if w := b.Info().Weights; w != "f16 (rounded from f32 at load)" {
		t.Fatalf("Info().Weights = %q, want f16 rounded from f32", w)
	}
	return b
}

// TestRoundedConformance holds the fixture's float32 weights, rounded to
// f16 at load, to the suite's PyTorch references: embeddings at cosine
// 0.99999, as the stored weights are.
func TestRoundedConformance(t *testing.T) {
	conformance.Run(t, openRounded, conformance.F16Weights())
}
