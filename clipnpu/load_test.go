package clipnpu

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/clipidx/clipidx/clipnpu/hf"
	"github.com/clipidx/clipidx/clipnpu/internal/cliptest"
	"github.com/clipidx/clipidx/clipnpu/npu"
	"github.com/clipidx/clipidx/internal/fixtures"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/cpu"
)

// smallConfig is a quick shape for loader tests (odd sizes on purpose).
func smallConfig() core.Config {
	return core.Config{
		Name:          "small",
		Vision:        core.VisionConfig{Hidden: 24, Heads: 3, Layers: 2, MLP: 40, Patch: 4, ImageSize: 12, Act: "quick_gelu", LayerNormEps: 1e-5},
		Text:          core.TextConfig{Hidden: 16, Heads: 2, Layers: 2, MLP: 36, Vocab: 50, Context: 9, Act: "gelu", LayerNormEps: 1e-5, EOS: 49},
		ProjectionDim: 8,
	}
}

// stTensor is one tensor to write into a test safetensors file.
type stTensor struct {
	name  string
	dtype string
	shape []int
	data  []byte
}

// hfTensors lists a model's weights under their Hugging Face names, encoded
// as WriteRandom writes them.
func hfTensors(m *core.Model) []stTensor {
	var ts []stTensor
	for _, t := range hf.NamedTensors(m) {
		var b bytes.Buffer
		w := bufio.NewWriter(&b)
		if err := hf.WriteElems(w, &t); err != nil {
			panic(err)
		}
		w.Flush()
		dt := map[core.Dtype]string{core.F32: "F32", core.F16: "F16", core.BF16: "BF16"}[t.Dtype]
		ts = append(ts, stTensor{t.Name, dt, t.Shape, b.Bytes()})
	}
	return ts
}

// encodeSafetensors serialises tensors; pad extra spaces after the JSON
// (which can misalign the data section on purpose).
func encodeSafetensors(ts []stTensor, pad int) []byte {
	sort.Slice(ts, func(i, j int) bool { return ts[i].name < ts[j].name })
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, t := range ts {
		hdr[t.name] = map[string]any{"dtype": t.dtype, "shape": t.shape, "data_offsets": []int{len(data), len(data) + len(t.data)}}
		data = append(data, t.data...)
	}
	js, _ := json.Marshal(hdr)
	js = append(js, []byte(strings.Repeat(" ", pad))...)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	out = append(out, js...)
	return append(out, data...)
}

// hfConfigJSON renders cfg as a CLIPConfig config.json without a model
// name (so the folder names the model).
func hfConfigJSON(c core.Config) []byte {
	doc := hf.ConfigDoc(c)
	delete(doc, "_name_or_path")
	b, _ := json.MarshalIndent(doc, "", " ")
	return b
}

// writeModelDir writes cfg and ts as a model folder and returns it.
func writeModelDir(t *testing.T, cfg core.Config, ts []stTensor, pad int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), hfConfigJSON(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), encodeSafetensors(ts, pad), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testInputs makes n deterministic images and texts for cfg.
func testInputs(cfg core.Config, n int) ([]float32, []int32) { return cliptest.Inputs(cfg, n) }

