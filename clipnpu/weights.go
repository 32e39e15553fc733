package clipnpu

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

// dtype is the storage type of a weight matrix.
type dtype uint8

const (
	dtF32  dtype = iota // IEEE float32
	dtF16               // IEEE half precision, raw bits in tensor.u16
	dtBF16              // bfloat16 (top half of a float32), raw bits in tensor.u16
)

func (d dtype) String() string {
	switch d {
	case dtF32:
		return "f32"
	case dtF16:
		return "f16"
	case dtBF16:
		return "bf16"
	}
	return "unknown"
}

// tensor is a read-only 2-D weight matrix [rows, cols], row-major.
// Exactly one of f32 (dtype dtF32) and u16 (dtF16, dtBF16) is set, with
// rows·cols elements.
type tensor struct {
	name       string // HF name, for error messages
	rows, cols int
	dtype      dtype
	f32        []float32
	u16        []uint16
}

// rowInto returns row i as float32: the view itself for dtF32 (no copy;
// do not write to it), else the row widened into buf (len >= cols).
func (t *tensor) rowInto(i int, buf []float32) []float32 {
	lo := i * t.cols
	switch t.dtype {
	case dtF32:
		return t.f32[lo : lo+t.cols]
	case dtF16:
		for j, h := range t.u16[lo : lo+t.cols] {
			buf[j] = f16ToF32(h)
		}
	default:
		for j, h := range t.u16[lo : lo+t.cols] {
			buf[j] = bf16ToF32(h)
		}
	}
	return buf[:t.cols]
}

// layerWeights is one pre-LN transformer encoder layer (HF CLIPEncoderLayer).
// H is the tower width, M its MLP width.
type layerWeights struct {
	ln1W, ln1B []float32 // layer_norm1 [H]
	q, k, v, o tensor    // self_attn.{q,k,v,out}_proj.weight [H, H]
	qB, kB, vB []float32 // their biases [H]
	oB         []float32 // out_proj.bias [H]
	ln2W, ln2B []float32 // layer_norm2 [H]
	fc1        tensor    // mlp.fc1.weight [M, H]
	fc1B       []float32 // [M]
	fc2        tensor    // mlp.fc2.weight [H, M]
	fc2B       []float32 // [H]
}

// visionWeights is the image tower. Tok = Grid²+1 tokens, H = Vision.Hidden,
// P = patch, D = projection dim.
type visionWeights struct {
	// patch is the conv weight [H, 3, P, P] viewed as a matrix [H, 3·P·P];
	// its columns run (channel, ky, kx), so a patch flattened the same way
	// times patchᵀ is the convolution (stride P, no bias).
	patch        tensor
	cls          []float32 // embeddings.class_embedding [H]
	pos          []float32 // embeddings.position_embedding.weight [Tok, H]
	preW, preB   []float32 // pre_layrnorm (sic, HF's spelling) [H]
	layers       []layerWeights
	postW, postB []float32 // post_layernorm [H], applied to the class token only
	proj         tensor    // visual_projection.weight [D, H], no bias
}

// textWeights is the text tower. T = context (77), H = Text.Hidden.
type textWeights struct {
	tok            tensor    // embeddings.token_embedding.weight [Vocab, H]
	pos            []float32 // embeddings.position_embedding.weight [T, H]
	layers         []layerWeights
	finalW, finalB []float32 // final_layer_norm [H]
	proj           tensor    // text_projection.weight [D, H], no bias
}

// model is a loaded CLIP: its config, the towers that were requested, and
// what Info reports.
type model struct {
	cfg        Config
	vision     *visionWeights // nil unless the image tower was loaded
	text       *textWeights   // nil unless the text tower was loaded
	logitScale float32        // exp(logit_scale): Logits multiplies cosines by it
	hash       string         // Info.WeightsHash
	dtype      dtype          // dtype of the matrices
	rounded    bool           // float32 matrices were rounded to dtype at load (Options.Weights)
	mapping    *mapping       // nil for random models
}

// info describes the model for a backend running on device.
func (m *model) info(device string) Info {
	return Info{
		Name:           m.cfg.Name,
		WeightsHash:    m.hash,
		Device:         device,
		Dim:            m.cfg.ProjectionDim,
		ImageSize:      m.cfg.Vision.ImageSize,
		Context:        m.cfg.Text.Context,
		LogitScale:     m.logitScale,
		PromptTemplate: DefaultPromptTemplate,
		Weights:        m.weightsNote(),
		Rounded:        m.roundedTo(),
	}
}

// roundedTo is Info.Rounded.
func (m *model) roundedTo() string {
	if m.rounded {
		return m.dtype.String()
	}
	return ""
}

// weightsNote is Info.Weights.
func (m *model) weightsNote() string {
	switch {
	case m.rounded:
		return m.dtype.String() + " (rounded from f32 at load)"
	case m.mapping == nil:
		return m.dtype.String() + " (random, in memory)"
	case m.mapping.unmap == nil:
		return m.dtype.String() + " (as stored, read into memory)"
	case m.dtype == dtF32:
		return "f32 (as stored, memory-mapped)"
	}
	return m.dtype.String() + " (as stored, memory-mapped)"
}

// close releases the mapping; the model must not be used afterwards.
func (m *model) close() error {
	m.vision, m.text = nil, nil
	if m.mapping == nil {
		return nil
	}
	err := m.mapping.close()
	m.mapping = nil
	return err
}

// DefaultPromptTemplate turns a label into a zero-shot prompt when the
// model does not name its own.
const DefaultPromptTemplate = "a photo of a {}"

// mapping is a read-only file image: an mmap on unix, a heap copy elsewhere.
type mapping struct {
	data  []byte
	unmap func() error // nil when there is nothing to release
}

// release tells the system that the pages wholly inside b (a sub-slice of
// m.data) are not needed now, so they leave the process's resident memory;
// reading them again faults them back in from the file. A no-op where the
// mapping is a heap copy.
func (m *mapping) release(b []byte) {
	if m != nil && m.unmap != nil && len(b) > 0 {
		dropPages(b)
	}
}

func (m *mapping) close() error {
	if m == nil || m.unmap == nil {
		return nil
	}
	err := m.unmap()
	m.unmap, m.data = nil, nil
	return err
}

// littleEndian is true on hosts where a float32 view of little-endian file
// bytes needs no conversion.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// f32View returns b as []float32 without copying when b is 4-byte aligned
// on a little-endian host, else a decoded copy.
func f32View(b []byte) []float32 {
	n := len(b) / 4
	if n == 0 {
		return []float32{}
	}
	if littleEndian && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// u16View is f32View for 16-bit elements.
func u16View(b []byte) []uint16 {
	n := len(b) / 2
	if n == 0 {
		return []uint16{}
	}
	if littleEndian && uintptr(unsafe.Pointer(&b[0]))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}

// f16ToF32 widens an IEEE half (exact).
func f16ToF32(h uint16) float32 {
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

// bf16ToF32 widens a bfloat16 (exact).
func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// f32ToF16 rounds to the nearest half, ties to even; overflow gives ±inf.
func f32ToF16(f float32) uint16 {
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

// f32ToBF16 rounds to the nearest bfloat16, ties to even.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40 // quiet NaN
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
