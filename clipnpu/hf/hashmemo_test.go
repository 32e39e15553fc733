package hf

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// TestWeightsHashOncePerStart: identifying a folder and then loading it
// samples the weights for their hash once; a file replaced or touched
// since is hashed again.
func TestWeightsHashOncePerStart(t *testing.T) {
	cfg := core.Config{
		Name:          "small",
		Vision:        core.VisionConfig{Hidden: 24, Heads: 3, Layers: 2, MLP: 40, Patch: 4, ImageSize: 12, Act: "quick_gelu", LayerNormEps: 1e-5},
		Text:          core.TextConfig{Hidden: 16, Heads: 2, Layers: 2, MLP: 36, Vocab: 50, Context: 9, Act: "gelu", LayerNormEps: 1e-5, EOS: 49},
		ProjectionDim: 8,
	}
	dir := t.TempDir()
	if err := WriteRandom(dir, cfg, 1, "f32", 1); err != nil {
		t.Fatal(err)
	}
	runs := func() int { return int(hashRuns.Load()) }
	before := runs()
	info, err := IdentifyFolder(dir, core.BothTowers, KeepStored, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(dir, core.BothTowers, KeepStored, 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if n := runs() - before; n != 1 {
		t.Fatalf("identify then load hashed the weights %d times, want once", n)
	}
	if m.Hash != info.WeightsHash || m.Hash == "" {
		t.Fatalf("load's hash %q, identify's %q", m.Hash, info.WeightsHash)
	}
	// Touched: another version of the file, hashed again (to the same value).
	path := filepath.Join(dir, "model.safetensors")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	m2, err := LoadModel(dir, core.BothTowers, KeepStored, 1)
	if err != nil {
		t.Fatal(err)
	}
	m2.Close()
	if n := runs() - before; n != 2 || m2.Hash != m.Hash {
		t.Fatalf("after a touch: %d hashes in all (want 2), hash %q (want %q)", n, m2.Hash, m.Hash)
	}
}