// TestLoadRoundTrip saves a random model under HF names, loads it back and
// requires bit-identical embeddings: every tensor lands in the right field.
// Padding the header by 1..3 bytes misaligns the data and exercises the
// copying path of f32View.
func TestLoadRoundTrip(t *testing.T) {
	cfg := smallConfig()
	for _, c := range []struct {
		dt  core.Dtype
		pad int
	}{{core.F32, 0}, {core.F32, 1}, {core.F16, 0}, {core.BF16, 2}, {core.F16, 3}} {
		t.Run(fmt.Sprintf("%s-pad%d", c.dt, c.pad), func(t *testing.T) {
			src := hf.RandomModel(cfg, 42, c.dt, core.BothTowers, 2)
			dir := writeModelDir(t, cfg, hfTensors(src), c.pad)
			b, err := Load(dir, core.Options{Device: "reference"})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if got := b.(*cpu.RefBackend).Model().Dtype; got != c.dt {
				t.Errorf("loaded dtype %s, want %s", got, c.dt)
			}
			want := cpu.NewReference(src, 2)
			px, ids := testInputs(cfg, 2)
			for _, enc := range []struct {
				name      string
				got, want func() ([]float32, error)
			}{
				{"images", func() ([]float32, error) { return b.EncodeImages(px, 2) }, func() ([]float32, error) { return want.EncodeImages(px, 2) }},
				{"texts", func() ([]float32, error) { return b.EncodeTexts(ids, 2) }, func() ([]float32, error) { return want.EncodeTexts(ids, 2) }},
			} {
				g, err := enc.got()
				if err != nil {
					t.Fatal(err)
				}
				w, err := enc.want()
				if err != nil {
					t.Fatal(err)
				}
				for i := range w {
					if g[i] != w[i] || math.IsNaN(float64(g[i])) {
						t.Fatalf("%s[%d] = %v after save and load, %v before", enc.name, i, g[i], w[i])
					}
				}
			}
			if got, want := b.Info().LogitScale, src.LogitScale; math.Abs(float64(got-want)) > 1e-4 {
				t.Errorf("LogitScale %v, want %v", got, want)
			}
		})
	}
}

// without returns ts minus the named tensors.
func without(ts []stTensor, names ...string) []stTensor {
	var out []stTensor
	for _, t := range ts {
		drop := false
		for _, n := range names {
			if t.name == n || strings.HasPrefix(t.name, n+".") {
				drop = true
			}
		}
		if !drop {
			out = append(out, t)
		}
	}
	return out
}

func TestLoadErrors(t *testing.T) {
	cfg := smallConfig()
	good := hfTensors(hf.RandomModel(cfg, 1, core.F32, core.BothTowers, 1))
	edit := func(name string, f func(*stTensor)) []stTensor {
		out := append([]stTensor(nil), good...)
		for i := range out {
			if out[i].name == name {
				f(&out[i])
			}
		}
		return out
	}
	type setup func(t *testing.T) string
	folder := func(ts []stTensor) setup {
		return func(t *testing.T) string { return writeModelDir(t, cfg, ts, 0) }
	}
	cases := []struct {
		name  string
		setup setup
		opts  core.Options
		want  error
		msg   string // substring of the error
	}{
		{"absent folder", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, core.Options{}, core.ErrNoModel, "does not exist"},
		{"empty folder", func(t *testing.T) string { return t.TempDir() }, core.Options{}, core.ErrNoModel, "empty"},
		{"no config.json", func(t *testing.T) string {
			d := folder(good)(t)
			os.Remove(filepath.Join(d, "config.json"))
			return d
		}, core.Options{}, core.ErrBadModel, "config.json"},
		{"no model.safetensors", func(t *testing.T) string {
			d := folder(good)(t)
			os.Remove(filepath.Join(d, "model.safetensors"))
			return d
		}, core.Options{}, core.ErrBadModel, "model.safetensors is missing"},
		{"missing tensor", folder(without(good, "vision_model.post_layernorm.bias")), core.Options{}, core.ErrBadModel, "vision_model.post_layernorm.bias is missing"},
		{"misshapen tensor", folder(edit("text_model.encoder.layers.1.mlp.fc1.weight", func(s *stTensor) {
			s.shape = []int{s.shape[1], s.shape[0]}
		})), core.Options{}, core.ErrBadModel, "text_model.encoder.layers.1.mlp.fc1.weight: shape [16 36]"},
		{"unknown dtype", folder(edit("visual_projection.weight", func(s *stTensor) {
			s.dtype, s.shape = "I32", []int{s.shape[0], s.shape[1]}
		})), core.Options{}, core.ErrBadModel, "unsupported dtype I32"},
		{"truncated file", func(t *testing.T) string {
			d := folder(good)(t)
			p := filepath.Join(d, "model.safetensors")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-10], 0o644)
			return d
		}, core.Options{}, core.ErrBadModel, "truncated"},
		{"extra layer", func(t *testing.T) string {
			c := cfg
			c.Text.Layers = 1
			d := writeModelDir(t, c, good, 0)
			return d
		}, core.Options{}, core.ErrBadModel, "more text layers"},
		{"bad config", func(t *testing.T) string {
			d := folder(good)(t)
			os.WriteFile(filepath.Join(d, "config.json"), []byte(`{"vision_config": {"hidden_act": "relu"}}`), 0o644)
			return d
		}, core.Options{}, core.ErrBadModel, "relu"},
		{"unknown device", folder(good), core.Options{Device: "gpu"}, nil, "unknown device"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.setup(t)
			b, err := Load(dir, c.opts)
			if err == nil {
				b.Close()
				t.Fatal("Load succeeded")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not mention %q", err, c.msg)
			}
		})
	}
}

