package search

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// dotHiGeneric is Σ q[i]·hi[i] where hi holds len(q) bfloat16 values
// (little-endian u16, the upper halves of float32s). Four lanes are widened
// from one 64-bit load by shifts and masks. It is the reference for the
// assembly in kernel_amd64.s and the path everywhere else.
func dotHiGeneric(hi []byte, q []float32) float32 {
	n := len(q)
	hi = hi[:2*n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		b := hi[2*i : 2*i+16]
		qq := q[i : i+8]
		w := binary.LittleEndian.Uint64(b)
		x := binary.LittleEndian.Uint64(b[8:])
		a, c := uint32(w), uint32(w>>32)
		d, e := uint32(x), uint32(x>>32)
		s0 += math.Float32frombits(a<<16) * qq[0]
		s1 += math.Float32frombits(a&0xffff0000) * qq[1]
		s2 += math.Float32frombits(c<<16) * qq[2]
		s3 += math.Float32frombits(c&0xffff0000) * qq[3]
		s4 += math.Float32frombits(d<<16) * qq[4]
		s5 += math.Float32frombits(d&0xffff0000) * qq[5]
		s6 += math.Float32frombits(e<<16) * qq[6]
		s7 += math.Float32frombits(e&0xffff0000) * qq[7]
	}
	for ; i < n; i++ {
		s0 += math.Float32frombits(uint32(binary.LittleEndian.Uint16(hi[2*i:]))<<16) * q[i]
	}
	return ((s0 + s4) + (s1 + s5)) + ((s2 + s6) + (s3 + s7))
}

// dot32 is the exact float32 inner product used for every reported score;
// an exhaustive scan with it is the reference the fast path must match.
func dot32(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		aa, bb := a[i:i+8], b[i:i+8]
		s0 += aa[0] * bb[0]
		s1 += aa[1] * bb[1]
		s2 += aa[2] * bb[2]
		s3 += aa[3] * bb[3]
		s4 += aa[4] * bb[4]
		s5 += aa[5] * bb[5]
		s6 += aa[6] * bb[6]
		s7 += aa[7] * bb[7]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s4) + (s1 + s5)) + ((s2 + s6) + (s3 + s7))
}

// errorBound bounds |dotHi - dot32| for unit stored vectors and a query of
// norm qn in dimension dim, for every kernel:
//   - the rounding of each stored component to bfloat16 (relative 2⁻⁸, so
//     at most 2⁻⁸·Σ|q||v| ≤ 2⁻⁸·qn by Cauchy–Schwarz);
//   - the VDPBF16PS kernel carries the query as two bfloat16 halves,
//     qh + ql, which leave at most 2⁻¹⁶·|q| per component (another
//     2⁻¹⁶·qn, with 1% for the products of the halves);
//   - the float32 accumulation error of both sums: each ≤ (dim/8+4)·2⁻²⁴·qn,
//     the longest chain of rounded additions any product goes through (the
//     Go kernel has 8 lanes; the assembly has 32 or more, so shorter chains);
//   - VDPBF16PS flushes subnormal inputs and results to zero: under 2⁻¹²⁶
//     each, for at most 4·dim operations, far below the float32 rounding
//     but counted (dim·2⁻¹²⁰) so that the bound stays a bound.
//
// The sum has 1% margin. Search keeps every candidate within twice this of
// the k-th best 16-bit score for the exact re-rank.
func errorBound(qn float64, dim int) float64 {
	return qn*(1.0/256+1.01*0x1p-16+2*float64(dim/8+4)*0x1p-24)*1.01 + float64(dim)*0x1p-120
}

// kernelKind names a scan kernel, slowest first.
type kernelKind int

const (
	kernelGo     kernelKind = iota // dotHiGeneric, the reference
	kernelAVX2                     // AVX2 + FMA, four rows at a time (dotHiRowsAVX2)
	kernelAVX512                   // AVX-512 widening + FMA, four rows at a time
	kernelBF16                     // AVX512_BF16 VDPBF16PS, four rows at a time
)

func (k kernelKind) String() string {
	return [...]string{"Go", "AVX2+FMA", "AVX-512", "AVX512_BF16 (VDPBF16PS)"}[k]
}

// hiQuery is a query prepared once for scoring many rows of bfloat16
// vectors with the kernel chosen when it was made.
type hiQuery struct {
	q      []float32
	kernel kernelKind
	qh, ql []uint16  // kernelBF16: q ≈ qh + ql, zero-padded to a multiple of 32
	qp     []float32 // kernelAVX512: q in permuteQuery's order; kernelAVX2: permuteQuery16's
}

func newHiQuery(q []float32) *hiQuery { return newHiQueryOn(q, kernel) }

// newHiQueryOn is newHiQuery on kernel k.
func newHiQueryOn(q []float32, k kernelKind) *hiQuery {
	h := &hiQuery{q: q, kernel: k}
	switch h.kernel {
	case kernelBF16:
		h.qh, h.ql = splitBF16(q)
	case kernelAVX512:
		h.qp = permuteQuery(q)
	case kernelAVX2:
		h.qp = permuteQuery16(q)
	}
	return h
}

