package clipnpu

import (
	"fmt"
	"runtime"

	"github.com/clipidx/clipidx/clipnpu/hf"
)

// NewRandom builds a model of cfg's shape with seeded random weights held in
// memory (for `clipidx bench model --random` and tests): matrices uniform
// with the scale of 1/sqrt(fan-in), embeddings ±0.02-ish, LayerNorm weights
// near 1, small biases, logit scale 100. dtype is "f32", "f16" or "bf16"
// (the matrices' storage). Only opts.Towers' towers are allocated. The same
// seed and config give the same weights on any machine and thread count.
func NewRandom(cfg Config, seed uint64, dt string, opts Options) (Backend, error) {
	if opts.Weights != "" && opts.Weights != "stored" {
		return nil, fmt.Errorf("clipnpu: random model: Options.Weights %q: the dtype argument chooses the storage", opts.Weights)
	}
	d, err := hf.RandomDtype(cfg, dt)
	if err != nil {
		return nil, err
	}
	switch opts.Device {
	case "", "auto", "cpu", "reference":
	case "npu":
		return nil, fmt.Errorf("random weights run on the CPU only: %w", ErrNoDevice)
	default:
		return nil, fmt.Errorf("clipnpu: unknown device %q (want auto, cpu, reference or npu)", opts.Device)
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	m := hf.RandomModel(cfg, seed, d, opts.Towers, threads)
	return cpuBackend(m, opts)
}
