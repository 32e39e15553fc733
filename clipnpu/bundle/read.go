package bundle

import (
	"fmt"
	"io"
	"os"
)

// readFile reads size bytes of f into memory: the fallback where mmap is
// unavailable or fails.
func readFile(f *os.File, size int64) ([]byte, func() error, error) {
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%d bytes do not fit in memory on this system", size)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), data); err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