// permuteQuery lays q out for the AVX-512 kernel, which reads 32 bfloat16
// as 16 dwords and widens the even elements (low halves) apart from the
// odd ones (high halves): each block of 32 becomes its 16 even elements,
// then its 16 odd ones. Zero-padded to a multiple of 32.
func permuteQuery(q []float32) []float32 {
	qp := make([]float32, (len(q)+31)&^31)
	for i, v := range q {
		b := i &^ 31
		qp[b+(i&1)*16+(i&31)/2] = v
	}
	return qp
}

// permuteQuery16 is permuteQuery for the AVX2 kernel, which reads 16
// bfloat16 as 8 dwords: each block of 16 becomes its 8 even elements, then
// its 8 odd ones. Zero-padded to a multiple of 32.
func permuteQuery16(q []float32) []float32 {
	qp := make([]float32, (len(q)+31)&^31)
	for i, v := range q {
		qp[i&^15+(i&1)*8+(i&15)/2] = v
	}
	return qp
}

// splitBF16 writes finite x as qh + ql, both bfloat16 rounded to nearest
// even: qh = bf16(x), ql = bf16(x - qh) (x - qh is exact in float32), so
// |x - qh - ql| ≤ 2⁻¹⁶·|x|. Both are zero-padded to a multiple of 32.
func splitBF16(x []float32) (qh, ql []uint16) {
	np := (len(x) + 31) &^ 31
	buf := make([]uint16, 2*np)
	qh, ql = buf[:np:np], buf[np:]
	for i, v := range x {
		h := roundBF16(v)
		qh[i] = h
		ql[i] = roundBF16(v - math.Float32frombits(uint32(h)<<16))
	}
	return qh, ql
}

// roundBF16 rounds finite x to bfloat16, nearest even.
func roundBF16(x float32) uint16 {
	b := math.Float32bits(x)
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// Kernel names the scan kernel this CPU runs, for `clipidx info`.
func Kernel() string { return kernel.String() }

// name is the kernel's short name (ScanKernels, SetKernel).
func (k kernelKind) name() string { return [...]string{"go", "avx2", "avx512", "avx512bf16"}[k] }

// ScanKernels names the scan kernels this CPU runs, slowest first: "go",
// "avx2", "avx512", "avx512bf16".
func ScanKernels() []string {
	var names []string
	for _, k := range kernels() {
		names = append(names, k.name())
	}
	return names
}

// DefaultKernel names the kernel a scan runs unless SetKernel chose
// another (the one chosen without measuring).
func DefaultKernel() string { return defaultKernel().name() }

// SetKernel makes the named kernel (ScanKernels) the one new queries
// scan with; "" restores the default. It is meant for start-up, before
// any query, and returns an error naming the kernels this CPU runs when
// it does not run name.
func SetKernel(name string) error {
	if name == "" {
		kernel = defaultKernel()
		return nil
	}
	for _, k := range kernels() {
		if k.name() == name {
			kernel = k
			return nil
		}
	}
	return fmt.Errorf("search: scan kernel %q does not run on this CPU (it runs %s)", name, strings.Join(ScanKernels(), ", "))
}

// ScanTrial is one kernel's trial for the kernel chooser: Run scores
// Bytes bytes of stored vectors with that kernel.
type ScanTrial struct {
	Name  string
	Bytes float64
	Run   func()
}

// The trial scans trialRows vectors of 1024 dims (ViT-H/14's), 32 MiB:
// more than the L2 and most of an L3, as a collection's index is.
const trialRows, trialDim = 16384, 1024

// ScanTrials returns a trial for each assembly kernel this CPU runs (the
// Go kernel too when it is the only one). The trials share their vectors,
// made on the first Run.
func ScanTrials() []ScanTrial {
	var data []byte
	var q []float32
	out := make([]float32, trialRows)
	setup := func() {
		if data != nil {
			return
		}
		data, q = make([]byte, 2*trialRows*trialDim), make([]float32, trialDim)
		// 64 random rows repeated: the values do not change the speed.
		block := data[:64*2*trialDim]
		seed := uint32(7)
		for i := 0; i < len(block); i += 2 {
			seed = seed*1664525 + 1013904223
			h := roundBF16(float32(int32(seed)>>8) * 0x1p-28)
			block[i], block[i+1] = byte(h), byte(h>>8)
		}
		for i := len(block); i < len(data); i += copy(data[i:], block) {
		}
		for i := range q {
			q[i] = float32(i%7-3) / 64
		}
	}
	var ts []ScanTrial
	for _, k := range kernels() {
		if k == kernelGo && len(kernels()) > 1 {
			continue
		}
		ts = append(ts, ScanTrial{Name: k.name(), Bytes: float64(len(out) * 2 * trialDim), Run: func() {
			setup()
			newHiQueryOn(q, k).scoreRows(data, out)
		}})
	}
	return ts
}
