//go:build (!amd64 && !arm64) || purego

package gemm

// Accelerated reports whether products run on the assembly micro-kernel. In
// this build (purego tag, or neither amd64 nor arm64) they always run on the
// portable Go kernel.
func Accelerated() bool { return false }

func kernels() []kernelOption { return []kernelOption{{goKernel, "", true}} }

func defaultKernel() kernelChoice {
	return kernelChoice{goKernel, "no assembly in this build (purego tag or an architecture without kernels)"}
}

// Features lists the SIMD features the kernels use; this build uses none.
func Features() []string { return nil }

func runKernel(kr *microKernel, k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32, bias *float32, accum bool) {
	kernelGo(k, a, lda, b, c, ldc, alpha, bias, accum)
}

func packKernelT(kr *microKernel, dst []float32, g *gemmArgs, j0, pc, kb int) int { return 0 }

func runKernelHalf(kr *microKernel, k int, a *float32, lda int, b *float32, c *float32, ldc int, alpha float32) bool {
	return false
}
