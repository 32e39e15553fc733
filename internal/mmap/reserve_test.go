//go:build unix

package mmap

import (
	"testing"
	"unsafe"
)

// TestReservation grows a reservation in steps that are not multiples of
// the page size and checks that it stays at one address (nothing is copied),
// that new memory reads zero and old memory keeps what was written, that it
// refuses to grow past its size or after Free, and that a second Free is
// harmless.
func TestReservation(t *testing.T) {
	const size = 64 << 20
	r, err := Reserve(size)
	if err != nil {
		t.Fatal(err)
	}
	var base *byte
	prev := 0
	for _, n := range []int{0, 1, 4095, 65536, 3<<20 + 5, 3<<20 + 5, size} {
		b, err := r.Grow(n)
		if err != nil {
			t.Fatalf("Grow(%d): %v", n, err)
		}
		if len(b) != n || cap(b) != n {
			t.Fatalf("Grow(%d) gave len %d cap %d", n, len(b), cap(b))
		}
		if n == 0 {
			continue
		}
		if base == nil {
			base = unsafe.SliceData(b)
		} else if unsafe.SliceData(b) != base {
			t.Fatalf("Grow(%d) moved the memory", n)
		}
		for i := 0; i < prev; i += 997 {
			if b[i] != byte(i%251+1) {
				t.Fatalf("Grow(%d): byte %d was %d, want %d as written before", n, i, b[i], byte(i%251+1))
			}
		}
		for i := prev; i < n; i++ {
			if b[i] != 0 {
				t.Fatalf("Grow(%d): new byte %d is %d, want 0", n, i, b[i])
			}
			b[i] = byte(i%251 + 1)
		}
		prev = n
	}
	if _, err := r.Grow(size + 1); err == nil {
		t.Error("Grow beyond the reservation succeeded")
	}
	if err := r.Free(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Grow(1); err == nil {
		t.Error("Grow after Free succeeded")
	}
	if err := r.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	if _, err := Reserve(0); err == nil {
		t.Error("Reserve(0) succeeded")
	}
}
