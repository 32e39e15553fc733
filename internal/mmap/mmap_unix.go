//go:build unix

package mmap

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mapped reports whether Map maps files (true) or reads them whole.
const Mapped = true

// Map maps the first size bytes of f read-only; the mapping outlives f.
// Pages are faulted in only when read. unmap releases the mapping.
func Map(f *os.File, size int64) (data []byte, unmap func() error, err error) {
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("map %s: %d bytes do not fit the address space", f.Name(), size)
	}
	data, err = unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	return data, func() error { return unix.Munmap(data) }, nil
}

// Drop drops the whole pages inside b, a part of a mapping made by Map,
// from the process's resident set (madvise MADV_DONTNEED on a read-only
// file mapping: the page cache keeps the data, a later read faults it back
// in). b must not be ordinary memory, such as Read's: that would be zeroed.
func Drop(b []byte) {
	if len(b) == 0 {
		return
	}
	ps := os.Getpagesize()
	head := (ps - int(uintptr(unsafe.Pointer(&b[0]))%uintptr(ps))) % ps
	if head >= len(b) {
		return
	}
	whole := (len(b) - head) / ps * ps
	if whole == 0 {
		return
	}
	_ = unix.Madvise(b[head:head+whole], unix.MADV_DONTNEED)
}
