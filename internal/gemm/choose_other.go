//go:build !amd64 || purego

package gemm

import "runtime"

// cpuID names the processor for the kernel choice; without CPUID the
// architecture and Features are all there is.
func cpuID() string { return runtime.GOOS + "/" + runtime.GOARCH }
