// Package gemm owns the matrix multiplications of the CPU forward pass: a
// register-blocked micro-kernel in Go assembly (AVX-512F or AVX2/FMA on
// amd64, chosen by measurement with Choose and overridable with SetKernel; NEON on
// arm64), a pure-Go kernel everywhere else (and under the purego build tag),
// the packing of operands into cache-sized panels (widening 16-bit weights on
// the way), a persistent worker Pool that splits each product across cores,
// and an optional bridge to the system's OpenBLAS through purego (subpackage
// openblas, linked only into builds without the assembly and into the amd64
// tests and benchmarks, which compare against it).
//
// The NEON kernel is verified against the Go kernel under qemu user
// emulation; its speed on arm64 hardware has not been measured, and the
// blocking sizes (tune.go) are tuned for amd64.
//
// Legend: a GEMM computes C[m,n] = A[m,k] · B[k,n]. A is always the float32
// activations (row-major, leading dimension lda); B is either float32 [k,n],
// float32 [n,k] read transposed, or a weight Matrix [n,k] in F32, F16 or
// BF16 (HF nn.Linear layout, y = x·wᵀ).
//
// The blocking follows the usual BLIS layering (see tune.go for the sizes):
//
//	for jc in N step nc      B block  [kc, nc]  packed per worker (L2/L3)
//	  for pc in K step kc
//	    pack B[pc:pc+kc, jc:jc+nc] into NR-wide panels (widening 16-bit)
//	    for ic in M step mc   A block  [mc, kc]  read in place (L2), or,
//	                          when lda aliases L1 sets, from a copy
//	      for jr, ir          micro-kernel: C tile [MR, NR] in registers
//
// MR and NR are the kernel's (6×16 for Go, AVX2 and NEON, 14×32 for
// AVX-512), as are the block sizes. Products on several workers are cut
// into a fixed grid of chunks (about four a worker, the last round of
// column strips in row halves), which the workers take as they free up
// (gemmSplit); each chunk runs the loops above. An A
// that must be copied is copied once per product, with a padded stride,
// by all the workers (Pool.sharedA); a single worker copies it block by
// block. LinearStack runs the products of several weight matrices that
// share x (a layer's query, key and value) as one.
package gemm

import (
	"fmt"
	"math"
)

// Dtype is the element type of a weight Matrix.
type Dtype uint8

const (
	// F32 elements live in Matrix.F32.
	F32 Dtype = iota
	// F16 elements are IEEE 754 binary16 bit patterns in Matrix.U16.
	F16
	// BF16 elements are bfloat16 bit patterns (the top half of a float32) in
	// Matrix.U16.
	BF16
)

