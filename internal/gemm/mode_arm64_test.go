//go:build arm64 && !purego

package gemm

import "testing"

// kernelModes runs the tests on the NEON assembly and, on the same machine,
// on the portable Go code it must agree with.
var kernelModes = []struct {
	name string
	set  func(t *testing.T)
}{
	{"neon", func(t *testing.T) { useKernel(t, "neon") }},
	{"go", func(t *testing.T) { useKernel(t, "go") }},
}
