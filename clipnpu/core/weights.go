package core

// This file defines the in-memory model every CPU forward reads: the
// configuration plus read-only views of the weights. The reference forward
// (ref.go) and the fast CPU path (cpu_fast*.go, through the newFastCPU hook)
// share it.
//
// Contract for code that reads a *model:
//   - Weights are READ-ONLY. Large matrices are views into a read-only
//     memory mapping of model.safetensors: writing to them faults.
//   - A tower that was not requested (Options.Towers) is nil; never touch it.
//   - Matrices keep the checkpoint's dtype: dtF32 values in tensor.f32,
//     dtF16/dtBF16 raw bits in tensor.u16, widened on the fly with
//     f16ToF32 / bf16ToF32 (or tensor.rowInto). Every matrix is 2-D
//     [rows, cols] in nn.Linear layout [out, in], row-major.
//   - Small vectors (biases, LayerNorm weights, class token, position
//     embeddings) are always []float32 (widened copies when the checkpoint
//     is 16-bit, since they are small).
//   - The model owns the mapping; model.close releases it. A Backend built
//     on a model closes it in its own Close.

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Dtype is the storage type of a weight matrix.
type Dtype uint8

const (
	F32  Dtype = iota // IEEE float32
	F16               // IEEE half precision, raw bits in tensor.u16
	BF16              // bfloat16 (top half of a float32), raw bits in tensor.u16
)

func (d Dtype) String() string {
	switch d {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	}
	return "unknown"
}

// Tensor is a read-only 2-D weight matrix [rows, cols], row-major.
// Exactly one of f32 (dtype dtF32) and u16 (dtF16, dtBF16) is set, with
// rows·cols elements.
type Tensor struct {
	Name       string // HF name, for error messages
	Rows, Cols int
	Dtype      Dtype
	F32        []float32
	U16        []uint16
}

// RowInto returns row i as float32: the view itself for dtF32 (no copy;
// do not write to it), else the row widened into buf (len >= cols).
func (t *Tensor) RowInto(i int, buf []float32) []float32 {
	lo := i * t.Cols
	switch t.Dtype {
	case F32:
		return t.F32[lo : lo+t.Cols]
	case F16:
		for j, h := range t.U16[lo : lo+t.Cols] {
			buf[j] = F16ToF32(h)
		}
	default:
		for j, h := range t.U16[lo : lo+t.Cols] {
			buf[j] = BF16ToF32(h)
		}
	}
	return buf[:t.Cols]
}

// LayerWeights is one pre-LN transformer encoder layer (HF CLIPEncoderLayer).
// H is the tower width, M its MLP width.
type LayerWeights struct {
	LN1W, LN1B []float32 // layer_norm1 [H]
	Q, K, V, O Tensor    // self_attn.{q,k,v,out}_proj.weight [H, H]
	QB, KB, VB []float32 // their biases [H]
	OB         []float32 // out_proj.bias [H]
	LN2W, LN2B []float32 // layer_norm2 [H]
	FC1        Tensor    // mlp.fc1.weight [M, H]
	FC1B       []float32 // [M]
	FC2        Tensor    // mlp.fc2.weight [H, M]
	FC2B       []float32 // [H]
}

// VisionWeights is the image tower. Tok = Grid²+1 tokens, H = Vision.Hidden,
// P = patch, D = projection dim.
type VisionWeights struct {
	// Patch is the conv weight [H, 3, P, P] viewed as a matrix [H, 3·P·P];
	// its columns run (channel, ky, kx), so a Patch flattened the same way
	// times Patchᵀ is the convolution (stride P, no bias).
	Patch        Tensor
	Cls          []float32 // embeddings.class_embedding [H]
	Pos          []float32 // embeddings.position_embedding.weight [Tok, H]
	PreW, PreB   []float32 // pre_layrnorm (sic, HF's spelling) [H]
	Layers       []LayerWeights
	PostW, PostB []float32 // post_layernorm [H], applied to the class token only
	Proj         Tensor    // visual_projection.weight [D, H], no bias
}

// TextWeights is the text tower. T = context (77), H = Text.Hidden.
type TextWeights struct {
	Tok            Tensor    // embeddings.token_embedding.weight [Vocab, H]
	Pos            []float32 // embeddings.position_embedding.weight [T, H]
	Layers         []LayerWeights
	FinalW, FinalB []float32 // final_layer_norm [H]
	Proj           Tensor    // text_projection.weight [D, H], no bias
}

// Model is a loaded CLIP: its config, the towers that were requested, and
// what Info reports.
type Model struct {
	Cfg        Config
	Vision     *VisionWeights // nil unless the image tower was loaded
	Text       *TextWeights   // nil unless the text tower was loaded
	LogitScale float32        // exp(logit_scale): Logits multiplies cosines by it
	Hash       string         // Info.WeightsHash
	Dtype      Dtype          // dtype of the matrices
	Rounded    bool           // float32 matrices were rounded to dtype at load (Options.Weights)
	Mapping    *Mapping       // nil for random models
	// Source is the weights file as the filesystem saw it at load (its
	// size, modification time and inode), "" for weights made in memory.
	// Work kept across starts (the packed weights) is keyed by it too:
	// Hash samples the file and misses a change between its samples.
	Source string
}