// String returns "f32", "f16" or "bf16".
func (d Dtype) String() string {
	switch d {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("Dtype(%d)", uint8(d))
}

// Matrix is a row-major [Rows, Cols] matrix of weights. For F32 the
// elements are in F32, for F16 and BF16 they are the raw 16-bit patterns in
// U16; the other slice is ignored. Rows are densely packed (stride Cols).
// After Pool.Pack the products read a packed copy instead, and F32 and U16
// may be dropped.
type Matrix struct {
	Rows, Cols int
	Dtype      Dtype
	F32        []float32
	U16        []uint16

	packed *packedF32 // Pool.Pack's copy, nil until then
}

// Linear computes y[m, w.Rows] = x[m, w.Cols] · wᵀ + bias using all the
// pool's workers. bias, when not nil, has w.Rows elements. x and y are dense
// row-major and must not overlap. 16-bit weights are widened to float32 while
// packing, so w stays 16-bit in memory.
//
// Linear panics when a slice is shorter than the shapes require (a caller
// bug: the assembly must never read or write out of bounds). It must not be
// called from inside a Parallel callback; use Worker.Linear there.
func (p *Pool) Linear(y, x []float32, m int, w *Matrix, bias []float32) {
	g := linearArgs(y, x, m, w, bias)
	p.gemm(&g)
}

// LinearStrided is Linear with row strides: row i of x starts at x[i·ldx]
// (ldx ≥ w.Cols) and row i of y at y[i·ldy] (ldy ≥ w.Rows); y's elements
// between rows are not touched. A caller that keeps x at the stride
// Stride(w.Cols) spares the product a padded copy of x (see Stride).
func (p *Pool) LinearStrided(y []float32, ldy int, x []float32, ldx int, m int, w *Matrix, bias []float32) {
	g := linearArgsLD(y, ldy, x, ldx, m, w, bias)
	p.gemm(&g)
}

// Stride returns the row stride, in elements, at which the current kernel
// reads a float32 operand of k columns in place: k, or k rounded up (by
// whole cache lines, at most 1024 elements) when rows k apart would fall on
// the same L1 sets and each product would first copy the operand to such a
// stride (k = 1024, 4096 and 5120 for the AVX-512 kernel).
func Stride(k int) int {
	kr := currentKernel().kr
	if k <= 0 || directA(kr, k) {
		return max(k, 0)
	}
	if ld := paddedStride(kr, k); ld > 0 {
		return ld
	}
	return k
}

// LinearStack computes y[m, N] = x[m, k] · Wᵀ + bias, where W [N, k] is
// the matrices of ws stacked by rows (N = Σ ws[i].Rows, bias has N
// elements or is nil), without copying them: a transformer's query, key
// and value projections as one product, which keeps both cores busier
// than three products a third as wide. The matrices must share Cols and
// Dtype; up to 4 of them.
//
// When they also share Rows, a multiple of 32, the product runs as one;
// otherwise as one product per matrix into its columns of y.
func (p *Pool) LinearStack(y, x []float32, m int, ws []*Matrix, bias []float32) {
	if len(ws) == 0 || len(ws) > maxParts {
		panic(fmt.Sprintf("gemm: LinearStack of %d matrices (1 to %d)", len(ws), maxParts))
	}
	n, equal := 0, true
	for _, w := range ws {
		if w == nil {
			panic("gemm: LinearStack with nil weight matrix")
		}
		if w.Cols != ws[0].Cols || w.Dtype != ws[0].Dtype {
			panic(fmt.Sprintf("gemm: LinearStack of [%d,%d] %v and [%d,%d] %v matrices", ws[0].Rows, ws[0].Cols, ws[0].Dtype, w.Rows, w.Cols, w.Dtype))
		}
		equal = equal && w.Rows == ws[0].Rows && w.Packed() == ws[0].Packed()
		n += w.Rows
	}
	rows, k := ws[0].Rows, ws[0].Cols
	need(len(y), m, n, n, "y")
	if bias != nil && len(bias) < n {
		panic(fmt.Sprintf("gemm: LinearStack bias has %d elements, want %d", len(bias), n))
	}
	if equal && rows%32 == 0 && rows > 0 && p.workers[0].sys == nil {
		// Part 0 checks x and its own size; the others their sizes.
		g := linearArgs(y[:m*rows], x, m, ws[0], nil)
		g.c, g.ldc, g.n, g.bias, g.partRows = y, n, n, bias, rows
		for i, w := range ws {
			other := linearArgs(nil, x[:0], 0, w, nil)
			g.b32s[i], g.b16s[i], g.pks[i] = other.b32, other.b16, other.pk
		}
		g.b32, g.b16, g.pk = nil, nil, nil
		p.gemm(&g)
		return
	}
	off := 0
	for _, w := range ws {
		g := linearArgs(y, x, 0, w, nil) // checks w
		g.m, g.c, g.ldc = m, y[off:], n
		need(len(x), m, k, k, "x")
		if bias != nil {
			g.bias = bias[off : off+w.Rows]
		}
		p.gemm(&g)
		off += w.Rows
	}
}

// MatMul computes c[m,n] = alpha · a[m,k] · B with B = b[k,n] (ldb ≥ n), or,
// when transB is set, B = bᵀ where b is [n,k] (ldb ≥ k); lda ≥ k, ldc ≥ n.
// c must not overlap a or b; its columns beyond n are not touched. It serves
// the attention products (scores = q·kᵀ with transB, context = p·v without).
//
// MatMul panics when a slice is too short or a leading dimension too small
// for the shapes. It must not be called from inside a Parallel callback; use
// Worker.MatMul there.
func (p *Pool) MatMul(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k int, transB bool, alpha float32) {
	g := matMulArgs(c, ldc, a, lda, b, ldb, m, n, k, transB, alpha)
	p.gemm(&g)
}

// Linear is Pool.Linear on this worker alone (single-threaded), for use
// inside ParallelWorkers callbacks.
func (w *Worker) Linear(y, x []float32, m int, wt *Matrix, bias []float32) {
	g := linearArgs(y, x, m, wt, bias)
	w.gemmRegion(&g, 0, g.m, 0, g.n)
}

// MatMul is Pool.MatMul on this worker alone (single-threaded), for use
// inside ParallelWorkers callbacks (one attention head per call).
func (w *Worker) MatMul(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k int, transB bool, alpha float32) {
	g := matMulArgs(c, ldc, a, lda, b, ldb, m, n, k, transB, alpha)
	w.gemmRegion(&g, 0, g.m, 0, g.n)
}

// bKind says how B is stored.
type bKind uint8

const (
	bF32N   bKind = iota // float32 [k, n], row stride ldb
	bF32T                // float32 [n, k], row stride ldb (read transposed)
	bF16T                // binary16 [n, k]
	bBF16T               // bfloat16 [n, k]
	bPacked              // packed by Pool.Pack (pk)
)

// gemmArgs is one validated product c = alpha·a·B (+ bias), all strides in
// elements.
type gemmArgs struct {
	c       []float32
	ldc     int
	a       []float32
	lda     int
	b32     []float32
	b16     []uint16
	ldb     int
	kind    bKind
	m, n, k int
	alpha   float32
	bias    []float32
	pk      *packedF32   // B when kind is bPacked
	kr      *microKernel // the kernel it runs on, fixed when it starts (driver.go)

	// A stacked product (LinearStack): B's rows [i·partRows, (i+1)·partRows)
	// are row 0 on of part i (b32s or b16s), not of b32 / b16.
	partRows int
	b32s     [maxParts][]float32
	b16s     [maxParts][]uint16
	pks      [maxParts]*packedF32
}

// maxParts bounds the matrices of one LinearStack.
const maxParts = 4

func linearArgs(y, x []float32, m int, w *Matrix, bias []float32) gemmArgs {
	if w == nil {
		panic("gemm: Linear with nil weight matrix")
	}
	return linearArgsLD(y, w.Rows, x, w.Cols, m, w, bias)
}

// linearArgsLD is linearArgs with the row strides of y and x.
func linearArgsLD(y []float32, ldy int, x []float32, ldx int, m int, w *Matrix, bias []float32) gemmArgs {
	if w == nil {
		panic("gemm: Linear with nil weight matrix")
	}
	n, k := w.Rows, w.Cols
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: Linear with negative shape m=%d n=%d k=%d", m, n, k))
	}
	g := gemmArgs{c: y, ldc: ldy, a: x, lda: ldx, ldb: k, m: m, n: n, k: k, alpha: 1, bias: bias}
	switch {
	case w.packed != nil:
		g.kind, g.pk = bPacked, w.packed
	case w.Dtype == F32:
		g.kind, g.b32 = bF32T, w.F32
		need(len(w.F32), n, k, k, "weights")
	case w.Dtype == F16 || w.Dtype == BF16:
		g.kind, g.b16 = bF16T, w.U16
		if w.Dtype == BF16 {
			g.kind = bBF16T
		}
		need(len(w.U16), n, k, k, "weights")
	default:
		panic(fmt.Sprintf("gemm: Linear with unknown dtype %v", w.Dtype))
	}
	need(len(x), m, k, ldx, "x")
	need(len(y), m, n, ldy, "y")
	if bias != nil && len(bias) < n {
		panic(fmt.Sprintf("gemm: Linear bias has %d elements, want %d", len(bias), n))
	}
	return g
}

