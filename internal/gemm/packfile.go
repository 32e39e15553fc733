package gemm

import (
	"fmt"
	"unsafe"
)

// Packed weights as bytes, so that a caller can keep them in a file and
// use them again from a read-only mapping of it, without packing: the
// panels a kernel reads are the same bytes wherever they live. The bytes
// are in the machine's byte order; what they mean depends on the layout
// (PackLayout, BF16Layout), which a caller must keep beside them and
// compare before using them again.

// BF16Layout names the layout of PackedBF16's bytes. It is the same for
// every bf16 kernel (both read the VNNI pairs); it changes, and with it
// every key made from it, whenever PackBF16's layout or rounding does.
const BF16Layout = "bf16 [np/16][kp/2][16][2] np,kp%32 rne v1"

// PackLayout names the layout of the float32 panels Pool.Pack writes for
// the current kernel: the kernel, its panel width and its depth blocking.
// Panels packed under one layout are used again only under the same one.
func PackLayout() string { return layoutOf(currentKernel().kr) }

func layoutOf(kr *microKernel) string {
	return fmt.Sprintf("f32 %s nr%d kc%d v1", kr.name, kr.nr, kr.kc)
}

// Bytes returns the memory of p's packed weights (not a copy): for writing
// them out. Nil for an empty matrix.
func (p *PackedBF16) Bytes() []byte { return asBytes(p.data) }

// BF16Bytes is how many bytes PackBF16 makes of a [rows, cols] matrix.
func BF16Bytes(rows, cols int) int {
	return 2 * roundUp(max(rows, 0), bf16NR) * roundUp(max(cols, 0), bf16KAlign)
}

// PackedBF16From views b, bytes that PackedBF16.Bytes returned for a
// [rows, cols] matrix under the same BF16Layout, as that packed matrix,
// without copying: b must stay valid and unchanged as long as the result
// is used (a read-only mapping kept open). It returns an error when b's
// length or alignment does not fit the shape.
func PackedBF16From(rows, cols int, b []byte) (*PackedBF16, error) {
	if rows < 0 || cols < 0 {
		return nil, fmt.Errorf("packed bf16: negative shape [%d, %d]", rows, cols)
	}
	if want := BF16Bytes(rows, cols); len(b) != want {
		return nil, fmt.Errorf("packed bf16 [%d, %d]: %d bytes, want %d", rows, cols, len(b), want)
	}
	data, err := viewAs[uint16](b)
	if err != nil {
		return nil, fmt.Errorf("packed bf16 [%d, %d]: %w", rows, cols, err)
	}
	return &PackedBF16{Rows: rows, Cols: cols, kp: roundUp(cols, bf16KAlign), np: roundUp(rows, bf16NR), data: data}, nil
}

// PackedBytes returns the memory of w's float32 panels packed by Pool.Pack
// (not a copy), and the layout they were packed in; nil and "" when w is
// not packed.
func (w *Matrix) PackedBytes() ([]byte, string) {
	if w.packed == nil {
		return nil, ""
	}
	return asBytes(w.packed.data), layoutOf(w.packed.kr)
}

// PackedF32Bytes is how many bytes Pool.Pack makes of a [rows, cols]
// matrix on the current kernel.
func PackedF32Bytes(rows, cols int) int {
	nr := currentKernel().kr.nr
	return 4 * ((max(rows, 0) + nr - 1) / nr * nr) * max(cols, 0)
}

// UsePacked makes w's products read b, bytes that PackedBytes returned
// for a matrix of w's shape under the current PackLayout, as its packed
// panels, as if Pool.Pack had packed them: without copying, so b must
// stay valid and unchanged as long as w is used. It returns an error when
// b's length or alignment does not fit w's shape, and changes nothing then.
func (w *Matrix) UsePacked(b []byte) error {
	if w.Rows <= 0 || w.Cols <= 0 {
		return fmt.Errorf("packed f32: empty shape [%d, %d]", w.Rows, w.Cols)
	}
	if want := PackedF32Bytes(w.Rows, w.Cols); len(b) != want {
		return fmt.Errorf("packed f32 [%d, %d]: %d bytes, want %d", w.Rows, w.Cols, len(b), want)
	}
	data, err := viewAs[float32](b)
	if err != nil {
		return fmt.Errorf("packed f32 [%d, %d]: %w", w.Rows, w.Cols, err)
	}
	kr := currentKernel().kr
	w.packed = &packedF32{kr: kr, step: depthStep(kr, w.Cols), np: (w.Rows + kr.nr - 1) / kr.nr * kr.nr, data: data}
	return nil
}

// asBytes views s's elements as bytes.
func asBytes[E float32 | uint16](s []E) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// viewAs views b as elements of E; b must be aligned to E's size.
func viewAs[E float32 | uint16](b []byte) ([]E, error) {
	size := int(unsafe.Sizeof(E(0)))
	if len(b) == 0 {
		return nil, nil
	}
	if uintptr(unsafe.Pointer(&b[0]))%uintptr(size) != 0 || len(b)%size != 0 {
		return nil, fmt.Errorf("bytes not aligned to %d", size)
	}
	return unsafe.Slice((*E)(unsafe.Pointer(&b[0])), len(b)/size), nil
}
