//go:build amd64 && !purego

package export

import "golang.org/x/sys/cpu"

// The assembly needs AVX2 (32-bit lanes) and F16C (VCVTPS2PH, which rounds
// to nearest even as f16 does). A variable, so tests can run both paths.
var useF16C = cpu.X86.HasAVX2 && cpu.X86.HasF16C

// joinF16x8 converts n8·8 values (joinF16Go's contract) with AVX2/F16C.
//
//go:noescape
func joinF16x8(dst, hi, lo *byte, n8 int)

// joinF16 joins n stored halves into little-endian float16 (joinF16Go),
// eight at a time in assembly when the CPU has AVX2 and F16C.
func joinF16(dst, hi, lo []byte, n int) {
	if n <= 0 {
		return
	}
	_, _, _ = dst[2*n-1], hi[2*n-1], lo[2*n-1]
	k := 0
	if useF16C {
		if k = n &^ 7; k > 0 {
			joinF16x8(&dst[0], &hi[0], &lo[0], k/8)
		}
	}
	if k < n {
		joinF16Go(dst[2*k:], hi[2*k:], lo[2*k:], n-k)
	}
}
