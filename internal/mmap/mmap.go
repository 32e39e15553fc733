// Package mmap maps files read-only where the system can (unix), and reads
// them whole elsewhere: the one mapping helper of the model loaders (the
// Hugging Face safetensors file, a taconite bundle's tensors.bin). It is a
// leaf: it imports no other clipidx package.
package mmap

import (
	"fmt"
	"io"
	"os"
)

// read reads the first size bytes of f into memory.
func read(f *os.File, size int64) ([]byte, error) {
	if int64(int(size)) != size {
		return nil, fmt.Errorf("%s: %d bytes do not fit the address space", f.Name(), size)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), data); err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return data, nil
}

// Read is the fallback of Map: the first size bytes of f read into memory,
// with a release that does nothing.
func Read(f *os.File, size int64) ([]byte, func() error, error) {
	data, err := read(f, size)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
