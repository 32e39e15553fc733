//go:build !linux && amd64 && !purego

package gemm

import "errors"

// amxPermit: only the Linux request for the tile data state is implemented.
func amxPermit() error {
	return errors.New("AMX is not available on this system (only Linux is supported)")
}
