package search

import (
	"encoding/binary"
	"math"
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
// norm qn in dimension dim: the rounding of each component to bfloat16
// (relative 2⁻⁸, so at most 2⁻⁸·Σ|q||v| ≤ 2⁻⁸·qn by Cauchy–Schwarz) plus the
// float32 accumulation error of both sums (each ≤ (dim/8+3)·2⁻²⁴·qn with
// eight lanes; the AVX2 kernel has 32 lanes and fused multiply-adds, so its
// error is smaller), with margin.
func errorBound(qn float64, dim int) float64 {
	return qn * (1.0/256 + 2*float64(dim/8+4)*0x1p-24) * 1.01
}
