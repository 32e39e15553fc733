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
