package npu

import (
	"fmt"

	"github.com/clipidx/clipidx/clipnpu/bundle"
)

// The NPU replay runs over a small device interface, implemented by the real
// amdxdna driver (npu_xdna.go) and by an emulator that executes every
// kernel's semantics on the CPU (npu_emu.go), so that the schedule, the
// in-place buffer views and the host math are tested without hardware.

// npuBuffer is one device buffer with a host mapping.
type npuBuffer interface {
	// Bytes is the host mapping of the whole buffer.
	Bytes() []byte
	// Sync flushes (toDevice) or invalidates CPU caches over [off, off+size).
	Sync(off, size int, toDevice bool) error
}

// bufView is a byte range of a buffer: what a kernel argument is.
type bufView struct {
	buf       npuBuffer
	off, size int
}

func wholeBuffer(b npuBuffer) bufView { return bufView{buf: b, size: len(b.Bytes())} }

// bytes is the host mapping of the view.
func (v bufView) bytes() []byte { return v.buf.Bytes()[v.off : v.off+v.size : v.off+v.size] }

// sub is bytes [off, off+size) of the view.
func (v bufView) sub(off, size int) (bufView, error) {
	if off < 0 || size < 0 || off > v.size || size > v.size-off {
		return bufView{}, fmt.Errorf("sub-buffer [%d,+%d) outside a %d-byte view", off, size, v.size)
	}
	return bufView{buf: v.buf, off: v.off + off, size: size}, nil
}

func (v bufView) sync(toDevice bool) error { return v.buf.Sync(v.off, v.size, toDevice) }

// npuKernel runs one compiled kernel over buffer arguments.
type npuKernel interface {
	Run(args []bufView) error
}

// npuDevice allocates buffers and loads kernels.
type npuDevice interface {
	// Alloc returns a zeroed buffer of size bytes, synced to the device.
	Alloc(size int) (npuBuffer, error)
	// LoadKernel loads a bundle kernel (its xclbin context and instruction
	// stream on hardware; its semantics in the emulator).
	LoadKernel(b *bundle.Bundle, spec kernelSpec) (npuKernel, error)
	// Describe names the device for Info: device and a note.
	Describe() (device, note string)
	// Contexts is the number of hardware contexts in use by this device.
	Contexts() int
	Close() error
}

// kernelKind is what a kernel computes.
type kernelKind uint8

const (
	kindGEMM  kernelKind = iota + 1 // C = act(A·B + bias), args [A, B, C]
	kindMHA                         // attention, args [q, k, v, o]
	kindAddLN                       // y = x + d; h = LN(y), args [x, d, y, h]
)

// kernelSpec is everything known about one kernel record. The hardware
// needs only the files; the emulator needs the shapes and the semantics.
type kernelSpec struct {
	Key    string
	Kind   kernelKind
	Xclbin string // bundle-relative xclbin path
	Insts  string // bundle-relative instruction stream
	Name   string // kernel name in the xclbin (MLIR_AIE)

	// GEMM: C [M, N] = act(A [M, K] · B [K, N] + bias [N]) in bf16, B packed
	// (BBytes bytes: the bfp16ebs8 matrix, then float32 bias when present).
	M, K, N, BBytes int
	Act             string // "" or "gelu" / "quick_gelu"
	Bias            bool
	Layout          packLayout

	// MHA over q, k, v = column thirds of a [rows, 3·Dim] view, o [rows, Dim].
	Heads, Dim int
	// Vision: every query row sees keys [0, ValidKeys) of its view.
	ValidKeys int
	// Text: the view is a stack of sequences of Seq rows, causal in each.
	Seq    int
	Causal bool

	// AddLN over [rows, Dim] views, affine-free LayerNorm.
	Eps float32
}
