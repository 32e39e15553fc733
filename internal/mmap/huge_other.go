//go:build !linux

package mmap

// HugePages does nothing here (transparent huge pages are Linux's); see
// huge_linux.go.
func HugePages(b []byte) int { return 0 }
