//go:build !((linux || darwin) && (amd64 || arm64))

package openblas

import "fmt"

// Load reports that loading a system BLAS is not available on this system
// (purego cannot dlopen here).
func Load() (*Lib, error) {
	return nil, fmt.Errorf("dlopen not available on this system: %w", ErrNotFound)
}
