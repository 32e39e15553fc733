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

// geluConsts are the constants geluAVX2 broadcasts, in this order.
var geluConsts = [...]float32{
	erfP0, erfP1, erfP2, erfP3, erfP4, erfP5,
	erfQ1, erfQ2, erfQ3, erfQ4, erfQ5,
	1, -1, 0.5, 0.70710678118654752, 4, -4,
}

// fastGELU is the exact GELU in place: eight lanes at a time in assembly,
// the tail in Go.
func fastGELU(x []float32) {
	n := 0
	if fastAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			geluAVX2(&x[0], n)
		}
	}
	fastGELUGo(x[n:])
}
