//go:build !unix

package mmap

// Anon returns n bytes of zeroed memory: here a heap slice (see the unix
// version), which free leaves to the collector.
func Anon(n int) (b []byte, free func() error, err error) {
	return make([]byte, max(n, 0)), func() error { return nil }, nil
}
