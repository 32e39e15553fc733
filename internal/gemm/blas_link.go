//go:build !amd64 || purego

package gemm

import "github.com/clipidx/clipidx/internal/gemm/openblas"

// Builds without the assembly link the loader, so that Pool.UseSystemBLAS
// can replace the portable Go kernel.
func init() { loadCBLAS = loadOpenBLAS }

func loadOpenBLAS() (cblas, error) {
	l, err := openblas.Load()
	if err != nil {
		return nil, err
	}
	return l, nil
}
