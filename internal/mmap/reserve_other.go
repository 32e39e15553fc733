//go:build !unix

package mmap

import (
	"errors"
	"fmt"
)

// Reservation is address space that grows in place; only unix systems
// have it here (see the unix version).
type Reservation struct{}

// errNoReserve is Reserve's error where address space cannot be set aside.
var errNoReserve = errors.New("not supported on this system")

// Reserve fails here: callers keep memory on the heap instead.
func Reserve(size int) (*Reservation, error) {
	return nil, fmt.Errorf("reserve %d bytes of address space: %w", size, errNoReserve)
}

// Grow fails: there is no Reservation to grow.
func (r *Reservation) Grow(n int) ([]byte, error) {
	return nil, fmt.Errorf("grow reserved memory to %d bytes: %w", n, errNoReserve)
}

// Free does nothing.
func (r *Reservation) Free() error { return nil }
