// Package clipnpu is the model: it opens a CLIP model folder (Hugging Face
// layout or a taconite NPU bundle) and turns token ids and pixel tensors
// into projected embeddings, and, through Model, texts and image files into
// the vectors an index stores.
//
// The runtime is split by what has run where, each part in its own
// package, and this package is the only one that imports them all:
//
//	clipnpu         Load, Identify, Model (the face every command shares);
//	                Check (every stage against a bundle's reference
//	                records) and Inspect (what a model folder holds)
//	  ├─ hf         the Hugging Face loader: config.json, safetensors,
//	  │             hashing, rounding at load, random weights (no engine)
//	  ├─ cpu        the float32 engines: the plain reference forward and
//	  │             the fast path over internal/gemm (never the NPU path)
//	  ├─ npu        the NPU path: replay on the amdxdna driver (never run
//	  │             on hardware), the emulator, the test bundle exporter
//	  │   (bundle, xdna: the bundle format and the driver's ioctls)
//	  ├─ compare    the one comparison engine and its tolerances
//	  └─ core       what they share: Backend, Info, Options, errors,
//	                Config, the weights in memory, reference primitives
//
// The shape legend is core's.
package clipnpu

import (
	"github.com/clipidx/clipidx/clipnpu/core"
	"github.com/clipidx/clipidx/clipnpu/hf"
	"github.com/clipidx/clipidx/clipnpu/npu"
)

// The types callers use, defined in core.
type (
	// Backend is the one narrow seam every engine implements.
	Backend = core.Backend
	// Info describes a loaded model and where it runs.
	Info = core.Info
	// Options configures Load, Identify, NewRandom and Open.
	Options = core.Options
	// Towers selects which towers are loaded.
	Towers = core.Towers
	// Config is a CLIP model's configuration.
	Config = core.Config
	// VisionConfig is the image tower's configuration.
	VisionConfig = core.VisionConfig
	// TextConfig is the text tower's configuration.
	TextConfig = core.TextConfig
	// WeightsSummary is what InspectWeights reports.
	WeightsSummary = hf.WeightsSummary
)

// Tower selections.
const (
	BothTowers = core.BothTowers
	ImageTower = core.ImageTower
	TextTower  = core.TextTower
)

// Device names reported in Info.Device.
const (
	DeviceReference   = core.DeviceReference
	DeviceCPU         = core.DeviceCPU
	DeviceEmulatedNPU = core.DeviceEmulatedNPU
)

// DefaultPromptTemplate turns a label into a zero-shot prompt when the
// model does not name its own.
const DefaultPromptTemplate = core.DefaultPromptTemplate

// WeightsChoices lists the values Options.Weights takes, for help texts.
const WeightsChoices = hf.WeightsChoices

// Sentinel errors (see core for when each is returned).
var (
	ErrNoModel  = core.ErrNoModel
	ErrBadModel = core.ErrBadModel
	ErrNoTower  = core.ErrNoTower
	ErrNoDevice = core.ErrNoDevice
)

// ViTH14Config is laion/CLIP-ViT-H-14-laion2B-s32B-b79K's configuration.
func ViTH14Config() Config { return core.ViTH14Config() }

// ViTB32Config is openai/clip-vit-base-patch32's configuration.
func ViTB32Config() Config { return core.ViTB32Config() }

// LoadConfig reads dir/config.json.
func LoadConfig(dir string) (Config, error) { return hf.LoadConfig(dir) }

// InspectWeights summarises dir/model.safetensors from its header.
func InspectWeights(dir string) (WeightsSummary, error) { return hf.InspectWeights(dir) }

// Logits returns the CLIP logits [nImg, nTxt] of unnormalised embeddings.
func Logits(img, txt []float32, nImg, nTxt, dim int, logitScale float32) []float32 {
	return core.Logits(img, txt, nImg, nTxt, dim, logitScale)
}

// Normalize L2-normalises each row of v [n, dim] in place.
func Normalize(v []float32, dim int) { core.Normalize(v, dim) }

// ExportTinyBundle exports the Hugging Face model in src as a taconite
// bundle in dst, for tests of the bundle path (see npu.ExportTinyBundle).
func ExportTinyBundle(src, dst string) error { return npu.ExportTinyBundle(src, dst) }
