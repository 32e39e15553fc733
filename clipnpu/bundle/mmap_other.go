//go:build !unix

package bundle

import "os"

// mapFile reads the file: this system has no mmap through x/sys/unix.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	return readFile(f, size)
}
