//go:build !amd64 && !purego

package gemm

import "github.com/clipidx/clipidx/internal/gemm/openblas"

// Architectures our assembly does not cover link the loader, so that
// Pool.UseSystemBLAS can replace the portable Go kernel there. The purego
// tag means no assembly and no dynamic loading at all (purego itself carries
// assembly and, with cgo enabled, runtime/cgo), so it links neither.
func init() { loadCBLAS = loadOpenBLAS }

func loadOpenBLAS() (cblas, error) {
	l, err := openblas.Load()
	if err != nil {
		return nil, err
	}
	return l, nil
}
