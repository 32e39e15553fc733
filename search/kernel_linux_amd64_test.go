//go:build !purego

package search

import (
	"syscall"
	"testing"
	"unsafe"
)

// TestKernelsStopAtPageEnd puts the last row and the query right before an
// unmapped page: the masked tail loads must not touch it (a fault would
// kill the test binary).
func TestKernelsStopAtPageEnd(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 4*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer syscall.Munmap(mem)
	// Pages 1 and 3 inaccessible: rows end at page 1, the query at page 3.
	if err := syscall.Mprotect(mem[page:2*page], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[3*page:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	forEachKernel(t, func(t *testing.T, k kernelKind) {
		for _, n := range []int{1, 7, 17, 33, 63, 100} {
			const rows = 5
			hi := mem[page-2*rows*n : page]
			for i := range rows * n {
				hi[2*i], hi[2*i+1] = 0x80, 0x3f // 1.0
			}
			qb := mem[3*page-4*n : 3*page]
			q := floatsAt(qb, n)
			for i := range q {
				q[i] = 0.5
			}
			out := make([]float32, rows)
			newHiQuery(q).scoreRows(hi, out)
			for r, s := range out {
				if s != float32(n)/2 {
					t.Fatalf("n=%d row %d: %g, want %g", n, r, s, float32(n)/2)
				}
			}
		}
	})
}

// floatsAt views the n·4 bytes b as float32s, in place.
func floatsAt(b []byte, n int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
}
