package clipnpu_test

import (
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/conformance"
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
