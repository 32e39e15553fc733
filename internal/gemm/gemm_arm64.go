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

// neonKernel is the [6, 16] NEON kernel with its 4-deep packers.
var neonKernel = &microKernel{
	name: "neon", impl: implNEON, mr: mr, nr: nr, kc: kc, kcPad: kcPad, mc: mcBlock, nc: ncBlock,
}

// Accelerated reports whether products run on the NEON assembly
// micro-kernel (always on arm64 hardware, which has ASIMD, unless
// SetKernel("go") was called).
func Accelerated() bool { return currentKernel().kr != goKernel }

func kernels() []kernelOption {
	return []kernelOption{{neonKernel, "ASIMD", useNEON}, {goKernel, "", true}}
}

func defaultKernel() kernelChoice {
	if useNEON {
		return kernelChoice{neonKernel, "arm64 has ASIMD"}
	}
	return kernelChoice{goKernel, "CPU lacks ASIMD"}
}

// Features lists the SIMD features the kernels use that this CPU has.
func Features() []string {
	if useNEON {
		return []string{"ASIMD"}
	}
	return nil
}

// kernelNEON is kernelGo (same contract) with the [mr, nr] = [6, 16] tile of
// C in V0–V23.
//
//go:noescape
func kernelNEON(k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool)

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

// runKernel runs kernel kr's micro-kernel (kernelGo's contract, kr's tile).
func runKernel(kr *microKernel, k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool) {
	if kr.impl == implNEON {
		kernelNEON(k, a, lda, b, c, ldc, alpha, bias, accum)
		return
	}
	kernelGo(k, a, lda, b, c, ldc, alpha, bias, accum)
}

// packKernelT packs whole groups of depths of a full transposed panel with
// kr's assembly packer and returns how many it packed.
func packKernelT(kr *microKernel, dst []float32, g *gemmArgs, j0, pc, kb int) int {
	if kr.impl == implNEON {
		return packTNEON(dst, g, j0, pc, kb)
	}
	return 0
}

// packTNEON packs whole groups of 4 depths of a 16-column panel.
func packTNEON(dst []float32, g *gemmArgs, j0, pc, kb int) int {
	groups := kb / 4
	if groups == 0 {
		return 0
	}
	off := j0*g.ldb + pc
	switch g.kind {
	case bF32T:
		packT16F32NEON(&dst[0], &g.b32[off], g.ldb, groups)
	case bF16T:
		packT16F16NEON(&dst[0], &g.b16[off], g.ldb, groups)
	case bBF16T:
		packT16BF16NEON(&dst[0], &g.b16[off], g.ldb, groups)
	default:
		return 0
	}
	return groups * 4
}

// runKernelHalf reports false: the NEON kernel has no half-width variant.
func runKernelHalf(kr *microKernel, k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32) bool {
	return false
}
