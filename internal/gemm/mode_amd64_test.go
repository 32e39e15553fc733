//go:build amd64 && !purego

package gemm

import "testing"

// kernelModes runs the tests on the assembly and, on the same machine, on
// the portable Go code it must agree with.
var kernelModes = []struct {
	name string
	set  func(t *testing.T)
}{
	{"asm", func(t *testing.T) {
		if !useAVX2 {
			t.Skip("CPU without AVX2/FMA")
		}
	}},
	{"go", func(t *testing.T) {
		avx, f16c := useAVX2, useF16C
		useAVX2, useF16C = false, false
		t.Cleanup(func() { useAVX2, useF16C = avx, f16c })
	}},
}
