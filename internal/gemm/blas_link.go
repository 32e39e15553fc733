//go:build !amd64 && !arm64 && !purego

package gemm

import "github.com/clipidx/clipidx/internal/gemm/openblas"

// Architectures our assembly does not cover (neither amd64 nor arm64) link
// the loader, so that a caller may try Pool.UseSystemBLAS there (today
// openblas.Load is a stub on those architectures: purego's dynamic loading
// is not built for them). amd64 and arm64 run their own kernels and, like the purego tag, do
// not link it into the library. The purego tag means no assembly and no
// dynamic loading at all (purego itself carries assembly and, with cgo
// enabled, runtime/cgo), so it links neither. The arm64 tests do not link
// it either: purego makes the binary dynamically linked against the arm64
// libc, which the qemu user emulation in CI does not have.
func init() { loadCBLAS = loadOpenBLAS }

func loadOpenBLAS() (cblas, error) {
	l, err := openblas.Load()
	if err != nil {
		return nil, err
	}
	return l, nil
}
