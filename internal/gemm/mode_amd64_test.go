//go:build amd64 && !purego

package gemm

import "testing"

// kernelModes runs the tests on each assembly kernel and, on the same
// machine, on the portable Go code they must agree with.
var kernelModes = []struct {
	name string
	set  func(t *testing.T)
}{
	{"avx512", func(t *testing.T) { useKernel(t, "avx512") }},
	{"asm", func(t *testing.T) { useKernel(t, "avx2") }},
	{"go", func(t *testing.T) {
		useKernel(t, "go")
		f16c := useF16C
		useF16C = false
		t.Cleanup(func() { useF16C = f16c })
	}},
}
