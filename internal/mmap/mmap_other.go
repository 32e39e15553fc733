//go:build !unix

package mmap

import "os"

// Mapped reports whether Map maps files (true) or reads them whole.
const Mapped = false

// Map reads the first size bytes of f: this system has no mmap through
// golang.org/x/sys/unix.
func Map(f *os.File, size int64) ([]byte, func() error, error) { return Read(f, size) }

// Drop does nothing: the data is a heap copy, freed as a whole.
func Drop([]byte) {}
