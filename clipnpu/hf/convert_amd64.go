//go:build amd64 && !purego

package hf

import "golang.org/x/sys/cpu"

// hasF16C gates the VCVTPS2PH rounding; a variable so tests can run the
// portable loop on the same machine.
var hasF16C = cpu.X86.HasAVX2 && cpu.X86.HasF16C

//go:noescape
func roundF16F16C(dst *uint16, src *float32, n int) (overflow bool)

// roundF16Fast rounds the first len(src) &^ 7 elements in hardware,
// exactly as f32ToF16 does, and returns how many it did (0 without F16C)
// and whether a finite one overflowed to infinity.
func roundF16Fast(dst []uint16, src []float32) (int, bool) {
	n := len(src) &^ 7
	if !hasF16C || n == 0 {
		return 0, false
	}
	_ = dst[n-1]
	return n, roundF16F16C(&dst[0], &src[0], n)
}
