//go:build !unix

package core

import "os"

// canMap: mapFile reads files whole here (it maps them on unix).
const canMap = false

// mapFile reads the whole file into memory on systems without mmap support
// in golang.org/x/sys/unix (Windows, Plan 9, wasm).
func mapFile(path string) (*mapping, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return &mapping{data: data}, nil
}

// dropPages does nothing: the mapping is a heap copy, freed as a whole.
func dropPages([]byte) {}
