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
	if IsBundle(dir) {
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
	size := int64(len(mp.data))
	n, err := headerLen(mp.data, size)
	if err != nil {
		return Info{}, fmt.Errorf("%w: %s: %v", ErrBadModel, path, err)
	}
	h, err := parseSafetensors(mp.data[:8+n], size)
	if err != nil {
		return Info{}, fmt.Errorf("%w: %s: %v", ErrBadModel, path, err)
	}
	ld := &stLoader{path: path, h: h, data: mp.data}
	ls, err := ld.vec("logit_scale", 1)
	if err != nil {
		return Info{}, err
	}
	m := &model{cfg: cfg, hash: weightsHash(h, mp.data), logitScale: float32(math.Exp(float64(ls[0])))}
	if conv != keepStored && hasF32Matrix(h, opts.Towers) {
		m.rounded, m.dtype = true, conv
		m.hash = convertedHash(m.hash, conv)
	}
	info := m.info(device)
	info.Weights = "" // how the matrices are held is known after loading
	return info, nil
}

// hasF32Matrix reports whether a weight matrix of the requested towers is
// stored as F32 (what stLoader.mat rounds; position embeddings are read as
// vectors and kept).
func hasF32Matrix(h *stHeader, towers Towers) bool {
	for name, e := range h.Tensors {
		if e.Dtype != "F32" || len(e.Shape) < 2 || strings.HasSuffix(name, "position_embedding.weight") {
			continue
		}
		image := strings.HasPrefix(name, "vision_model.") || strings.HasPrefix(name, "visual_projection.")
		text := strings.HasPrefix(name, "text_model.") || strings.HasPrefix(name, "text_projection.")
		if (image && towers.image()) || (text && towers.text()) {
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
