//go:build unix

package mmap

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Anon returns n bytes of zeroed memory outside the Go heap, for a large
// array that lives long and is streamed over and over (packed weights):
// an anonymous private mapping, which on Linux asks for transparent huge
// pages before it is first touched (see adviseHuge). Being outside the
// heap, it neither raises the collector's heap target (with GOGC=100 the
// heap may grow to twice what is live before a collection, so gigabytes of
// weights on it would let as much garbage pile up) nor is zeroed by the
// runtime. free unmaps it; the memory must not be used afterwards.
func Anon(n int) (b []byte, free func() error, err error) {
	if n <= 0 {
		return []byte{}, func() error { return nil }, nil
	}
	b, err = unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, nil, fmt.Errorf("map %d bytes of memory: %w", n, err)
	}
	adviseHuge(b)
	return b, func() error { return unix.Munmap(b) }, nil
}
