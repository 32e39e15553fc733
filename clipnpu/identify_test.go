package clipnpu

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/hf"
	"github.com/clipidx/clipidx/clipnpu/npu"
	"github.com/clipidx/clipidx/internal/fixtures"
)

// TestIdentifyMatchesLoad: for every kind of folder and option a build may
// use, Identify names the model exactly as the loaded backend's Info does.
func TestIdentifyMatchesLoad(t *testing.T) {
	cfg := smallConfig()
	cfg.Name = "identify"
	dirs := map[string]string{"fixture": fixtures.TinyModel(t)}
	for _, dt := range []string{"f32", "f16", "bf16"} {
		dirs[dt] = filepath.Join(t.TempDir(), dt)
		if err := hf.WriteRandom(dirs[dt], cfg, 5, dt, 1); err != nil {
			t.Fatal(err)
		}
	}
	// Only the text tower's matrices stay F32: rounding applies to a text
	// load, not to an image load.
	mixed := hfTensors(hf.RandomModel(cfg, 5, core.F16, core.BothTowers, 1))
	f32 := map[string]stTensor{}
	for _, x := range hfTensors(hf.RandomModel(cfg, 5, core.F32, core.BothTowers, 1)) {
		f32[x.name] = x
	}
	for i, x := range mixed {
		if len(x.name) > 5 && x.name[:5] == "text_" {
			mixed[i] = f32[x.name]
		}
	}
	dirs["text f32, image f16"] = writeModelDir(t, cfg, mixed, 0)
	// Projections BF16, everything else F32: the rounding target names
	// the model, not the last matrix read.
	bf := map[string]stTensor{}
	for _, x := range hfTensors(hf.RandomModel(cfg, 5, core.BF16, core.BothTowers, 1)) {
		bf[x.name] = x
	}
	proj := hfTensors(hf.RandomModel(cfg, 5, core.F32, core.BothTowers, 1))
	for i, x := range proj {
		if x.name == "visual_projection.weight" || x.name == "text_projection.weight" {
			proj[i] = bf[x.name]
		}
	}
	dirs["projections bf16, rest f32"] = writeModelDir(t, cfg, proj, 0)

	for name, dir := range dirs {
		for _, opts := range []core.Options{
			{}, {Weights: "f16"}, {Device: "reference"}, {Device: "cpu", Weights: "f16", Towers: core.ImageTower},
			{Weights: "f16", Towers: core.TextTower}, {Weights: "f16", Towers: core.ImageTower},
		} {
			id, err := Identify(dir, opts)
			if err != nil {
				t.Fatalf("%s %+v: %v", name, opts, err)
			}
			b, err := Load(dir, opts)
			if err != nil {
				t.Fatalf("%s %+v: load: %v", name, opts, err)
			}
			info := b.Info()
			b.Close()
			if d := SameModel(id, info); d != "" || id.WeightsHash == "" {
				t.Errorf("%s %+v: Identify differs from Load: %s", name, opts, d)
			}
			if id.LogitScale != info.LogitScale {
				t.Errorf("%s %+v: logit scale %v, Load says %v", name, opts, id.LogitScale, info.LogitScale)
			}
		}
	}
	// A folder Load refuses (a misshapen tensor) is refused by Identify.
	bad := hfTensors(hf.RandomModel(cfg, 5, core.F32, core.BothTowers, 1))
	for i := range bad {
		if bad[i].name == "vision_model.encoder.layers.1.mlp.fc2.weight" {
			bad[i].shape = []int{bad[i].shape[1], bad[i].shape[0]}
		}
	}
	if _, err := Identify(writeModelDir(t, cfg, bad, 0), core.Options{}); !errors.Is(err, core.ErrBadModel) || !strings.Contains(err.Error(), "fc2") {
		t.Errorf("misshapen tensor: %v", err)
	}
	if _, err := Identify(dirs["f32"], core.Options{Device: "npu"}); !errors.Is(err, ErrNotIdentifiable) {
		t.Errorf("npu: %v", err)
	}
	if _, err := Identify(t.TempDir(), core.Options{}); !errors.Is(err, core.ErrNoModel) {
		t.Errorf("empty folder: %v", err)
	}
	if _, err := Identify(dirs["f32"], core.Options{Weights: "bf16"}); err == nil {
		t.Error("Weights bf16 accepted")
	}
	bdir := filepath.Join(t.TempDir(), "bundle")
	if err := npu.ExportTinyBundle(dirs["f32"], bdir); err != nil {
		t.Fatal(err)
	}
	if _, err := Identify(bdir, core.Options{}); !errors.Is(err, ErrNotIdentifiable) {
		t.Errorf("bundle: %v", err)
	}
	// SameModel names what differs.
	a := core.Info{Name: "x", WeightsHash: "h1", Dim: 8}
	b := a
	b.WeightsHash, b.Device = "h2", "cpu"
	if d := SameModel(a, b); d != "weights hash h2, not h1, device cpu, not " {
		t.Errorf("SameModel = %q", d)
	}
}

// TestArchOfFixture pins the text an index records of a model's
// configuration (Info.Arch): a change to its wording would make every
// index that recorded it refuse the same model.
func TestArchOfFixture(t *testing.T) {
	info, err := Identify(fixtures.TinyModel(t), core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "image gelu eps 1e-05 heads 4; text gelu eps 1e-05 heads 4 eos 49407"
	if info.Arch != want {
		t.Errorf("Arch = %q, want %q", info.Arch, want)
	}
}
