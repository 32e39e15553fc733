package clipnpu_test

import (
	"encoding/binary"
	"encoding/json"
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

	// One small tensor changed in its middle, away from the evenly spaced
	// samples of the whole file: the per-tensor samples see it.
	proj := t.TempDir()
	copyModel(t, src, proj)
	p = filepath.Join(proj, "model.safetensors")
	if data, err = os.ReadFile(p); err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(data[:8])
	var header map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	var e struct {
		Offsets [2]uint64 `json:"data_offsets"`
	}
	if err := json.Unmarshal(header["visual_projection.weight"], &e); err != nil {
		t.Fatal(err)
	}
	mid := 8 + n + (e.Offsets[0]+e.Offsets[1])/2
	data[mid] ^= 0x40
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if h := weightsHashOf(t, proj); h == orig {
		t.Errorf("a changed visual_projection.weight hashes the same (%s)", h)
	}
}

// TestBundleHash: bundles exported from models that differ in one tensor
// have different identities; the same export twice has the same one.
func TestBundleHash(t *testing.T) {
	src := fixtures.TinyModel(t)
	hashOf := func(model string) string {
		dir := t.TempDir()
		if err := clipnpu.ExportTinyBundle(model, dir); err != nil {
			t.Fatal(err)
		}
		b, err := clipnpu.Load(dir, clipnpu.Options{Device: "cpu", Towers: clipnpu.TextTower})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		return b.Info().WeightsHash
	}
	a, again := hashOf(src), hashOf(src)
	if a == "" || a != again {
		t.Fatalf("the same export hashes %q and %q", a, again)
	}
	changed := t.TempDir()
	copyModel(t, src, changed)
	for _, f := range []string{"vocab.json", "merges.txt", "preprocessor_config.json", "special_tokens_map.json", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(changed, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(changed, "model.safetensors")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-3] ^= 0x40 // the last tensor's values
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if b := hashOf(changed); b == a {
		t.Errorf("a bundle of changed weights hashes the same (%s)", b)
	}
}
