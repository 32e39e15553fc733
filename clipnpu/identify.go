package clipnpu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/hf"
)

// ErrNotIdentifiable is returned by Identify for folders whose identity
// needs the device or the whole model: taconite bundles and Device "npu".
var ErrNotIdentifiable = errors.New("clipnpu: identity needs a full load")

// Identify returns, for a Hugging Face folder on the CPU, the fields of the
// Info that Load(dir, opts) would report that name the model and its
// inputs: Name, WeightsHash, Arch, Rounded, Dim, ImageSize, Context, LogitScale
// and Device. It reads config.json and the safetensors header and hashes
// the same samples Load does, but maps no tower, so a caller can check an
// index against the model before deciding whether it needs the model at
// all (see SameModel). Bundles and Device "npu" return ErrNotIdentifiable.
func Identify(dir string, opts Options) (Info, error) {
	if err := hf.CheckFolder(dir); err != nil {
		return Info{}, err
	}
	conv, err := hf.ParseWeights(opts.Weights)
	if err != nil {
		return Info{}, err
	}
	device := DeviceCPU
	switch opts.Device {
	case "", "auto", "cpu":
	case "reference":
		device = DeviceReference
	case "npu":
		return Info{}, ErrNotIdentifiable
	default:
		return Info{}, fmt.Errorf("clipnpu: unknown device %q (want auto, cpu, reference or npu)", opts.Device)
	}
	if IsBundle(dir) || !core.CanMap {
		// Without mmap the "mapping" is the whole file read into memory:
		// identifying would cost as much as loading.
		return Info{}, ErrNotIdentifiable
	}
	return hf.IdentifyFolder(dir, opts.Towers, conv, device)
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
	check("architecture", identified.Arch, loaded.Arch)
	check("rounding", identified.Rounded, loaded.Rounded)
	check("dim", identified.Dim, loaded.Dim)
	check("image size", identified.ImageSize, loaded.ImageSize)
	check("context", identified.Context, loaded.Context)
	check("device", identified.Device, loaded.Device)
	return strings.Join(diff, ", ")
}
