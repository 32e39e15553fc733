//go:build unix

package mmap

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Reservation is memory that grows in place up to a fixed size, outside
// the Go heap: the address space of the whole size is reserved at once
// (an anonymous mapping with no access, which costs neither memory nor
// commit charge), and Grow makes more of it readable and writable. Growing
// never moves or copies what is already there, and new memory reads as
// zero. A Reservation is not safe for concurrent use.
type Reservation struct {
	mem  []byte // the whole reservation
	open int    // bytes made readable and writable, a multiple of the page size
}

// Reserve reserves size bytes of address space.
func Reserve(size int) (*Reservation, error) {
	if size <= 0 {
		return nil, fmt.Errorf("reserve %d bytes of address space: size must be positive", size)
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("reserve %d bytes of address space: %w", size, err)
	}
	adviseHuge(mem)
	return &Reservation{mem: mem}, nil
}

// Grow returns the first n bytes of the reservation, readable and
// writable; bytes beyond what an earlier Grow returned are zero. It fails
// when n exceeds the reservation, when the reservation was freed, or when
// the system refuses the memory.
func (r *Reservation) Grow(n int) ([]byte, error) {
	if r.mem == nil {
		return nil, fmt.Errorf("grow reserved memory to %d bytes: already freed", n)
	}
	if n < 0 || n > len(r.mem) {
		return nil, fmt.Errorf("grow reserved memory to %d bytes: beyond the %d reserved", n, len(r.mem))
	}
	if n > r.open {
		page := unix.Getpagesize()
		end := min((n+page-1)/page*page, len(r.mem))
		if err := unix.Mprotect(r.mem[r.open:end], unix.PROT_READ|unix.PROT_WRITE); err != nil {
			return nil, fmt.Errorf("grow reserved memory to %d bytes: %w", n, err)
		}
		r.open = end
	}
	return r.mem[:n:n], nil
}

// Free unmaps the reservation. Slices Grow returned must not be used
// afterwards. A second Free does nothing.
func (r *Reservation) Free() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem, r.open = nil, 0
	return err
}
