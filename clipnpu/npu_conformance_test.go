package clipnpu_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/clipnpu/conformance"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestNPUEmulatedConformance exports the tiny-clip-h fixture as a bundle (4
// images and 8 prompts a pass, packed bfp16ebs8 weights), replays it on the
// emulated NPU (Load with device cpu, the CPU path for bundles) and runs the
// shared conformance suite against the fixture's independent float32
// references, at the bf16 bars compare.NPU chooses (the cosines
// taconite-clip holds the real NPU to, relative error and max |diff|,
// a logit bar of 2.0, zero-shot top-1 agreeing).
func TestNPUEmulatedConformance(t *testing.T) {
	src := fixtures.TinyModel(t)
	dir := t.TempDir()
	if err := clipnpu.ExportTinyBundle(src, dir); err != nil {
		t.Fatal(err)
	}
	copyFile := func(rel string) {
		data, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("reference.json")
	ents, err := os.ReadDir(filepath.Join(src, "pixels"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		copyFile(filepath.Join("pixels", e.Name()))
	}
	if !clipnpu.IsBundle(dir) {
		t.Fatal("exported folder is not a bundle")
	}
	conformance.RunDir(t, dir, func(t *testing.T, dir string) clipnpu.Backend {
		b, err := clipnpu.Load(dir, clipnpu.Options{Device: "cpu"})
		if err != nil {
			t.Fatal(err)
		}
		if d := b.Info().Device; d != clipnpu.DeviceEmulatedNPU {
			t.Fatalf("Load(bundle, cpu) runs on %q, want %q", d, clipnpu.DeviceEmulatedNPU)
		}
		return b
	}, conformance.NPU())
}
