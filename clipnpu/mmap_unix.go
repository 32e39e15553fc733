//go:build unix

package clipnpu

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps path read-only. Pages are faulted in only when a tower reads
// them, so a text-only load never reads the vision weights from disk.
func mapFile(path string) (*mapping, error) {
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
		return &mapping{}, nil
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("map %s: %d bytes do not fit the address space", path, size)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return &mapping{data: data, unmap: func() error { return unix.Munmap(data) }}, nil
}
