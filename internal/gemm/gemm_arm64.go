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

// packPanelT packs a full transposed panel of nr columns (in Go: there is no
// NEON packing yet).
func packPanelT(dst []float32, g *gemmArgs, j0, pc, kb int) {
	packTGo(dst, g, j0, nr, pc, 0, kb)
}
