package hf

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// hasF32Matrix reports whether a weight matrix of the loaded towers is
// F32: what stLoader.mat rounds under Options.Weights "f16".
func hasF32Matrix(m *core.Model) bool {
	var ts []*core.Tensor
	layers := func(ls []core.LayerWeights) {
		for i := range ls {
			l := &ls[i]
			ts = append(ts, &l.Q, &l.K, &l.V, &l.O, &l.FC1, &l.FC2)
		}
	}
	if v := m.Vision; v != nil {
		ts = append(ts, &v.Patch, &v.Proj)
		layers(v.Layers)
	}
	if t := m.Text; t != nil {
		ts = append(ts, &t.Tok, &t.Proj)
		layers(t.Layers)
	}
	for _, t := range ts {
		if t.Dtype == core.F32 {
			return true
		}
	}
	return false
}

// IdentifyFolder is Identify for a Hugging Face folder once the device is
// known: config.json, the safetensors header and the hash samples, with the
// towers resolved as views that read no tensor data.
func IdentifyFolder(dir string, towers core.Towers, conv core.Dtype, device string) (core.Info, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return core.Info{}, err
	}
	path := filepath.Join(dir, "model.safetensors")
	mp, err := core.MapFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return core.Info{}, errMissing(path)
	}
	if err != nil {
		return core.Info{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer mp.Close()
	h, err := mappedHeader(path, mp.Data)
	if err != nil {
		return core.Info{}, err
	}
	ld := &stLoader{path: path, h: h, data: mp.Data}
	ls, err := ld.vec("logit_scale", 1)
	if err != nil {
		return core.Info{}, err
	}
	m := &core.Model{Cfg: cfg, Hash: memoWeightsHash(path, h, mp.Data), LogitScale: float32(math.Exp(float64(ls[0])))}
	// The towers as Load resolves them (names, shapes, dtypes), as views of
	// the mapping that read no tensor data: a folder Load would refuse is
	// refused here too, and the rounding is decided on the same matrices.
	if towers.Image() {
		if m.Vision, err = ld.vision(cfg); err != nil {
			return core.Info{}, err
		}
	}
	if towers.Text() {
		if m.Text, err = ld.textTower(cfg); err != nil {
			return core.Info{}, err
		}
	}
	if conv != KeepStored && hasF32Matrix(m) {
		m.Rounded, m.Dtype = true, conv
	}
	m.Vision, m.Text = nil, nil // views of mp, unmapped on return
	info := m.Describe(device)
	info.Weights = "" // how the matrices are held is known after loading
	return info, nil
}
