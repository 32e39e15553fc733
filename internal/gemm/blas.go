package gemm

import (
	"errors"
	"fmt"
)

// ErrNoBLAS is returned when no system BLAS library (OpenBLAS or a CBLAS
// libblas) can be loaded, or when this build does not link the loader (the
// amd64 and arm64 builds, whose own kernels need no BLAS; their tests link
// it on amd64).
var ErrNoBLAS = errors.New("system BLAS not available")

// cblas is the part of openblas.Lib that BLAS uses.
type cblas interface {
	Path() string
	SetThreads(n int)
	Sgemm(order, transA, transB, m, n, k int32, alpha float32, a *float32, lda int32, b *float32, ldb int32, beta float32, c *float32, ldc int32)
}

// loadCBLAS is openblas.Load in builds that link the loader, else nil.
var loadCBLAS func() (cblas, error)

// BLAS is a system CBLAS library loaded at run time through purego (no
// cgo): the reference the tests and benchmarks measure against. The
// forward never uses it: amd64 and arm64 run our assembly, and the loader
// works only on Linux and macOS for amd64 and arm64 (openblas.Load is a
// stub elsewhere), so other architectures run the portable Go kernel.
type BLAS struct {
	lib cblas
}

// CBLAS enum values.
const (
	cblasRowMajor = 101
	cblasNoTrans  = 111
	cblasTrans    = 112
)

// LoadBLAS opens the system's OpenBLAS (or another CBLAS libblas) once per
// process. It returns an error wrapping ErrNoBLAS when none is installed or
// this build does not link the loader.
func LoadBLAS() (*BLAS, error) {
	if loadCBLAS == nil {
		return nil, errNoBLAS("not linked into this build (amd64 and arm64 run their own kernels)")
	}
	l, err := loadCBLAS()
	if err != nil {
		return nil, errNoBLAS(err.Error())
	}
	return &BLAS{lib: l}, nil
}

// Path returns the file name of the loaded library.
func (b *BLAS) Path() string { return b.lib.Path() }

// SetThreads sets the library's thread count (a process-wide setting of
// OpenBLAS); it does nothing for libraries without openblas_set_num_threads.
func (b *BLAS) SetThreads(n int) { b.lib.SetThreads(n) }

// Sgemm is MatMul through cblas_sgemm, with the same arguments and
// preconditions (it panics on short slices rather than letting the library
// read out of bounds).
func (b *BLAS) Sgemm(c []float32, ldc int, a []float32, lda int, bm []float32, ldb int, m, n, k int, transB bool, alpha float32) {
	g := matMulArgs(c, ldc, a, lda, bm, ldb, m, n, k, transB, alpha)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		fillBias(&g, 0, m, 0, n)
		return
	}
	tb := int32(cblasNoTrans)
	if transB {
		tb = cblasTrans
	}
	b.lib.Sgemm(cblasRowMajor, cblasNoTrans, tb, int32(m), int32(n), int32(k), alpha,
		&a[0], int32(lda), &bm[0], int32(ldb), 0, &c[0], int32(ldc))
}

// UseSystemBLAS makes every later product of the pool (and of its workers)
// run through the system BLAS instead of our kernels, with the library's
// thread count set to Threads(). 16-bit weights are widened a block of rows
// at a time into a buffer owned by the pool. It returns an error wrapping
// ErrNoBLAS when no library loads; the pool is then unchanged.
func (p *Pool) UseSystemBLAS() error {
	b, err := LoadBLAS()
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b.SetThreads(len(p.workers))
	for _, w := range p.workers {
		w.sys = &sysBLAS{lib: b}
	}
	return nil
}

// sysBLAS is a worker's bridge to the system library.
type sysBLAS struct {
	lib   *BLAS
	widen []float32 // widened rows of a 16-bit weight matrix
}

// wideElems bounds how many weight rows are widened per cblas_sgemm call.
const wideElems = 1 << 18

func (w *Worker) sysGemm(g *gemmArgs) {
	s := w.sys
	if g.m == 0 || g.n == 0 {
		return
	}
	if g.k == 0 {
		fillBias(g, 0, g.m, 0, g.n)
		return
	}
	beta := float32(0)
	if g.bias != nil {
		fillBias(g, 0, g.m, 0, g.n)
		beta = 1
	}
	call := func(b *float32, ldb int, transB bool, j0, n int) {
		tb := int32(cblasNoTrans)
		if transB {
			tb = cblasTrans
		}
		s.lib.lib.Sgemm(cblasRowMajor, cblasNoTrans, tb, int32(g.m), int32(n), int32(g.k), g.alpha,
			&g.a[0], int32(g.lda), b, int32(ldb), beta, &g.c[j0], int32(g.ldc))
	}
	switch g.kind {
	case bF32N:
		call(&g.b32[0], g.ldb, false, 0, g.n)
	case bF32T:
		call(&g.b32[0], g.ldb, true, 0, g.n)
	default:
		rows := max(1, min(g.n, wideElems/g.k))
		if len(s.widen) < rows*g.k {
			s.widen = make([]float32, rows*g.k)
		}
		dt := F16
		if g.kind == bBF16T {
			dt = BF16
		}
		for j0 := 0; j0 < g.n; j0 += rows {
			nn := min(rows, g.n-j0)
			for j := 0; j < nn; j++ {
				row := s.widen[j*g.k : (j+1)*g.k]
				if g.kind == bPacked { // packed by a pool of our own kernels
					for p := range row {
						row[p] = g.pk.at(j0+j, p)
					}
					continue
				}
				Widen(row, g.b16[(j0+j)*g.ldb:(j0+j)*g.ldb+g.k], dt)
			}
			call(&s.widen[0], g.k, true, j0, nn)
		}
	}
}

func errNoBLAS(detail string) error {
	return fmt.Errorf("load BLAS: %s: %w", detail, ErrNoBLAS)
}