// TestTowers: a text-only load succeeds on a file without any vision tensor
// (so it never looks at them), and refuses images; and vice versa.
func TestTowers(t *testing.T) {
	cfg := smallConfig()
	all := hfTensors(hf.RandomModel(cfg, 3, core.F32, core.BothTowers, 1))
	px, ids := testInputs(cfg, 1)
	for _, c := range []struct {
		name   string
		towers core.Towers
		drop   []string
	}{
		{"text only", core.TextTower, []string{"vision_model", "visual_projection.weight"}},
		{"image only", core.ImageTower, []string{"text_model", "text_projection.weight"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeModelDir(t, cfg, without(all, c.drop...), 0)
			if b, err := Load(dir, core.Options{Device: "reference"}); err == nil {
				b.Close()
				t.Fatal("loading both towers from a one-tower file succeeded")
			}
			b, err := Load(dir, core.Options{Device: "reference", Towers: c.towers})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			_, ierr := b.EncodeImages(px, 1)
			_, terr := b.EncodeTexts(ids, 1)
			if c.towers == core.TextTower && (!errors.Is(ierr, core.ErrNoTower) || terr != nil) {
				t.Errorf("text-only: images err %v, texts err %v", ierr, terr)
			}
			if c.towers == core.ImageTower && (!errors.Is(terr, core.ErrNoTower) || ierr != nil) {
				t.Errorf("image-only: images err %v, texts err %v", ierr, terr)
			}
		})
	}
}

