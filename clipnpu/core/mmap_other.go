//go:build !unix

package core

import "os"

// CanMap: MapFile reads files whole here (it maps them on unix).
const CanMap = false

// MapFile reads the whole file into memory on systems without mmap support
// in golang.org/x/sys/unix (Windows, Plan 9, wasm).
func MapFile(path string) (*Mapping, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return &Mapping{Data: data}, nil
}

// dropPages does nothing: the mapping is a heap copy, freed as a whole.
func dropPages([]byte) {}
