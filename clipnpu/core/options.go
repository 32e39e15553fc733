package core

import (
	"errors"
)

// ErrNoModel is returned when the model folder does not exist or is empty.
var ErrNoModel = errors.New("clipnpu: no model")

// ErrBadModel is returned when a model folder is incomplete or malformed: a
// missing file, a missing or misshapen tensor, an unknown dtype, a truncated
// or corrupt safetensors file. The message names the file or tensor.
var ErrBadModel = errors.New("clipnpu: bad model")

// ErrNoTower is returned when a backend loaded with one tower only
// (Options.Towers) is asked to run the other.
var ErrNoTower = errors.New("clipnpu: tower not loaded")

// Towers selects which towers Load maps and checks.
type Towers uint8

func (t Towers) Image() bool { return t == BothTowers || t == ImageTower }

func (t Towers) Text() bool { return t == BothTowers || t == TextTower }

// Device names reported in Info.Device by the CPU backends.
const (
	DeviceReference = "cpu-reference"
	DeviceCPU       = "cpu"
	// DeviceEmulatedNPU is a taconite bundle replayed kernel for kernel on
	// the CPU (npu_emu.go): the bundle's bf16 and bfp16ebs8 numerics, so
	// its results are held to the NPU's bf16 bars, not float32 ones. Load
	// uses it for a bundle on Device "cpu", and on "auto" when no NPU is
	// usable; Info.DeviceNote then says why.
	DeviceEmulatedNPU = "cpu-emulated-npu"
)
const (
	BothTowers Towers = iota // the zero value: image and text
	ImageTower               // vision weights only
	TextTower                // text weights only; vision bytes are never read
)

// Options configures Load and NewRandom. The zero value picks the device
// automatically, uses every core and loads both towers.
type Options struct {
	// Device is "" or "auto" (for a taconite bundle the NPU when it can be
	// opened, else the bundle's kernels emulated on the CPU; for a Hugging
	// Face folder the CPU), "cpu" (the fast CPU path when compiled in, else
	// the reference; the emulated kernels for a bundle), "reference" (always
	// the plain reference forward; not for bundles) or "npu" (the NPU or an
	// error wrapping ErrNoDevice, never a fallback).
	Device string
	// Threads bounds the CPU goroutines; 0 means GOMAXPROCS.
	Threads int
	Towers  Towers
	// Weights is how a Hugging Face folder's float32 matrices are held:
	// "" or "stored" keeps them as stored (memory-mapped, 4 bytes a weight);
	// "f16" rounds them to binary16 at load (to nearest, ties to even) and
	// releases the mapping, halving the memory the model needs at the cost
	// of a rounding the conformance tests bound (see convert.go).
	// 16-bit checkpoints are always kept as stored. Not for bundles.
	Weights string
	// Precision is the arithmetic of the fast CPU path's products: "" or
	// "f32" (float32 throughout), or "bf16": weights packed once as
	// bfloat16, activations rounded to bfloat16 (nearest even) as they are
	// packed, products accumulated in float32, on AVX512_BF16 or AMX-BF16
	// (an error names what a CPU lacks). LayerNorm, softmax, GELU, the
	// residual stream and the attention products stay float32. Not for
	// the reference, bundles or the NPU.
	Precision string
	// PackEarly makes the fast CPU path pack its float32 weights for the
	// float32 kernel (where that kernel gains by it) at their second pass,
	// not once the passes have taken long enough to pay for the packing:
	// for a caller that knows it will run many passes, such as a benchmark
	// of the steady state. See clipnpu/cpu/packf32.go.
	PackEarly bool
	// PackCache is a folder where the fast CPU path keeps the weights it
	// packs (bf16, and float32 where the kernel gains by packing), one
	// file per model, tower, precision and kernel layout, to map them at
	// later starts instead of packing again (clipnpu/cpu/packcache.go).
	// "" packs in memory at every start. A folder that cannot be written
	// only costs the packing.
	PackCache string
}
