package clipnpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Load opens a model folder: a Hugging Face CLIP folder (config.json and
// model.safetensors), or a taconite NPU bundle (manifest.txt, tensors.txt,
// tensors.bin and no model.safetensors), which runs on the NPU or, slower,
// with its kernels emulated on the CPU (see Options.Device).
func Load(dir string, opts Options) (Backend, error) {
	if err := CheckFolder(dir); err != nil {
		return nil, err
	}
	switch opts.Device {
	case "", "auto", "cpu", "reference", "npu":
	default:
		return nil, fmt.Errorf("clipnpu: unknown device %q (want auto, cpu, reference or npu)", opts.Device)
	}
	conv, err := ParseWeights(opts.Weights)
	if err != nil {
		return nil, err
	}
	if IsBundle(dir) {
		if conv != KeepStored {
			return nil, fmt.Errorf("%s is a taconite NPU bundle: weights %q applies to Hugging Face folders only (a bundle keeps its own formats)", dir, opts.Weights)
		}
		return Route(dir, opts, OpenDevice)
	}
	if opts.Device == "npu" {
		if conv != KeepStored {
			return nil, fmt.Errorf("clipnpu: weights %q applies to the CPU (the NPU path converts the weights to its own formats)", opts.Weights)
		}
		return OpenDevice(dir, opts)
	}
	m, err := LoadModel(dir, opts.Towers, conv, opts.Threads)
	if err != nil {
		return nil, err
	}
	return cpuBackend(m, opts)
}

// cpuBackend wraps m in the fast CPU path, or the reference for device
// "reference".
func cpuBackend(m *Model, opts Options) (Backend, error) {
	if opts.Device != "reference" {
		b, err := NewFast(m, opts.Threads)
		if err != nil {
			m.Close()
			return nil, err
		}
		return b, nil
	}
	return NewReference(m, opts.Threads), nil
}

// IsBundle reports whether dir looks like a taconite bundle: its three
// bundle files and no model.safetensors (the test fixtures carry bundle-form
// reference records beside Hugging Face weights; those are HF folders).
func IsBundle(dir string) bool {
	for _, f := range []string{"manifest.txt", "tensors.txt", "tensors.bin"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	_, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	return errors.Is(err, os.ErrNotExist)
}

// CheckFolder returns ErrNoModel for an absent or empty folder.
func CheckFolder(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: folder %s does not exist", ErrNoModel, dir)
	}
	if err != nil {
		return fmt.Errorf("read model folder %s: %w", dir, err)
	}
	if len(ents) == 0 {
		return fmt.Errorf("%w: folder %s is empty", ErrNoModel, dir)
	}
	return nil
}
