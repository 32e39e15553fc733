//go:build (!amd64 && !arm64) || purego

package gemm

// Accelerated reports whether products run on the assembly micro-kernel. In
// this build (purego tag, or neither amd64 nor arm64) they always run on the
// portable Go kernel.
func Accelerated() bool { return false }

// Kernel names the micro-kernel products run on.
func Kernel() string { return "portable Go (no assembly in this build)" }

func kernel(k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool) {
	kernelGo(k, a, lda, b, c, ldc, alpha, bias, accum)
}

// packPanelT packs a full transposed panel of nr columns.
func packPanelT(dst []float32, g *gemmArgs, j0, pc, kb int) {
	packTGo(dst, g, j0, nr, pc, 0, kb)
}
