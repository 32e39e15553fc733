package clipnpu_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/conformance"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// openReference loads dir on the plain reference forward.
func openReference(t *testing.T, dir string) clipnpu.Backend {
	t.Helper()
	b, err := clipnpu.Load(dir, clipnpu.Options{Device: "reference"})
	if err != nil {
		t.Fatal(err)
	}
	if d := b.Info().Device; d != clipnpu.DeviceReference {
		t.Fatalf("Info().Device = %q, want %q", d, clipnpu.DeviceReference)
	}
	return b
}

func TestReferenceConformance(t *testing.T) {
	conformance.Run(t, openReference, conformance.F32CPU())
}

// TestReferenceUnseenModels runs the suite on the fixtures made by
// testdata/make_fixtures.py: shapes the code was not written against,
// quick_gelu, float16 and bfloat16 weights, a non-maximal EOS id and HF's
// legacy eos_token_id 2 (argmax pooling).
func TestReferenceUnseenModels(t *testing.T) {
	for _, name := range []string{"qgelu-f16", "legacy-eos-bf16"} {
		t.Run(name, func(t *testing.T) {
			conformance.RunDir(t, "testdata/"+name, openReference, conformance.F32CPU())
		})
	}
}

// BenchmarkReference times the reference forward on the tiny ViT-H/14-shaped
// fixture, one image or one text per op.
func BenchmarkReference(b *testing.B) {
	dir := fixtures.TinyModel(b)
	ref, err := conformance.ReadReference(dir)
	if err != nil {
		b.Fatal(err)
	}
	m, err := clipnpu.Load(dir, clipnpu.Options{Device: "reference"})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	b.Run("image", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.EncodeImages(ref.Images[0].Pixels, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("text", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.EncodeTexts(ref.Texts[0].IDs, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func ExampleLogits() {
	img := []float32{1, 0, 0} // one image embedding, D = 3
	txt := []float32{
		2, 0, 0, // same direction
		0, 5, 0, // orthogonal
	}
	fmt.Println(clipnpu.Logits(img, txt, 1, 2, 3, 100))
	// Output: [100 0]
}

func ExampleLoad() {
	b, err := clipnpu.Load("testdata/qgelu-f16", clipnpu.Options{Device: "reference", Towers: clipnpu.TextTower})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	in := b.Info()
	fmt.Println(in.Name, in.Dim, in.Context, in.Device)
	ids := make([]int32, in.Context) // one prompt: BOS, a token, EOS (500 in this model), padding
	ids[0], ids[1], ids[2] = 998, 7, 500
	for i := 3; i < len(ids); i++ {
		ids[i] = 500
	}
	emb, err := b.EncodeTexts(ids, 1)
	fmt.Println(len(emb), err)
	_, err = b.EncodeImages(make([]float32, 3*in.ImageSize*in.ImageSize), 1)
	fmt.Println(errors.Is(err, clipnpu.ErrNoTower))
	// Output:
	// clipidx-testdata/qgelu-f16 24 16 cpu-reference
	// 24 <nil>
	// true
}
