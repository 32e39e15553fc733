//go:build amd64 && !purego

package search

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernel (AVX2 widening + FMA).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotHiAVX2 is dotHiGeneric for n a multiple of 8 (kernel_amd64.s).
//
//go:noescape
func dotHiAVX2(hi *byte, q *float32, n int) float32

// dotHi is Σ q[i]·hi[i] over len(q) bfloat16 values in hi.
func dotHi(hi []byte, q []float32) float32 {
	n := len(q)
	hi = hi[:2*n]
	if !useAVX2 || n < 8 {
		return dotHiGeneric(hi, q)
	}
	m := n &^ 7
	s := dotHiAVX2(&hi[0], &q[0], m)
	if m < n {
		s += dotHiGeneric(hi[2*m:], q[m:])
	}
	return s
}
