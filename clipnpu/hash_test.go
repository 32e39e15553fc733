package clipnpu_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/clipidx/clipidx/clipnpu"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// copyModel copies the files of a model folder that Load reads.
func copyModel(t *testing.T, src, dst string) {
	t.Helper()
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func weightsHashOf(t *testing.T, dir string) string {
	t.Helper()
	b, err := clipnpu.Load(dir, clipnpu.Options{Device: "reference", Towers: clipnpu.TextTower})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return b.Info().WeightsHash
}

// TestWeightsHash: the same weights in another folder hash the same; the
// same shapes with a changed value (in the first data block, which is
// always sampled) hash differently.
func TestWeightsHash(t *testing.T) {
	src := fixtures.TinyModel(t)
	orig := weightsHashOf(t, src)
	if len(orig) != 64 {
		t.Fatalf("hash %q is not 64 hex digits", orig)
	}
	same := filepath.Join(t.TempDir(), "renamed-model")
	if err := os.Mkdir(same, 0o755); err != nil {
		t.Fatal(err)
	}
	copyModel(t, src, same)
	if h := weightsHashOf(t, same); h != orig {
		t.Errorf("a byte-identical copy hashes %s, want %s", h, orig)
	}

	changed := t.TempDir()
	copyModel(t, src, changed)
	p := filepath.Join(changed, "model.safetensors")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	start := 8 + binary.LittleEndian.Uint64(data[:8]) // first byte of the data section
	data[start] ^= 0x01
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if h := weightsHashOf(t, changed); h == orig {
		t.Errorf("changed weights of the same shapes hash the same (%s)", h)
	}
}