// Describe describes the model for a backend running on device.
func (m *Model) Describe(device string) Info {
	return Info{
		Name:           m.Cfg.Name,
		WeightsHash:    m.Hash,
		Arch:           m.Cfg.Arch(),
		Device:         device,
		Dim:            m.Cfg.ProjectionDim,
		ImageSize:      m.Cfg.Vision.ImageSize,
		Context:        m.Cfg.Text.Context,
		LogitScale:     m.LogitScale,
		PromptTemplate: DefaultPromptTemplate,
		Weights:        m.weightsNote(),
		Rounded:        m.roundedTo(),
	}
}

// roundedTo is Info.Rounded.
func (m *Model) roundedTo() string {
	if m.Rounded {
		return m.Dtype.String()
	}
	return ""
}

// weightsNote is Info.Weights.
func (m *Model) weightsNote() string {
	switch {
	case m.Rounded:
		return m.Dtype.String() + " (rounded from f32 at load)"
	case m.Mapping == nil:
		return m.Dtype.String() + " (random, in memory)"
	case m.Mapping.unmap == nil:
		return m.Dtype.String() + " (as stored, read into memory)"
	case m.Dtype == F32:
		return "f32 (as stored, memory-mapped)"
	}
	return m.Dtype.String() + " (as stored, memory-mapped)"
}

// Close releases the mapping; the model must not be used afterwards.
func (m *Model) Close() error {
	m.Vision, m.Text = nil, nil
	if m.Mapping == nil {
		return nil
	}
	err := m.Mapping.Close()
	m.Mapping = nil
	return err
}

// DefaultPromptTemplate turns a label into a zero-shot prompt when the
// model does not name its own.
const DefaultPromptTemplate = "a photo of a {}"

// Mapping is a read-only file image: an mmap on unix, a heap copy elsewhere.
type Mapping struct {
	Data  []byte
	unmap func() error // nil when there is nothing to release
}

// Release tells the system that the pages wholly inside b (a sub-slice of
// m.data) are not needed now, so they leave the process's resident memory;
// reading them again faults them back in from the file. A no-op where the
// mapping is a heap copy.
func (m *Mapping) Release(b []byte) {
	if m != nil && m.unmap != nil && len(b) > 0 {
		dropPages(b)
	}
}

// Releasable reports whether Release lets pages of m go (a mapping, not a
// file read into memory).
func (m *Mapping) Releasable() bool { return m != nil && m.unmap != nil }

// Holds reports whether b, non-empty, lies inside m's data (a tensor viewed
// in place, not a decoded copy).
func (m *Mapping) Holds(b []byte) bool {
	if m == nil || len(b) == 0 || len(m.Data) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(&m.Data[0]))
	p := uintptr(unsafe.Pointer(&b[0]))
	return p >= lo && p-lo+uintptr(len(b)) <= uintptr(len(m.Data))
}

func (m *Mapping) Close() error {
	if m == nil || m.unmap == nil {
		return nil
	}
	err := m.unmap()
	m.unmap, m.Data = nil, nil
	return err
}

// LittleEndian is true on hosts where a float32 view of little-endian file
// bytes needs no conversion.
var LittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// F32View returns b as []float32 without copying when b is 4-byte aligned
// on a little-endian host, else a decoded copy.
func F32View(b []byte) []float32 {
	n := len(b) / 4
	if n == 0 {
		return []float32{}
	}
	if LittleEndian && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// U16View is f32View for 16-bit elements.
func U16View(b []byte) []uint16 {
	n := len(b) / 2
	if n == 0 {
		return []uint16{}
	}
	if LittleEndian && uintptr(unsafe.Pointer(&b[0]))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}

// F16ToF32 widens an IEEE half (exact).
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch exp {
	case 0: // zero or subnormal: mant · 2^-24
		f := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(math.Float32bits(f) | sign)
	case 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// BF16ToF32 widens a bfloat16 (exact).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToF16 rounds to the nearest half, ties to even; overflow gives ±inf.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	if b&0x7fffffff > 0x7f800000 {
		return sign | 0x7e00 // NaN
	}
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	if exp >= 0x1f {
		return sign | 0x7c00
	}
	if exp <= 0 { // subnormal half (or zero)
		shift := uint32(14 - exp)
		if shift >= 32 {
			return sign
		}
		m := mant | 0x800000
		r := m >> shift
		rem, half := m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // a carry into the exponent is correct, up to inf
	}
	return sign | uint16(r)
}

// F32ToBF16 rounds to the nearest bfloat16, ties to even.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40 // quiet NaN
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
