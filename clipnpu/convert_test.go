package clipnpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/hf"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/cpu"
	"github.com/clipidx/clipidx/clipnpu/npu"
)

// TestRoundAtLoad saves a random float32 model, loads it with Weights f16
// and requires embeddings bit-identical to the same random model generated
// directly in f16 (whose matrices are the f16 rounding of the same float32
// values): every matrix is rounded once, to nearest even, and every vector
// is kept exactly. Padding misaligns the data (the copying view path).
func TestRoundAtLoad(t *testing.T) {
	cfg := smallConfig()
	for _, pad := range []int{0, 1} {
		t.Run(fmt.Sprintf("pad%d", pad), func(t *testing.T) {
			dir := writeModelDir(t, cfg, hfTensors(hf.RandomModel(cfg, 42, core.F32, core.BothTowers, 2)), pad)
			stored, err := Load(dir, core.Options{Device: "reference"})
			if err != nil {
				t.Fatal(err)
			}
			defer stored.Close()
			b, err := Load(dir, core.Options{Device: "reference", Weights: "f16"})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			m := b.(*cpu.RefBackend).Model()
			if m.Dtype != core.F16 || !m.Rounded {
				t.Errorf("dtype %s rounded %v, want f16 rounded", m.Dtype, m.Rounded)
			}
			if m.Mapping != nil {
				t.Error("the mapping is still held after every tensor was copied out")
			}
			if got, want := b.Info().Weights, "f16 (rounded from f32 at load)"; got != want {
				t.Errorf("Info().Weights = %q, want %q", got, want)
			}
			if got := stored.Info().Weights; got != "f32 (as stored, memory-mapped)" && got != "f32 (as stored, read into memory)" {
				t.Errorf("stored Info().Weights = %q", got)
			}
			// Rounding is how the model is held, not another model: the
			// hash stays the stored weights' (indexes accept either).
			h, hs := b.Info().WeightsHash, stored.Info().WeightsHash
			if h != hs || len(h) != 64 {
				t.Errorf("rounded weights hash %q: want the stored weights' %q", h, hs)
			}
			again, err := Load(dir, core.Options{Device: "cpu", Weights: "f16"})
			if err != nil {
				t.Fatal(err)
			}
			if again.Info().WeightsHash != h {
				t.Error("the rounded weights hash differs between two loads")
			}
			again.Close()

			sameEmbeddings(t, cfg, b, cpu.NewReference(hf.RandomModel(cfg, 42, core.F16, core.BothTowers, 2), 2))
		})
	}
}

