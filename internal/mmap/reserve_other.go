//go:build !unix

package mmap

import "fmt"

// Reservation is memory that grows up to a fixed size: here a heap slice,
// which Grow reallocates and copies when it outgrows its capacity (see the
// unix version, which grows in place).
type Reservation struct {
	mem  []byte
	size int
	free bool
}

// Reserve prepares a Reservation of size bytes.
func Reserve(size int) (*Reservation, error) {
	if size <= 0 {
		return nil, fmt.Errorf("reserve %d bytes: size must be positive", size)
	}
	return &Reservation{size: size}, nil
}

// Grow returns the first n bytes, zero beyond what an earlier Grow returned.
func (r *Reservation) Grow(n int) ([]byte, error) {
	if r.free {
		return nil, fmt.Errorf("grow reserved memory to %d bytes: already freed", n)
	}
	if n < 0 || n > r.size {
		return nil, fmt.Errorf("grow reserved memory to %d bytes: beyond the %d reserved", n, r.size)
	}
	if n > cap(r.mem) {
		grown := make([]byte, n, min(r.size, max(n, cap(r.mem)+cap(r.mem)/4)))
		copy(grown, r.mem)
		r.mem = grown
	}
	r.mem = r.mem[:max(n, len(r.mem))]
	return r.mem[:n:n], nil
}

// Free lets the collector have the memory.
func (r *Reservation) Free() error {
	r.mem, r.free = nil, true
	return nil
}