func matMulArgs(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k int, transB bool, alpha float32) gemmArgs {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: MatMul with negative shape m=%d n=%d k=%d", m, n, k))
	}
	g := gemmArgs{c: c, ldc: ldc, a: a, lda: lda, b32: b, ldb: ldb, kind: bF32N, m: m, n: n, k: k, alpha: alpha}
	if transB {
		g.kind = bF32T
		need(len(b), n, k, ldb, "b")
	} else {
		need(len(b), k, n, ldb, "b")
	}
	need(len(a), m, k, lda, "a")
	need(len(c), m, n, ldc, "c")
	return g
}

// need panics unless a [rows, cols] matrix with row stride ld fits in size
// elements and ld ≥ cols.
func need(size, rows, cols, ld int, name string) {
	if ld < cols || ld < 0 {
		panic(fmt.Sprintf("gemm: %s leading dimension %d < %d columns", name, ld, cols))
	}
	if rows == 0 || cols == 0 {
		return
	}
	if want := (rows-1)*ld + cols; size < want {
		panic(fmt.Sprintf("gemm: %s has %d elements, [%d,%d] with stride %d needs %d", name, size, rows, cols, ld, want))
	}
}

// F16ToF32 widens one IEEE 754 binary16 bit pattern exactly, including
// subnormals, infinities and NaNs (the NaN payload is kept).
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	case frac == 0: // signed zero
		return math.Float32frombits(sign)
	}
	// Subnormal: value = frac · 2⁻²⁴, normalise it.
	e := uint32(113)
	for frac&0x400 == 0 {
		frac <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
}

// BF16ToF32 widens one bfloat16 bit pattern (exact: it is the top half of a
// float32).
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// Widen converts len(src) 16-bit patterns of type dt (F16 or BF16) into dst,
// which must be at least as long.
func Widen(dst []float32, src []uint16, dt Dtype) {
	dst = dst[:len(src)]
	switch dt {
	case F16:
		for i, h := range src {
			dst[i] = F16ToF32(h)
		}
	case BF16:
		for i, h := range src {
			dst[i] = BF16ToF32(h)
		}
	default:
		panic(fmt.Sprintf("gemm: Widen of %v", dt))
	}
}
