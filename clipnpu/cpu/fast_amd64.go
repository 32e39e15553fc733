//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// fastAVX2 selects the assembly row kernels; a variable so tests can compare
// both paths on one machine.
var fastAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// geluAVX2 is fastGELUGo on x[0:n], n a multiple of 8 (same polynomial,
// with fused multiply-adds).
//
//go:noescape
func geluAVX2(x *float32, n int)

// geluAVX512 is geluAVX2 on 16 lanes, n a multiple of 16, dividing by a
// reciprocal refined once (within 1e-6 of fastGELUGo, TestFastGELUPaths).
//
//go:noescape
func geluAVX512(x *float32, n int)

// fastAVX512 selects geluAVX512 (AVX-512F); a variable, as fastAVX2.
var fastAVX512 = cpu.X86.HasAVX512F

// geluConsts are the constants geluAVX2 and geluAVX512 broadcast, in this order.
var geluConsts = [...]float32{
	erfP0, erfP1, erfP2, erfP3, erfP4, erfP5,
	erfQ1, erfQ2, erfQ3, erfQ4, erfQ5,
	1, -1, 0.5, 0.70710678118654752, 4, -4,
}

// fastGELU is the exact GELU in place: sixteen lanes at a time in
// assembly (AVX-512), then eight (AVX2), the tail in Go.
func fastGELU(x []float32) {
	n := 0
	if fastAVX512 && fastAVX2 {
		n = len(x) &^ 15
		if n > 0 {
			geluAVX512(&x[0], n)
		}
	}
	if fastAVX2 {
		if m := (len(x) - n) &^ 7; m > 0 {
			geluAVX2(&x[n], m)
			n += m
		}
	}
	fastGELUGo(x[n:])
}
