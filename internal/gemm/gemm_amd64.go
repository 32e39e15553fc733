//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// The assembly needs AVX2 and FMA (and F16C to widen binary16 while
// packing); without them the portable Go code runs. Variables, not
// constants, so the tests can exercise both paths on one machine.
var (
	useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	useF16C = cpu.X86.HasAVX2 && cpu.X86.HasF16C
)

// Accelerated reports whether products run on the AVX2/FMA assembly
// micro-kernel (false on CPUs without AVX2 and FMA).
func Accelerated() bool { return useAVX2 }

// Kernel names the micro-kernel products run on.
func Kernel() string {
	if useAVX2 {
		return "AVX2 + FMA assembly"
	}
	return "portable Go (this CPU lacks AVX2 or FMA)"
}

// kernelAVX2 is kernelGo (same contract) with the [mr, nr] = [6, 16] tile of
// C in Y0–Y11.
//
//go:noescape
func kernelAVX2(k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool)

// packT16F32 packs groups·8 columns of 16 rows of a row-major float32 matrix
// (stride ldb elements) transposed into dst[p·16+j], 8×8 blocks at a time.
//
//go:noescape
func packT16F32(dst *float32, src *float32, ldb int, groups int)

// packT16F16 is packT16F32 for binary16 sources, widened with VCVTPH2PS.
//
//go:noescape
func packT16F16(dst *float32, src *uint16, ldb int, groups int)

// packT16BF16 is packT16F32 for bfloat16 sources (zero-extend, shift by 16).
//
//go:noescape
func packT16BF16(dst *float32, src *uint16, ldb int, groups int)

func kernel(k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool) {
	if useAVX2 {
		kernelAVX2(k, a, lda, b, c, ldc, alpha, bias, accum)
		return
	}
	kernelGo(k, a, lda, b, c, ldc, alpha, bias, accum)
}

// packPanelT packs a full transposed panel of nr columns: whole groups of 8
// depths in assembly, the rest in Go.
func packPanelT(dst []float32, g *gemmArgs, j0, pc, kb int) {
	done := 0
	if groups := kb / 8; useAVX2 && groups > 0 {
		off := j0*g.ldb + pc
		switch g.kind {
		case bF32T:
			packT16F32(&dst[0], &g.b32[off], g.ldb, groups)
			done = groups * 8
		case bF16T:
			if useF16C {
				packT16F16(&dst[0], &g.b16[off], g.ldb, groups)
				done = groups * 8
			}
		case bBF16T:
			packT16BF16(&dst[0], &g.b16[off], g.ldb, groups)
			done = groups * 8
		}
	}
	packTGo(dst, g, j0, nr, pc, done, kb)
}
