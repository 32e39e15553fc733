package bundle

import (
	"os"

	"github.com/clipidx/clipidx/internal/mmap"
)

// mapFile maps the first size bytes of f read-only (the mapping outlives
// f); where mmap is unavailable or fails the file is read instead.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	data, unmap, err := mmap.Map(f, size)
	if err != nil {
		return mmap.Read(f, size)
	}
	return data, unmap, nil
}
