package clipnpu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// TestInspectWeights reads the header of written models: the dtype split,
// the size, the f16 estimate (matrices halved, vectors kept), and errors
// for a missing or damaged file.
func TestInspectWeights(t *testing.T) {
	cfg := smallConfig()
	cfg.Name = "inspect"
	for _, dt := range []string{"f32", "f16"} {
		dir := filepath.Join(t.TempDir(), dt)
		if err := WriteRandom(dir, cfg, 1, dt, 1); err != nil {
			t.Fatal(err)
		}
		w, err := InspectWeights(dir)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(filepath.Join(dir, "model.safetensors"))
		if w.Bytes != st.Size() || w.Mostly() != strings.ToUpper(dt) {
			t.Errorf("%s: %+v (file %d bytes)", dt, w, st.Size())
		}
		data := w.Dtype["F32"] + w.Dtype["F16"]
		switch dt {
		case "f32":
			if w.F16Bytes <= data/2 || w.F16Bytes >= data*3/5 {
				t.Errorf("f32: f16 estimate %d of %d data bytes, want a little over half", w.F16Bytes, data)
			}
		case "f16":
			if w.F16Bytes != data {
				t.Errorf("f16: estimate %d, want the stored %d", w.F16Bytes, data)
			}
		}
	}
	if _, err := InspectWeights(t.TempDir()); !errors.Is(err, core.ErrBadModel) || !strings.Contains(err.Error(), "model.safetensors is missing") {
		t.Errorf("missing file: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("\x10\x00\x00\x00\x00\x00\x00\x00{not json"), 0o644)
	if _, err := InspectWeights(dir); !errors.Is(err, core.ErrBadModel) || !strings.Contains(err.Error(), dir) {
		t.Errorf("damaged header: %v", err)
	}
}
