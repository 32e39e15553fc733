//go:build unix

package bundle

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the first size bytes of f read-only and private. The
// mapping outlives f. If mmap fails the file is read instead.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	if int64(int(size)) != size {
		return readFile(f, size)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return readFile(f, size)
	}
	return data, func() error { return unix.Munmap(data) }, nil
}