// TestRoundKeeps16Bit: a 16-bit checkpoint is kept as stored under Weights
// f16, with the stored identity.
func TestRoundKeeps16Bit(t *testing.T) {
	cfg := smallConfig()
	dir := writeModelDir(t, cfg, hfTensors(hf.RandomModel(cfg, 7, core.BF16, core.BothTowers, 2)), 0)
	a, err := Load(dir, core.Options{Device: "reference"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Load(dir, core.Options{Device: "reference", Weights: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Info().WeightsHash != a.Info().WeightsHash {
		t.Error("a bf16 checkpoint changed identity under Weights f16")
	}
	if m := b.(*cpu.RefBackend).Model(); m.Dtype != core.BF16 || m.Rounded || m.Mapping == nil {
		t.Errorf("bf16 checkpoint: dtype %s rounded %v mapped %v, want bf16 as stored", m.Dtype, m.Rounded, m.Mapping != nil)
	}
	if w := b.Info().Weights; !strings.HasPrefix(w, "bf16 (as stored") {
		t.Errorf("Info().Weights = %q", w)
	}
}

// TestRoundErrors: values beyond binary16, unknown choices, bundles and the
// NPU are refused with errors that name the problem.
func TestRoundErrors(t *testing.T) {
	cfg := smallConfig()
	ts := hfTensors(hf.RandomModel(cfg, 3, core.F32, core.BothTowers, 2))
	const big = "text_model.encoder.layers.1.mlp.fc2.weight"
	for i := range ts {
		if ts[i].name == big {
			binary.LittleEndian.PutUint32(ts[i].data[4*5:], math.Float32bits(-70000))
		}
	}
	dir := writeModelDir(t, cfg, ts, 0)
	_, err := Load(dir, core.Options{Device: "cpu", Weights: "f16"})
	if err == nil || errors.Is(err, core.ErrBadModel) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), big) ||
		!strings.Contains(err.Error(), "element 5 is -70000") || !strings.Contains(err.Error(), "--weights stored") {
		t.Errorf("overflowing tensor: %v", err)
	}
	if b, err := Load(dir, core.Options{Device: "cpu"}); err != nil {
		t.Errorf("the same folder as stored: %v", err)
	} else {
		b.Close()
	}
	for _, w := range []string{"bf16", "f8", "F16"} {
		if _, err := Load(dir, core.Options{Weights: w}); err == nil || !strings.Contains(err.Error(), "weights") {
			t.Errorf("Weights %q: %v", w, err)
		}
	}
	if _, err := Load(dir, core.Options{Device: "npu", Weights: "f16"}); err == nil || !strings.Contains(err.Error(), "CPU") {
		t.Errorf("npu with f16: %v", err)
	}
	if _, err := NewRandom(cfg, 1, "f32", core.Options{Weights: "f16"}); err == nil {
		t.Error("NewRandom accepted Options.Weights")
	}
	bdir := filepath.Join(t.TempDir(), "bundle")
	if err := npu.ExportTinyBundle(writeModelDir(t, cfg, hfTensors(hf.RandomModel(cfg, 3, core.F32, core.BothTowers, 2)), 0), bdir); err != nil {
		t.Fatalf("export a bundle to try: %v", err)
	}
	if _, err := os.Stat(filepath.Join(bdir, "manifest.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bdir, core.Options{Weights: "f16"}); err == nil || !strings.Contains(err.Error(), "bundle") {
		t.Errorf("bundle with f16: %v", err)
	}
}

// TestWriteRandom saves random models with WriteRandom and loads them back:
// the embeddings equal NewRandom's bit for bit, the data section is 8-byte
// aligned (the loader maps it in place), and the same arguments write the
// same bytes.
func TestWriteRandom(t *testing.T) {
	cfg := smallConfig()
	cfg.Name = "random small"
	for _, dt := range []string{"f32", "f16", "bf16"} {
		t.Run(dt, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			if err := WriteRandom(dir, cfg, 9, dt, 2); err != nil {
				t.Fatal(err)
			}
			b, err := Load(dir, core.Options{Device: "reference"})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if got := b.Info().Name; got != cfg.Name {
				t.Errorf("Name %q, want %q", got, cfg.Name)
			}
			if got := b.(*cpu.RefBackend).Model().Dtype.String(); got != dt {
				t.Errorf("loaded dtype %s, want %s", got, dt)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			if n := binary.LittleEndian.Uint64(raw); (8+n)%8 != 0 {
				t.Errorf("data starts at byte %d, not 8-byte aligned", 8+n)
			}
			want, err := NewRandom(cfg, 9, dt, core.Options{Device: "reference"})
			if err != nil {
				t.Fatal(err)
			}
			defer want.Close()
			sameEmbeddings(t, cfg, b, want)
			dir2 := filepath.Join(t.TempDir(), "m2")
			if err := WriteRandom(dir2, cfg, 9, dt, 1); err != nil {
				t.Fatal(err)
			}
			raw2, err := os.ReadFile(filepath.Join(dir2, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != string(raw2) {
				t.Error("two writes of the same random model differ")
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 2 {
				t.Errorf("folder holds %d entries, want config.json and model.safetensors only", len(ents))
			}
			for _, e := range ents {
				if fi, err := e.Info(); err != nil {
					t.Error(err)
				} else if fi.Mode().Perm() != 0o644 {
					t.Errorf("%s: mode %v, want -rw-r--r--", e.Name(), fi.Mode())
				}
			}
		})
	}
	if err := WriteRandom(t.TempDir(), cfg, 1, "f8", 1); err == nil {
		t.Error("dtype f8 accepted")
	}
}

// TestRoundMixedCheckpoint: a checkpoint with some matrices already f16 and
// the rest f32 rounds only the f32 ones, keeps the f16 ones as views (so
// the mapping stays), and computes what the all-f16 model computes.
func TestRoundMixedCheckpoint(t *testing.T) {
	cfg := smallConfig()
	ts := hfTensors(hf.RandomModel(cfg, 42, core.F32, core.BothTowers, 2))
	half := map[string]stTensor{}
	for _, x := range hfTensors(hf.RandomModel(cfg, 42, core.F16, core.BothTowers, 2)) {
		half[x.name] = x
	}
	n16 := 0
	for i := range ts {
		if h := half[ts[i].name]; h.dtype == "F16" && i%2 == 0 {
			ts[i] = h // the f16 rounding of the same values, stored as F16
			n16++
		}
	}
	if n16 == 0 {
		t.Fatal("no matrix was switched to F16")
	}
	b, err := Load(writeModelDir(t, cfg, ts, 0), core.Options{Device: "reference", Weights: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m := b.(*cpu.RefBackend).Model()
	if !m.Rounded || m.Mapping == nil {
		t.Fatalf("rounded %v, mapping held %v: want rounded with the mapping kept for the F16 views", m.Rounded, m.Mapping != nil)
	}
	sameEmbeddings(t, cfg, b, cpu.NewReference(hf.RandomModel(cfg, 42, core.F16, core.BothTowers, 2), 2))
}

// sameEmbeddings requires got to embed testInputs(cfg, 2) bit for bit as
// want does, images and texts.
func sameEmbeddings(t *testing.T, cfg core.Config, got, want core.Backend) {
	t.Helper()
	px, ids := testInputs(cfg, 2)
	for _, enc := range []struct {
		name string
		run  func(core.Backend) ([]float32, error)
	}{
		{"image", func(b core.Backend) ([]float32, error) { return b.EncodeImages(px, 2) }},
		{"text", func(b core.Backend) ([]float32, error) { return b.EncodeTexts(ids, 2) }},
	} {
		g, err := enc.run(got)
		if err != nil {
			t.Fatal(err)
		}
		w, err := enc.run(want)
		if err != nil {
			t.Fatal(err)
		}
		for i := range w {
			if g[i] != w[i] || math.IsNaN(float64(g[i])) {
				t.Fatalf("%s[%d] = %v, want %v", enc.name, i, g[i], w[i])
			}
		}
	}
}
