//go:build (!amd64 && !arm64) || purego

package gemm

import "testing"

var kernelModes = []struct {
	name string
	set  func(t *testing.T)
}{
	{"go", func(t *testing.T) { useKernel(t, "go") }},
}
