//go:build arm64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// ASIMD (NEON) is mandatory on arm64, so the assembly always runs; the check
// is kept for symmetry with amd64, and a variable, not a constant, so the
// tests can exercise the portable Go code on the same machine.
//
// The kernel is tested under qemu user emulation; its speed on real arm64
// hardware has not been measured (the blocking sizes in tune.go are the
// amd64 ones).
var useNEON = cpu.ARM64.HasASIMD

// Accelerated reports whether products run on the NEON assembly
// micro-kernel (always on arm64 hardware, which has ASIMD).
func Accelerated() bool { return useNEON }

// Kernel names the micro-kernel products run on.
func Kernel() string {
	if useNEON {
		return "NEON assembly (verified under emulation, not measured on arm64 hardware)"
	}
	return "portable Go"
}

// kernelNEON is kernelGo (same contract) with the [mr, nr] = [6, 16] tile of
// C in V0–V23.
//
//go:noescape
func kernelNEON(k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool)

func kernel(k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool) {
	if useNEON {
		kernelNEON(k, a, lda, b, c, ldc, alpha, bias, accum)
		return
	}
	kernelGo(k, a, lda, b, c, ldc, alpha, bias, accum)
}

// packT16F32NEON packs groups·4 columns of 16 rows of a row-major float32
// matrix (stride ldb elements) transposed into dst[p·16+j], 4×4 blocks at a
// time.
//
//go:noescape
func packT16F32NEON(dst *float32, src *float32, ldb int, groups int)

// packT16F16NEON is packT16F32NEON for binary16 sources, widened with FCVTL
// (exact, subnormals included; NaNs come out quiet).
//
//go:noescape
func packT16F16NEON(dst *float32, src *uint16, ldb int, groups int)

// packT16BF16NEON is packT16F32NEON for bfloat16 sources (each becomes the
// top half of a float32).
//
//go:noescape
func packT16BF16NEON(dst *float32, src *uint16, ldb int, groups int)

// packPanelT packs a full transposed panel of nr columns: whole groups of 4
// depths in assembly, the rest in Go.
func packPanelT(dst []float32, g *gemmArgs, j0, pc, kb int) {
	done := 0
	if groups := kb / 4; useNEON && groups > 0 {
		off := j0*g.ldb + pc
		switch g.kind {
		case bF32T:
			packT16F32NEON(&dst[0], &g.b32[off], g.ldb, groups)
		case bF16T:
			packT16F16NEON(&dst[0], &g.b16[off], g.ldb, groups)
		case bBF16T:
			packT16BF16NEON(&dst[0], &g.b16[off], g.ldb, groups)
		}
		done = groups * 4
	}
	packTGo(dst, g, j0, nr, pc, done, kb)
}
