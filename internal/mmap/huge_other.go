//go:build unix && !linux

package mmap

// adviseHuge does nothing here (transparent huge pages are Linux's).
func adviseHuge([]byte) {}
