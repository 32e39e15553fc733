//go:build unix

package core

import (
	"fmt"
	"os"

	"unsafe"

	"golang.org/x/sys/unix"
)

// CanMap: mapFile maps files (it reads them whole on other systems).
const CanMap = true

// MapFile maps path read-only. Pages are faulted in only when a tower reads
// them, so a text-only load never reads the vision weights from disk.
func MapFile(path string) (*Mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size == 0 {
		return &Mapping{}, nil
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("map %s: %d bytes do not fit the address space", path, size)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return &Mapping{Data: data, unmap: func() error { return unix.Munmap(data) }}, nil
}

// dropPages drops the whole pages inside b from the process's resident set
// (madvise MADV_DONTNEED on a read-only file mapping: the page cache keeps
// the data, a later read faults it back in).
func dropPages(b []byte) {
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
