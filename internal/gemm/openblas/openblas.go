// Package openblas loads the system's OpenBLAS (or another CBLAS libblas) at
// run time through purego, without cgo, and exposes its cblas_sgemm. It is
// a leaf: package gemm links it only where it may serve as the GEMM (builds
// without our assembly) and in its tests and benchmarks, so the amd64
// binaries do not carry a dynamic loader.
package openblas

import "errors"

// ErrNotFound is returned when no library with cblas_sgemm can be opened.
var ErrNotFound = errors.New("no system BLAS library found")

// CBLAS enum values.
const (
	RowMajor = 101
	NoTrans  = 111
	Trans    = 112
)

// Lib is a loaded CBLAS library. Safe for concurrent use (as safe as the
// library itself; OpenBLAS serialises its own thread pool).
type Lib struct {
	path       string
	sgemm      func(order, transA, transB, m, n, k int32, alpha float32, a *float32, lda int32, b *float32, ldb int32, beta float32, c *float32, ldc int32)
	setThreads func(n int32) // nil when the library has no thread control
}

// Path returns the file name the library was opened by.
func (l *Lib) Path() string { return l.path }

// SetThreads sets the library's thread count (process-wide in OpenBLAS); it
// does nothing for libraries without openblas_set_num_threads.
func (l *Lib) SetThreads(n int) {
	if l.setThreads != nil && n > 0 {
		l.setThreads(int32(n))
	}
}

// Sgemm calls cblas_sgemm with the CBLAS arguments unchanged. The caller
// guarantees the pointers cover the shapes: the library does not check.
func (l *Lib) Sgemm(order, transA, transB, m, n, k int32, alpha float32, a *float32, lda int32, b *float32, ldb int32, beta float32, c *float32, ldc int32) {
	l.sgemm(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
