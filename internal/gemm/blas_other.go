//go:build !((linux || darwin) && (amd64 || arm64))

package gemm

// LoadBLAS reports that loading a system BLAS is not available on this
// system (purego's dlopen is not supported here).
func LoadBLAS() (*BLAS, error) {
	return nil, errNoBLAS("not available on this system")
}
