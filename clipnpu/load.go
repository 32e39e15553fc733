package clipnpu

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/clipidx/clipidx/clipnpu/bundle"
	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/cpu"
	"github.com/clipidx/clipidx/clipnpu/hf"
	"github.com/clipidx/clipidx/clipnpu/npu"
	"github.com/clipidx/clipidx/internal/gemm"
	"github.com/clipidx/clipidx/internal/mmap"
)

// PacksStoredF32 reports whether a Hugging Face folder's float32 weights,
// loaded as stored with opts, get packed for the CPU's float32 kernel once
// the passes have paid for it (clipnpu/cpu/packf32.go): on the fast CPU
// path (not the reference), in float32 precision, on a kernel that gains
// by packing (AVX-512, AVX2), and where the file is mapped, so that its pages
// can be let go (not on Windows, which reads it into memory).
func PacksStoredF32(opts Options) bool {
	return opts.Device != "reference" && opts.Device != "npu" && (opts.Precision == "" || opts.Precision == "f32") &&
		gemm.PackPays() && mmap.Mapped
}

// Load opens a model folder: a Hugging Face CLIP folder (config.json and
// model.safetensors), or a taconite NPU bundle (manifest.txt, tensors.txt,
// tensors.bin and no model.safetensors), which runs on the NPU or, slower,
// with its kernels emulated on the CPU (see Options.Device).
func Load(dir string, opts Options) (Backend, error) {
	return load(dir, opts, npu.OpenDevice)
}

// loadModel is Load for the model face and check; tests watch what is
// loaded through it.
var loadModel = Load

// load is Load with the NPU opener as a parameter: npu.OpenDevice, a fake
// in tests, nil for a build without NPU support.
func load(dir string, opts Options, openNPU npu.Opener) (Backend, error) {
	if err := hf.CheckFolder(dir); err != nil {
		return nil, err
	}
	switch opts.Device {
	case "", "auto", "cpu", "reference", "npu":
	default:
		return nil, fmt.Errorf("clipnpu: unknown device %q (want auto, cpu, reference or npu)", opts.Device)
	}
	conv, err := hf.ParseWeights(opts.Weights)
	if err != nil {
		return nil, err
	}
	if err := checkPrecision(dir, opts); err != nil {
		return nil, err
	}
	if IsBundle(dir) {
		if conv != hf.KeepStored {
			return nil, fmt.Errorf("%s is a taconite NPU bundle: weights %q applies to Hugging Face folders only (a bundle keeps its own formats)", dir, opts.Weights)
		}
		b, err := npu.Route(dir, opts, openNPU)
		return b, hfWithoutWeights(dir, err)
	}
	if opts.Device == "npu" {
		if conv != hf.KeepStored {
			return nil, fmt.Errorf("clipnpu: weights %q applies to the CPU (the NPU path converts the weights to its own formats)", opts.Weights)
		}
		if openNPU == nil {
			return nil, fmt.Errorf("this build has no NPU support: %w", ErrNoDevice)
		}
		return openNPU(dir, opts)
	}
	m, err := hf.LoadModel(dir, opts.Towers, conv, opts.Threads)
	if err != nil {
		return nil, err
	}
	return cpuBackend(m, opts)
}

// cpuBackend wraps m in the fast CPU path, or the reference for device
// "reference".
func cpuBackend(m *core.Model, opts Options) (Backend, error) {
	if opts.Device != "reference" {
		b, err := cpu.NewFast(m, opts)
		if err != nil {
			m.Close()
			return nil, err
		}
		return b, nil
	}
	return cpu.NewReference(m, opts.Threads), nil
}

// hfWithoutWeights words err, a bundle's failure to load, for a folder
// that is a Hugging Face folder without its model.safetensors (which made
// it look like a bundle: it also holds a bundle's reference records, as a
// checked folder does): the missing file is what to fix.
func hfWithoutWeights(dir string, err error) error {
	if err == nil {
		return nil
	}
	if _, cerr := os.Stat(filepath.Join(dir, "config.json")); cerr != nil {
		return err
	}
	return fmt.Errorf("%w: %s is missing (the folder holds a Hugging Face config.json, and its bundle files do not load as a model: %v)",
		core.ErrBadModel, filepath.Join(dir, "model.safetensors"), err)
}

// IsBundle reports whether dir is a model that runs as a taconite bundle:
// its three bundle files and no model.safetensors.
func IsBundle(dir string) bool { return bundle.IsBundle(dir) }

// AutoDevice names the device Load picks with Device "auto": for a bundle
// the NPU when one is usable, else DeviceEmulatedNPU (its kernels on the
// CPU); for a Hugging Face folder DeviceCPU (the NPU runs only bundles).
func AutoDevice(isBundle, npuUsable bool) string {
	switch {
	case !isBundle:
		return DeviceCPU
	case npuUsable:
		return "npu"
	}
	return DeviceEmulatedNPU
}

// checkPrecision refuses a precision the chosen path does not have: bf16 is
// the fast CPU path's alone (the reference is the float32 oracle; bundles
// and the NPU keep their own numerics).
func checkPrecision(dir string, opts Options) error {
	switch opts.Precision {
	case "", "f32":
		return nil
	case "bf16":
	default:
		return fmt.Errorf("clipnpu: unknown precision %q (want f32 or bf16)", opts.Precision)
	}
	switch {
	case IsBundle(dir):
		return fmt.Errorf("%s is a taconite NPU bundle: precision bf16 applies to Hugging Face folders on the CPU (a bundle keeps its own numerics)", dir)
	case opts.Device == "reference":
		return fmt.Errorf("clipnpu: precision bf16 is for the fast CPU path; the reference forward is float32 only")
	case opts.Device == "npu":
		return fmt.Errorf("clipnpu: precision bf16 applies to the CPU (the NPU has its own numerics)")
	}
	return nil
}
