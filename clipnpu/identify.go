package clipnpu

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotIdentifiable is returned by Identify for folders whose identity
// needs the device or the whole model: taconite bundles and Device "npu".
var ErrNotIdentifiable = errors.New("clipnpu: identity needs a full load")

// Identify returns, for a Hugging Face folder on the CPU, the fields of the
// Info that Load(dir, opts) would report that name the model and its
// inputs: Name, WeightsHash, Rounded, Dim, ImageSize, Context, LogitScale
// and Device. It reads config.json and the safetensors header and hashes
// the same samples Load does, but maps no tower, so a caller can check an
// index against the model before deciding whether it needs the model at
// all (see SameModel). Bundles and Device "npu" return ErrNotIdentifiable.
func Identify(dir string, opts Options) (Info, error) {
	if err := checkFolder(dir); err != nil {
		return Info{}, err
	}
	conv, err := parseWeights(opts.Weights)
	if err != nil {
		return Info{}, err
	}
	device := DeviceCPU
	switch opts.Device {
	case "", "auto", "cpu":
		if newFastCPU == nil {
			device = DeviceReference
		}
	case "reference":
		device = DeviceReference
	case "npu":
		return Info{}, ErrNotIdentifiable
	default:
		return Info{}, fmt.Errorf("clipnpu: unknown device %q (want auto, cpu, reference or npu)", opts.Device)
	}
	if IsBundle(dir) || !canMap {
		// Without mmap the "mapping" is the whole file read into memory:
		// identifying would cost as much as loading.
		return Info{}, ErrNotIdentifiable
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		return Info{}, err
	}
	path := filepath.Join(dir, "model.safetensors")
	mp, err := mapFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Info{}, fmt.Errorf("%w: %s is missing", ErrBadModel, path)
	}
	if err != nil {
		return Info{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer mp.close()
	h, err := mappedHeader(path, mp.data)
	if err != nil {
		return Info{}, err
	}
	ld := &stLoader{path: path, h: h, data: mp.data}
	ls, err := ld.vec("logit_scale", 1)
	if err != nil {
		return Info{}, err
	}
	m := &model{cfg: cfg, hash: weightsHash(h, mp.data), logitScale: float32(math.Exp(float64(ls[0])))}
	// The towers as Load resolves them (names, shapes, dtypes), as views of
	// the mapping that read no tensor data: a folder Load would refuse is
	// refused here too, and the rounding is decided on the same matrices.
	if opts.Towers.image() {
		if m.vision, err = ld.vision(cfg); err != nil {
			return Info{}, err
		}
	}
	if opts.Towers.text() {
		if m.text, err = ld.textTower(cfg); err != nil {
			return Info{}, err
		}
	}
	if conv != keepStored && m.hasF32Matrix() {
		m.rounded, m.dtype = true, conv
		m.hash = convertedHash(m.hash, conv)
	}
	m.vision, m.text = nil, nil // views of mp, unmapped on return
	info := m.info(device)
	info.Weights = "" // how the matrices are held is known after loading
	return info, nil
}

// hasF32Matrix reports whether a weight matrix of the loaded towers is
// F32: what stLoader.mat rounds under Options.Weights "f16".
func (m *model) hasF32Matrix() bool {
	var ts []*tensor
	layers := func(ls []layerWeights) {
		for i := range ls {
			l := &ls[i]
			ts = append(ts, &l.q, &l.k, &l.v, &l.o, &l.fc1, &l.fc2)
		}
	}
	if v := m.vision; v != nil {
		ts = append(ts, &v.patch, &v.proj)
		layers(v.layers)
	}
	if t := m.text; t != nil {
		ts = append(ts, &t.tok, &t.proj)
		layers(t.layers)
	}
	for _, t := range ts {
		if t.dtype == dtF32 {
			return true
		}
	}
	return false
}

// SameModel reports how a loaded backend's Info differs from what Identify
// said, or "" when they agree on every field Identify fills.
func SameModel(identified, loaded Info) string {
	var diff []string
	check := func(what string, a, b any) {
		if a != b {
			diff = append(diff, fmt.Sprintf("%s %v, not %v", what, b, a))
		}
	}
	check("name", identified.Name, loaded.Name)
	check("weights hash", identified.WeightsHash, loaded.WeightsHash)
	check("rounding", identified.Rounded, loaded.Rounded)
	check("dim", identified.Dim, loaded.Dim)
	check("image size", identified.ImageSize, loaded.ImageSize)
	check("context", identified.Context, loaded.Context)
	check("device", identified.Device, loaded.Device)
	return strings.Join(diff, ", ")
}
