//go:build amd64 && !purego

package gemm

import "github.com/clipidx/clipidx/internal/gemm/openblas"

// The amd64 library does not link the loader; its tests and benchmarks do,
// to compare with OpenBLAS.
func init() {
	loadCBLAS = func() (cblas, error) {
		l, err := openblas.Load()
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}
