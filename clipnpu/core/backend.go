// Package core holds what every part of the model runtime shares and
// nothing that runs a model: the Backend seam and its Info, Options and
// the sentinel errors, the model Config, the in-memory weights (Model,
// Tensor, views of a read-only Mapping) and the float32 reference
// primitives (Linear, LayerNorm, Activate, Parallel) that both the CPU
// engines and the NPU host code use. It imports no other clipidx package,
// so the loader (hf), the CPU engines (cpu) and the NPU path (npu) can all
// sit above it without importing one another. Package clipnpu re-exports
// what callers need.
//
// Shapes used throughout (legend, the one for all of clipnpu):
//
//	n   batch size                  D   projection dim (1024 for ViT-H/14)
//	C   3 colour channels           S   image size (224)
//	P   patch size (14)             G   grid S/P (16)
//	T   tokens of a text (77)       Tok tokens of an image G²+1 (257)
//	H   tower width (1280 / 1024)   M   MLP width (5120 / 4096)
//	nh  attention heads (16)        hd  head dim H/nh (80 / 64)
//	L   rows of a tower pass: n·Tok (image) or n·T (text)
//
// Pixels are float32 [n, C, S, S] (as preprocess produces them), token ids
// int32 [n, T] (as tokenizer produces them), embeddings float32 [n, D],
// projected and NOT L2-normalised (HF's image_embeds / text_embeds before the
// normalisation in CLIPModel.forward).
package core

import "errors"

// Backend is the one narrow seam every runtime implements: the pure-Go
// reference forward, the fast CPU path and the NPU replay.
//
// Error contract: EncodeImages and EncodeTexts return an error (never panic)
// when the input length does not match n, when n is negative, or when the
// device fails; on error the returned slice is nil. An embedding never
// depends on the other inputs of its batch. n == 0 returns an empty slice
// and no error. Backends are safe for use by one goroutine at a time.
type Backend interface {
	// EncodeImages embeds n images, pixels float32 [n, 3, S, S] → [n, D].
	EncodeImages(pixels []float32, n int) ([]float32, error)
	// EncodeTexts embeds n token sequences, ids int32 [n, T] → [n, D].
	EncodeTexts(ids []int32, n int) ([]float32, error)
	// Info describes the model and the device the backend runs on.
	Info() Info
	// Close releases weights, mappings and device handles.
	Close() error
}

// Info describes a loaded model and where it runs.
type Info struct {
	Name        string // model identity, e.g. "laion/CLIP-ViT-H-14-laion2B-s32B-b79K" or the folder name
	WeightsHash string // hex digest identifying the weights (cheap: header + size based), "" if unknown
	// Arch is Config.Arch of a Hugging Face folder: what of config.json
	// changes the vectors besides the weights; "" where unknown (bundles,
	// the NPU).
	Arch       string
	Device     string // "cpu-reference", "cpu", "npu", "cpu-emulated-npu" (a bundle on the CPU)
	DeviceNote string // free text, e.g. firmware version or "not run on hardware"
	Dim        int    // projection dim D
	ImageSize  int    // S
	Context    int    // T
	LogitScale float32
	// Weights says how the CPU holds the weight matrices: "f32
	// (memory-mapped)", "f16 (as stored)", "f16 (rounded from f32 at
	// load)", "f32 (random, in memory)"...; "" for bundles and the NPU.
	// Once the fast CPU path has packed float32 matrices for its kernel
	// (packf32.go) it adds how many, e.g. "f32 (as stored,
	// memory-mapped; 194 matrices, 2.52 GB, since packed for the float32
	// kernel)".
	Weights string
	// Rounded is the type float32 weights were rounded to at load
	// (Options.Weights "f16"), "" when they are used as stored.
	Rounded string
	// Precision is the arithmetic of the products (Options.Precision):
	// "f32" or "bf16" on the fast CPU path, "" where it does not apply
	// (the reference, bundles, the NPU: see Device).
	Precision string
	// PromptTemplate has one "{}" where the label goes; "a photo of a {}" by default.
	PromptTemplate string
	// Pass sizes the device prefers (4 images and 8 prompts on the NPU); 0 = any.
	ImageBatch, TextBatch int
}

// ErrNoDevice is returned when an NPU is requested and none is usable.
var ErrNoDevice = errors.New("clipnpu: no usable NPU device")