// TestBundleAndDevices checks the routing of Load: bundles go to the NPU
// hook, "npu" never falls back to the CPU; without a usable NPU a bundle
// goes to the emulated replay (which refuses this placeholder bundle as a
// bad model; npu_load_test.go runs a real one).
func TestBundleAndDevices(t *testing.T) {
	var openNPU npu.Opener
	cfg := smallConfig()
	hf := writeModelDir(t, cfg, hfTensors(hf.RandomModel(cfg, 1, core.F32, core.BothTowers, 1)), 0)
	bundle := t.TempDir()
	for _, f := range []string{"manifest.txt", "tensors.txt", "tensors.bin"} {
		os.WriteFile(filepath.Join(bundle, f), []byte("version 1\n"), 0o644)
	}
	if !IsBundle(bundle) || IsBundle(hf) {
		t.Fatalf("IsBundle(bundle) = %v, IsBundle(hf) = %v", IsBundle(bundle), IsBundle(hf))
	}

	openNPU = nil
	for _, c := range []struct {
		dir, device, msg string
		want             error
	}{
		{bundle, "cpu", "tensors.txt", core.ErrBadModel},
		{bundle, "", "tensors.txt", core.ErrBadModel},
		{bundle, "npu", "no NPU support", core.ErrNoDevice},
		{hf, "npu", "no NPU support", core.ErrNoDevice},
	} {
		_, err := load(c.dir, core.Options{Device: c.device}, openNPU)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Load(%s, %q) with no NPU hook: %v; want %v mentioning %q", filepath.Base(c.dir), c.device, err, c.want, c.msg)
		}
	}

	var called []string
	openNPU = func(dir string, opts core.Options) (core.Backend, error) {
		called = append(called, opts.Device)
		return nil, fmt.Errorf("test device: %w", core.ErrNoDevice)
	}
	if _, err := load(bundle, core.Options{}, openNPU); !errors.Is(err, core.ErrBadModel) {
		t.Errorf("bundle with a failing NPU: %v; want the emulated replay's ErrBadModel", err)
	}
	if _, err := load(hf, core.Options{Device: "npu"}, openNPU); !errors.Is(err, core.ErrNoDevice) {
		t.Errorf("--device npu with a failing NPU: %v", err)
	}
	b, err := load(hf, core.Options{Device: "auto"}, openNPU)
	if err != nil {
		t.Fatalf("auto on an HF folder: %v", err)
	}
	b.Close()
	if len(called) != 2 {
		t.Errorf("NPU hook called for devices %q, want twice (bundle, npu) and not for auto on an HF folder", called)
	}
}

// TestInfo checks what Info reports for the committed fixtures.
func TestInfo(t *testing.T) {
	var hashes []string
	for _, c := range []struct {
		dir, name string
		dim, size int
		ctx       int
		scale     float64
	}{
		{"testdata/qgelu-f16", "clipidx-testdata/qgelu-f16", 24, 32, 16, 42},
		{"testdata/legacy-eos-bf16", "clipidx-testdata/legacy-eos-bf16", 16, 48, 20, 100},
	} {
		b, err := Load(c.dir, core.Options{Device: "reference", Towers: core.TextTower})
		if err != nil {
			t.Fatal(err)
		}
		in := b.Info()
		b.Close()
		if in.Name != c.name || in.Dim != c.dim || in.ImageSize != c.size || in.Context != c.ctx ||
			math.Abs(float64(in.LogitScale)-c.scale) > 1e-3 || in.Device != core.DeviceReference ||
			in.PromptTemplate != "a photo of a {}" || len(in.WeightsHash) != 64 {
			t.Errorf("%s: Info %+v", c.dir, in)
		}
		hashes = append(hashes, in.WeightsHash)
	}
	if hashes[0] == hashes[1] {
		t.Error("two different models have the same WeightsHash")
	}
	// Without _name_or_path the folder's name is the model's.
	cfg := smallConfig()
	dir := filepath.Join(t.TempDir(), "my-model")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "config.json"), hfConfigJSON(cfg), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), encodeSafetensors(hfTensors(hf.RandomModel(cfg, 1, core.F32, core.BothTowers, 1)), 0), 0o644)
	b, err := Load(dir, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := b.Info().Name; got != "my-model" {
		t.Errorf("Name = %q, want the folder name my-model", got)
	}
}

// TestLoadWithoutWeights: a Hugging Face folder that also holds a
// bundle's reference records (as a checked folder does) and has lost its
// model.safetensors says that file is missing (it was taken for a
// bundle, and the error spoke of the manifest's embed_dim).
func TestLoadWithoutWeights(t *testing.T) {
	src := fixtures.TinyModel(t)
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || e.Name() == "model.safetensors" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !IsBundle(dir) {
		t.Skip("the fixture holds no bundle files: nothing to tell apart")
	}
	_, err = Load(dir, Options{Device: "cpu"})
	want := filepath.Join(dir, "model.safetensors") + " is missing"
	if !errors.Is(err, core.ErrBadModel) || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load without model.safetensors: %v, want ErrBadModel saying %q", err, want)
	}
}
