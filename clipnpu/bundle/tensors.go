package bundle

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Dtype is a tensor element type as tensors.txt spells it.
type Dtype uint8

// The dtypes a bundle may hold, all little-endian.
const (
	F32 Dtype = iota + 1
	BF16
	U8
	I32
)

// Size returns the element size in bytes.
func (d Dtype) Size() int {
	switch d {
	case F32, I32:
		return 4
	case BF16:
		return 2
	case U8:
		return 1
	}
	return 0
}

func (d Dtype) String() string {
	switch d {
	case F32:
		return "f32"
	case BF16:
		return "bf16"
	case U8:
		return "u8"
	case I32:
		return "i32"
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// ParseDtype parses "f32", "bf16", "u8" or "i32".
func ParseDtype(s string) (Dtype, bool) {
	switch s {
	case "f32":
		return F32, true
	case "bf16":
		return BF16, true
	case "u8":
		return U8, true
	case "i32":
		return I32, true
	}
	return 0, false
}

// entry is one tensors.txt line.
type entry struct {
	name   string
	dtype  Dtype
	shape  []int
	off    int64
	nbytes int64
	line   int
}

// maxBlob bounds offsets so that off+bytes never overflows and fits an int.
const maxBlob = math.MaxInt64 / 2

// parseIndex reads tensors.txt (file names it in errors) against a blob of
// blobSize bytes: every line must have five fields, a known dtype, a shape
// whose element count times the dtype size equals the byte count, an 8-byte
// aligned offset and a range inside the blob; names are unique.
func parseIndex(file string, data []byte, blobSize int64) ([]entry, error) {
	var out []entry
	seen := map[string]int{}
	for i, text := range strings.Split(string(data), "\n") {
		text = strings.TrimSuffix(text, "\r")
		f := strings.Fields(text)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		bad := func(format string, a ...any) error {
			return &Error{File: file, Line: i + 1, Msg: fmt.Sprintf(format, a...)}
		}
		if len(f) != 5 {
			return nil, bad("want `<name> <dtype> <d0,d1,..> <offset> <bytes>`, got %d fields", len(f))
		}
		e := entry{name: f[0], line: i + 1}
		if first, dup := seen[e.name]; dup {
			return nil, bad("tensor %s defined twice (first on line %d)", e.name, first)
		}
		dt, ok := ParseDtype(f[1])
		if !ok {
			return nil, bad("tensor %s: unknown dtype %q (want f32, bf16, u8 or i32)", e.name, f[1])
		}
		e.dtype = dt
		elems := int64(1)
		for _, s := range strings.Split(f[2], ",") {
			d, err := strconv.ParseInt(s, 10, 64)
			if err != nil || d < 0 || strings.HasPrefix(s, "+") {
				return nil, bad("tensor %s: bad shape %q", e.name, f[2])
			}
			hi, lo := bits.Mul64(uint64(elems), uint64(d))
			if hi != 0 || lo > maxBlob {
				return nil, bad("tensor %s: shape %s is too large", e.name, f[2])
			}
			elems = int64(lo)
			e.shape = append(e.shape, int(d))
		}
		off, err1 := strconv.ParseInt(f[3], 10, 64)
		n, err2 := strconv.ParseInt(f[4], 10, 64)
		if err1 != nil || off < 0 || off > maxBlob || strings.HasPrefix(f[3], "+") {
			return nil, bad("tensor %s: bad offset %q", e.name, f[3])
		}
		if err2 != nil || n < 0 || n > maxBlob || strings.HasPrefix(f[4], "+") {
			return nil, bad("tensor %s: bad byte count %q", e.name, f[4])
		}
		e.off, e.nbytes = off, n
		if off%8 != 0 {
			return nil, bad("tensor %s: offset %d is not 8-byte aligned", e.name, off)
		}
		if elems > maxBlob/int64(dt.Size()) || elems*int64(dt.Size()) != n {
			return nil, bad("tensor %s: %d bytes, but shape %s of %s needs %d", e.name, n, f[2], dt, elems*int64(dt.Size()))
		}
		if off+n > blobSize {
			return nil, bad("tensor %s: bytes [%d, %d) run past the end of %s (%d bytes)", e.name, off, off+n, BlobFile, blobSize)
		}
		seen[e.name] = e.line
		out = append(out, e)
	}
	return out, nil
}

// openTensors reads tensors.txt and maps tensors.bin.
func (b *Bundle) openTensors() error {
	ipath := filepath.Join(b.Dir, IndexFile)
	bpath := filepath.Join(b.Dir, BlobFile)
	idx, err := os.ReadFile(ipath)
	if err != nil {
		return fmt.Errorf("read %s: %w", ipath, err)
	}
	f, err := os.Open(bpath)
	if err != nil {
		return fmt.Errorf("open %s: %w", bpath, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", bpath, err)
	}
	if !st.Mode().IsRegular() {
		return &Error{File: bpath, Msg: "not a regular file"}
	}
	entries, err := parseIndex(ipath, idx, st.Size())
	if err != nil {
		return err
	}
	blob, release, err := mapFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("map %s: %w", bpath, err)
	}
	b.blob, b.release = blob, release
	b.tensors = make(map[string]entry, len(entries))
	for _, e := range entries {
		b.tensors[e.name] = e
		b.names = append(b.names, e.name)
	}
	return nil
}

// Tensor is one named tensor of the bundle. Its data is a read-only view
// into the mapped tensors.bin, valid until the bundle is closed.
type Tensor struct {
	Name  string
	Dtype Dtype
	Shape []int
	data  []byte
}

// Len returns the number of elements.
func (t Tensor) Len() int { return len(t.data) / max(t.Dtype.Size(), 1) }

// Bytes returns the raw little-endian bytes: a read-only view (writing to it
// faults when the blob is memory-mapped).
func (t Tensor) Bytes() []byte { return t.data }

func (t Tensor) want(d Dtype) error {
	if t.Dtype != d {
		return fmt.Errorf("%w: tensor %s is %s, wanted %s", ErrBadBundle, t.Name, t.Dtype, d)
	}
	return nil
}

// F32 returns a float32 tensor's values, copied into a new slice.
func (t Tensor) F32() ([]float32, error) {
	if err := t.want(F32); err != nil {
		return nil, err
	}
	out := make([]float32, t.Len())
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.data[4*i:]))
	}
	return out, nil
}

