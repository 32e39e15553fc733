//go:build !linux

package npu

import (
	"fmt"

	"github.com/clipidx/clipidx/clipnpu/core"
)

// OpenDevice reports that this system has no NPU driver: amdxdna is Linux
// only. Bundles still run with their kernels emulated on the CPU.
func OpenDevice(dir string, opts core.Options) (core.Backend, error) {
	return nil, fmt.Errorf("the NPU is not available on this system (the amdxdna driver is Linux only): %w", core.ErrNoDevice)
}
