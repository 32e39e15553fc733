//go:build !linux

package mmap

// Populate does nothing here: pages fault in as they are read (see the
// Linux version).
func Populate([]byte) {}