// F32Row copies row `row` of a float32 tensor seen as [*, width] into dst
// without converting the rest (for picking rows out of a large table such
// as the token embedding).
func (t Tensor) F32Row(row, width int, dst []float32) error {
	if err := t.want(F32); err != nil {
		return err
	}
	if row < 0 || width <= 0 || (row+1)*width > t.Len() || len(dst) < width {
		return fmt.Errorf("tensor %s: row %d of width %d out of range (%d elements)", t.Name, row, width, t.Len())
	}
	src := t.data[4*row*width:]
	for i := 0; i < width; i++ {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
	return nil
}

// I32 returns an int32 tensor's values, copied into a new slice.
func (t Tensor) I32() ([]int32, error) {
	if err := t.want(I32); err != nil {
		return nil, err
	}
	out := make([]int32, t.Len())
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(t.data[4*i:]))
	}
	return out, nil
}

// BF16 returns a bf16 tensor's values as raw bits, copied into a new slice.
func (t Tensor) BF16() ([]uint16, error) {
	if err := t.want(BF16); err != nil {
		return nil, err
	}
	out := make([]uint16, t.Len())
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(t.data[2*i:])
	}
	return out, nil
}

// U8 returns a u8 tensor's bytes as a read-only view (packed GEMM weights
// are uploaded as they are; copying 1.2 GiB would be waste).
func (t Tensor) U8() ([]byte, error) {
	if err := t.want(U8); err != nil {
		return nil, err
	}
	return t.data, nil
}

// HasTensor reports whether the bundle holds a tensor of that name.
func (b *Bundle) HasTensor(name string) bool {
	_, ok := b.tensors[name]
	return ok
}

// TensorNames returns every tensor name in tensors.txt order.
func (b *Bundle) TensorNames() []string { return b.names }

// Tensor returns the named tensor.
func (b *Bundle) Tensor(name string) (Tensor, error) {
	e, ok := b.tensors[name]
	if !ok {
		return Tensor{}, fmt.Errorf("%w: tensor %s missing from %s", ErrBadBundle, name, filepath.Join(b.Dir, IndexFile))
	}
	if b.blob == nil && e.nbytes > 0 {
		return Tensor{}, fmt.Errorf("tensor %s: bundle %s is closed", name, b.Dir)
	}
	return Tensor{Name: name, Dtype: e.dtype, Shape: append([]int(nil), e.shape...), data: b.blob[e.off : e.off+e.nbytes : e.off+e.nbytes]}, nil
}

// TensorShaped returns the named tensor after checking its dtype and shape
// (a shape entry of -1 matches any size).
func (b *Bundle) TensorShaped(name string, d Dtype, shape ...int) (Tensor, error) {
	t, err := b.Tensor(name)
	if err != nil {
		return Tensor{}, err
	}
	ok := t.Dtype == d && len(t.Shape) == len(shape)
	for i := 0; ok && i < len(shape); i++ {
		ok = shape[i] < 0 || shape[i] == t.Shape[i]
	}
	if !ok {
		e := b.tensors[name]
		return Tensor{}, &Error{File: filepath.Join(b.Dir, IndexFile), Line: e.line,
			Msg: fmt.Sprintf("tensor %s is %s %v, wanted %s %v", name, t.Dtype, t.Shape, d, shape)}
	}
	return t, nil
}
